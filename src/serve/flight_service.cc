// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/flight_service.h"

#include <arrow/flight/api.h>
#include <arrow/record_batch.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string_view>
#include <thread>
#include <vector>

#include "loader/loader_internal.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "serve/selection.h"
#include "serve/stop_signals.h"
#include "serve/stream_ledger.h"
#include "serve/stream_source.h"
#include "serve/ticket.h"
#include "transform/transform_spec.h"
#include "util/fields_json.h"
#include "util/json.h"
#include "util/thread_annotations.h"

namespace stoker {

namespace flight = arrow::flight;

namespace {

// Compares without an early exit, so the time a wrong token takes does not tell how much of
// it was right.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    diff |= static_cast<unsigned char>(i < a.size() ? a[i] : 0) ^
            static_cast<unsigned char>(i < b.size() ? b[i] : 0);
  }
  return diff == 0;
}

// A server's counters, shared with its streams.
struct ServeCounters {
  std::atomic<int64_t> streams_started{0}, streams_refused_busy{0}, streams_released_idle{0};
  std::atomic<int64_t> bad_tickets{0}, unauthenticated{0}, stream_errors{0};
  std::atomic<int64_t> batches_sent{0}, rows_sent{0}, bytes_sent{0};
};

// The streams a server has open, and a thread that releases those whose client has stopped
// asking for batches.
class StreamRegistry;

// Adapts a BatchStream to the RecordBatchReader Flight streams, and frees a stream slot
// when Flight is done with it (end of stream, or the client went away) or when the registry
// releases it for idling.
class StreamReader final : public arrow::RecordBatchReader {
 public:
  using Clock = std::chrono::steady_clock;

  StreamReader(std::unique_ptr<BatchStream> stream, std::shared_ptr<arrow::Schema> schema,
               std::shared_ptr<std::atomic<int>> active, std::shared_ptr<ServeCounters> counters,
               std::shared_ptr<StreamLedger::Entry> entry)
      : stream_(std::move(stream)),
        schema_(std::move(schema)),
        active_(std::move(active)),
        counters_(std::move(counters)),
        entry_(std::move(entry)) {}
  ~StreamReader() override {
    std::unique_ptr<BatchStream> stream;
    {
      MutexLock lock(mutex_);
      stream = std::move(stream_);
      if (!released_) active_->fetch_sub(1);
      released_ = true;
    }
    entry_->Close();
  }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }

  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    BatchStream* stream;
    {
      MutexLock lock(mutex_);
      if (released_) {
        // TimedOut, not Cancelled: pyarrow turns a Cancelled status into KeyboardInterrupt.
        return flight::MakeFlightError(
            flight::FlightStatusCode::TimedOut,
            "this stream was released after its client asked for no batch for " +
                std::to_string(idle_timeout_s_) +
                " s (stream_idle_timeout_s); open it again from the batch needed");
      }
      in_call_ = true;
      stream = stream_.get();
    }
    // Outside the lock: Next() blocks until a batch is ready, and a release waits for it.
    auto next = stream->Next();
    MutexLock lock(mutex_);
    in_call_ = false;
    last_call_end_ = Clock::now();
    if (!next.ok()) {
      counters_->stream_errors.fetch_add(1, std::memory_order_relaxed);
      return next.status();
    }
    *batch = std::move(*next);
    if (*batch) {
      counters_->batches_sent.fetch_add(1, std::memory_order_relaxed);
      counters_->rows_sent.fetch_add((*batch)->num_rows(), std::memory_order_relaxed);
      int64_t bytes = 0;
      for (const auto& column : (*batch)->columns()) {
        for (const auto& buffer : column->data()->buffers) bytes += buffer ? buffer->size() : 0;
      }
      counters_->bytes_sent.fetch_add(bytes, std::memory_order_relaxed);
      entry_->Sent((*batch)->num_rows());
    }
    return arrow::Status::OK();
  }

  // Frees the stream if its client has not asked for a batch since `deadline`; true if it
  // was released (now or earlier).
  bool ReleaseIfIdleSince(Clock::time_point deadline, int64_t timeout_s) {
    std::unique_ptr<BatchStream> stream;  // destroyed (workers joined) outside the lock
    MutexLock lock(mutex_);
    if (released_) return true;
    if (in_call_ || last_call_end_ > deadline) return false;
    entry_->Close();
    stream = std::move(stream_);
    released_ = true;
    idle_timeout_s_ = timeout_s;
    active_->fetch_sub(1);
    counters_->streams_released_idle.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

 private:
  Mutex mutex_;
  std::unique_ptr<BatchStream> stream_ GUARDED_BY(mutex_);
  bool in_call_ GUARDED_BY(mutex_) = false;
  bool released_ GUARDED_BY(mutex_) = false;
  Clock::time_point last_call_end_ GUARDED_BY(mutex_) = Clock::now();
  int64_t idle_timeout_s_ GUARDED_BY(mutex_) = 0;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<std::atomic<int>> active_;
  std::shared_ptr<ServeCounters> counters_;
  const std::shared_ptr<StreamLedger::Entry> entry_;
};

class StreamRegistry {
 public:
  explicit StreamRegistry(int64_t idle_timeout_s) : idle_timeout_s_(idle_timeout_s) {
    if (idle_timeout_s_ > 0) watcher_ = std::thread([this] { Watch(); });
  }
  ~StreamRegistry() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.NotifyAll();
    if (watcher_.joinable()) watcher_.join();
  }

  void Add(const std::shared_ptr<StreamReader>& reader) EXCLUDES(mutex_) {
    if (idle_timeout_s_ <= 0) return;
    MutexLock lock(mutex_);
    readers_.push_back(reader);
  }

 private:
  // Once a second: releases idle streams, forgets the ones Flight is done with.
  void Watch() EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    while (!stopping_) {
      wake_.WaitUntil(mutex_, std::chrono::steady_clock::now() + std::chrono::seconds(1));
      const auto deadline = StreamReader::Clock::now() - std::chrono::seconds(idle_timeout_s_);
      std::erase_if(readers_, [&](const std::weak_ptr<StreamReader>& weak) {
        auto reader = weak.lock();
        return !reader || reader->ReleaseIfIdleSince(deadline, idle_timeout_s_);
      });
    }
  }

  const int64_t idle_timeout_s_;
  Mutex mutex_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::weak_ptr<StreamReader>> readers_ GUARDED_BY(mutex_);
  std::thread watcher_;
};

class StokerFlightServer final : public flight::FlightServerBase, public FlightService {
 public:
  StokerFlightServer(std::shared_ptr<const StreamSource> source, ServeOptions options)
      : source_(std::move(source)),
        options_(std::move(options)),
        config_digest_(source_->config_digest()),
        config_json_(source_->config_json(options_.chunk_batches)) {}

  arrow::Status Start() {
    flight::Location location;
    if (options_.tls_cert_pem.empty()) {
      ARROW_ASSIGN_OR_RAISE(location, flight::Location::ForGrpcTcp(options_.host, options_.port));
    } else {
      ARROW_ASSIGN_OR_RAISE(location, flight::Location::ForGrpcTls(options_.host, options_.port));
    }
    flight::FlightServerOptions server_options(location);
    if (!options_.tls_cert_pem.empty()) {
      server_options.tls_certificates.push_back({options_.tls_cert_pem, options_.tls_key_pem});
    }
    ARROW_RETURN_NOT_OK(Init(server_options));
    ARROW_ASSIGN_OR_RAISE(location_, AdvertisedLocation());
    // SIGINT / SIGTERM shut it down with the grace deadline (Flight's SetShutdownOnSignals
    // waits for every call, and a client that stops reading never ends its stream). The
    // process's first server owns the signals; another alive in it at the same time serves
    // until Shutdown() is called.
    ARROW_UNUSED(stop_signals_.Install([this](int) { ARROW_UNUSED(Shutdown()); }));
    return arrow::Status::OK();
  }

  // Where endpoints send clients: this server's address and bound port, or, bound to a
  // wildcard address, Flight's "reuse this connection" (the client's own way here).
  arrow::Result<flight::Location> AdvertisedLocation() const {
    const std::string& host = options_.host;
    if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
      return flight::Location::ReuseConnection();
    }
    if (options_.tls_cert_pem.empty()) return flight::Location::ForGrpcTcp(host, port());
    return flight::Location::ForGrpcTls(host, port());
  }

  int port() const override { return FlightServerBase::port(); }
  arrow::Status Serve() override { return FlightServerBase::Serve(); }
  // Stops taking calls; those in flight (streams) may finish within shutdown_grace_s, then
  // are cancelled. Returns once every call has ended; a second call (a signal, then the
  // caller's own) returns at once, as Flight's may be called only once.
  arrow::Status Shutdown() override {
    if (shut_down_.exchange(true)) return arrow::Status::OK();
    const auto deadline =
        std::chrono::system_clock::now() + std::chrono::seconds(options_.shutdown_grace_s);
    return FlightServerBase::Shutdown(&deadline);
  }
  const std::string& config_json() const override { return config_json_; }

  ServeStats stats() const override {
    const ServeCounters& c = *counters_;
    ServeStats s;
    s.streams_started = c.streams_started.load(std::memory_order_relaxed);
    s.streams_active = active_->load(std::memory_order_relaxed);
    s.streams_refused_busy = c.streams_refused_busy.load(std::memory_order_relaxed);
    s.streams_released_idle = c.streams_released_idle.load(std::memory_order_relaxed);
    s.bad_tickets = c.bad_tickets.load(std::memory_order_relaxed);
    s.unauthenticated = c.unauthenticated.load(std::memory_order_relaxed);
    s.stream_errors = c.stream_errors.load(std::memory_order_relaxed);
    s.batches_sent = c.batches_sent.load(std::memory_order_relaxed);
    s.rows_sent = c.rows_sent.load(std::memory_order_relaxed);
    s.bytes_sent = c.bytes_sent.load(std::memory_order_relaxed);
    ledger_.Fill(&s);
    return s;
  }

  arrow::Status ListFlights(const flight::ServerCallContext& context, const flight::Criteria*,
                            std::unique_ptr<flight::FlightListing>* listings) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto info, Info(flight::FlightDescriptor::Command(config_json_)));
    *listings = std::make_unique<flight::SimpleFlightListing>(
        std::vector<flight::FlightInfo>{std::move(info)});
    return arrow::Status::OK();
  }

  arrow::Status GetFlightInfo(const flight::ServerCallContext& context,
                              const flight::FlightDescriptor& descriptor,
                              std::unique_ptr<flight::FlightInfo>* info) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto made, Info(descriptor));
    *info = std::make_unique<flight::FlightInfo>(std::move(made));
    return arrow::Status::OK();
  }

  arrow::Status DoAction(const flight::ServerCallContext& context, const flight::Action& action,
                         std::unique_ptr<flight::ResultStream>* result) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    std::string body;
    if (action.type == "config") {
      body = config_json_;
    } else if (action.type == "plan") {
      // Body: a ticket; answer: how many batches that stream (and its whole plan) has.
      const std::string ticket = action.body ? action.body->ToString() : "";
      ARROW_ASSIGN_OR_RAISE(auto spec, CheckedTicket(ticket));
      ARROW_ASSIGN_OR_RAISE(auto planned, source_->PlanStream(spec));
      body = "{\"plan_batches\":" + std::to_string(planned.plan_batches) +
             ",\"stream_batches\":" + std::to_string(planned.stream_batches);
      if (spec.chunk_rows > 0) {
        body += ",\"chunk_ends\":" + ToJson(planned.chunk_ends);
      }
      body += "}";
    } else if (action.type == "stats") {
      body = ToJson(stats());
    } else {
      return arrow::Status::NotImplemented("unknown action '", action.type,
                                           "'; this server answers 'config', 'plan' and 'stats'");
    }
    std::vector<flight::Result> results(1);
    results[0].body = arrow::Buffer::FromString(std::move(body));
    *result = std::make_unique<flight::SimpleResultStream>(std::move(results));
    return arrow::Status::OK();
  }

  arrow::Status ListActions(const flight::ServerCallContext& context,
                            std::vector<flight::ActionType>* actions) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    *actions = {{"config", "this server's configuration (JSON)"},
                {"plan", "batch counts of the stream a ticket names (JSON)"},
                {"stats", "the server's counters and its streams' work (JSON)"}};
    return arrow::Status::OK();
  }

  arrow::Status DoGet(const flight::ServerCallContext& context, const flight::Ticket& request,
                      std::unique_ptr<flight::FlightDataStream>* stream) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto spec, CheckedTicket(request.ticket));
    if (active_->fetch_add(1) >= options_.max_streams) {
      active_->fetch_sub(1);
      counters_->streams_refused_busy.fetch_add(1, std::memory_order_relaxed);
      return flight::MakeFlightError(
          flight::FlightStatusCode::Unavailable,
          "server busy: it serves at most " + std::to_string(options_.max_streams) + " streams");
    }
    auto started = source_->StartStream(spec);
    if (!started.ok()) {
      active_->fetch_sub(1);
      counters_->bad_tickets.fetch_add(1, std::memory_order_relaxed);
      return started.status();
    }
    counters_->streams_started.fetch_add(1, std::memory_order_relaxed);
    auto entry = ledger_.Open(spec, started->get());
    auto reader = std::make_shared<StreamReader>(std::move(*started), source_->schema(), active_,
                                                 counters_, std::move(entry));
    streams_.Add(reader);
    *stream = std::make_unique<flight::RecordBatchStream>(reader);
    return arrow::Status::OK();
  }

 private:
  arrow::Status Authenticate(const flight::ServerCallContext& context) const {
    if (options_.token.empty()) return arrow::Status::OK();
    const auto& headers = context.incoming_headers();
    auto it = headers.find("authorization");
    if (it != headers.end() && ConstantTimeEquals(it->second, "Bearer " + options_.token)) {
      return arrow::Status::OK();
    }
    counters_->unauthenticated.fetch_add(1, std::memory_order_relaxed);
    return flight::MakeFlightError(
        flight::FlightStatusCode::Unauthenticated,
        it == headers.end() ? "this server needs a bearer token" : "wrong bearer token");
  }

  arrow::Result<LoaderImpl::StreamSpec> CheckedTicket(const std::string& ticket) const {
    auto parsed = DecodeTicket(ticket);
    if (!parsed.ok() || parsed->config != config_digest_) {
      counters_->bad_tickets.fetch_add(1, std::memory_order_relaxed);
    }
    if (!parsed.ok()) {
      return arrow::Status::Invalid("bad ticket: ", parsed.status().message(),
                                    " (see docs/serve.md for the format)");
    }
    if (parsed->config != config_digest_) {
      return arrow::Status::Invalid("the ticket is for configuration '", parsed->config,
                                    "' but this server serves '", config_digest_,
                                    "' (another dataset, or other loader options)");
    }
    return parsed->stream;
  }

  // The flight a descriptor selects (ParseSelection): one endpoint per selected rank, whose
  // ticket streams that rank's whole epoch from this server. A command descriptor gets the
  // configuration JSON back as its descriptor, so clients read the config from it.
  arrow::Result<flight::FlightInfo> Info(const flight::FlightDescriptor& descriptor) const {
    ARROW_ASSIGN_OR_RAISE(Selection selection, ParseSelection(descriptor));
    const int first = selection.rank.value_or(0);
    const int last = selection.rank ? first + 1 : selection.world_size;
    std::vector<flight::FlightEndpoint> endpoints;
    for (int rank = first; rank < last; ++rank) {
      Ticket ticket{config_digest_, {}};
      ticket.stream.epoch = selection.epoch;
      ticket.stream.rank = rank;
      ticket.stream.world_size = selection.world_size;
      flight::FlightEndpoint endpoint;
      endpoint.ticket.ticket = EncodeTicket(ticket);
      endpoint.locations = {location_};
      endpoints.push_back(std::move(endpoint));
    }
    const bool by_command = descriptor.type != flight::FlightDescriptor::PATH;
    const int64_t rows = selection.world_size == 1 ? source_->num_rows() : -1;
    return flight::FlightInfo::Make(
        *source_->schema(),
        by_command ? flight::FlightDescriptor::Command(config_json_) : descriptor, endpoints, rows,
        -1, /*ordered=*/endpoints.size() == 1);
  }

  std::shared_ptr<const StreamSource> source_;
  ServeOptions options_;
  std::string config_digest_;
  std::string config_json_;
  flight::Location location_;
  std::shared_ptr<std::atomic<int>> active_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<ServeCounters> counters_ = std::make_shared<ServeCounters>();
  StreamLedger ledger_;
  StreamRegistry streams_{options_.stream_idle_timeout_s};
  std::atomic<bool> shut_down_{false};
  StopSignals stop_signals_;  // last: its watcher, which calls Shutdown(), goes first
};

}  // namespace

arrow::Status ServeOptions::Validate() const {
  if (max_streams < 1) {
    return arrow::Status::Invalid("max_streams must be >= 1, got ", max_streams);
  }
  if (chunk_batches < 1) {
    return arrow::Status::Invalid("chunk_batches must be >= 1, got ", chunk_batches);
  }
  if (stream_idle_timeout_s < 0) {
    return arrow::Status::Invalid("stream_idle_timeout_s must be >= 0, got ",
                                  stream_idle_timeout_s);
  }
  if (shutdown_grace_s < 0) {
    return arrow::Status::Invalid("shutdown_grace_s must be >= 0, got ", shutdown_grace_s);
  }
  if (tls_cert_pem.empty() != tls_key_pem.empty()) {
    return arrow::Status::Invalid("TLS needs both a certificate and a key");
  }
  return arrow::Status::OK();
}

arrow::Result<std::unique_ptr<FlightService>> MakeFlightService(
    std::shared_ptr<const StreamSource> source, ServeOptions options) {
  ARROW_RETURN_NOT_OK(options.Validate());
  if (source == nullptr) return arrow::Status::Invalid("a server needs something to serve");
  auto server = std::make_unique<StokerFlightServer>(std::move(source), std::move(options));
  ARROW_RETURN_NOT_OK(server->Start());
  return server;
}

arrow::Result<std::unique_ptr<FlightService>> FlightService::Make(std::shared_ptr<Loader> loader,
                                                                  ServeOptions options) {
  return MakeFlightService(LoaderStreamSource(std::move(loader)), std::move(options));
}

}  // namespace stoker
