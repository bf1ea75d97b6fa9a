// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/flight_service.h"

#include <arrow/flight/api.h>
#include <arrow/record_batch.h>

#include <csignal>
#include <sstream>

#include "manifest/manifest.h"
#include "plan/plan.h"
#include "serve/ticket.h"
#include "transform/transform_spec.h"
#include "util/digest.h"
#include "util/json.h"

namespace stoker {

namespace flight = arrow::flight;

std::string StreamConfigDigest(const Loader& loader) {
  const auto& o = loader.options();
  Digest digest;
  digest.Add(loader.manifest().fingerprint());
  digest.Add(static_cast<uint64_t>(o.batch_size));
  digest.Add(o.seed);
  digest.Add(static_cast<uint64_t>(o.shuffle));
  digest.Add(static_cast<uint64_t>(o.shuffle ? o.ResolvedShuffleWindow() : 0));
  digest.Add(static_cast<uint64_t>(o.drop_last));
  // Training configurations keep the digest they had before evaluation mode existed.
  if (o.mode != LoaderMode::kTrain || o.pad_to_equal_steps) {
    digest.Add(std::string(LoaderModeName(o.mode)));
    digest.Add(static_cast<uint64_t>(o.pad_to_equal_steps));
  }
  digest.Add(loader.schema()->ToString());
  digest.Add(loader.transforms().digest());
  digest.Add(loader.filter_digest());
  return digest.Hex();
}

std::string StreamConfigJson(const Loader& loader, int64_t chunk_batches) {
  const auto& o = loader.options();
  auto strings = [](const std::vector<std::string>& values) {
    std::string out = "[";
    for (const auto& value : values) {
      if (out.size() > 1) out += ',';
      AppendJsonString(value, &out);
    }
    return out + "]";
  };
  std::ostringstream json;
  json << "{\"stoker\":1,\"config\":" << JsonString(StreamConfigDigest(loader))
       << ",\"dataset_fingerprint\":" << JsonString(loader.manifest().fingerprint())
       << ",\"files\":" << loader.manifest().files().size() << ",\"rows\":" << loader.num_rows()
       << ",\"batch_size\":" << o.batch_size << ",\"seed\":" << o.seed
       << ",\"shuffle\":" << (o.shuffle ? "true" : "false")
       << ",\"shuffle_window\":" << (o.shuffle ? std::to_string(o.ResolvedShuffleWindow()) : "null")
       << ",\"drop_last\":" << (o.drop_last ? "true" : "false")
       << ",\"mode\":" << JsonString(LoaderModeName(o.mode))
       << ",\"pad_to_equal_steps\":" << (o.pad_to_equal_steps ? "true" : "false")
       << ",\"columns\":" << strings(loader.schema()->field_names())
       << ",\"ragged\":" << strings(loader.ragged_columns())
       << ",\"transform_digest\":" << JsonString(loader.transforms().digest())
       << ",\"filter_digest\":" << JsonString(loader.filter_digest())
       << ",\"chunk\":" << chunk_batches << "}";
  return json.str();
}

namespace {

// Adapts a BatchStream to the RecordBatchReader Flight streams, and frees a stream slot
// when Flight is done with it (end of stream, or the client went away).
class StreamReader final : public arrow::RecordBatchReader {
 public:
  StreamReader(std::unique_ptr<BatchStream> stream, std::shared_ptr<arrow::Schema> schema,
               std::shared_ptr<std::atomic<int>> active)
      : stream_(std::move(stream)), schema_(std::move(schema)), active_(std::move(active)) {}
  ~StreamReader() override { active_->fetch_sub(1); }

  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* batch) override {
    ARROW_ASSIGN_OR_RAISE(*batch, stream_->Next());
    return arrow::Status::OK();
  }

 private:
  std::unique_ptr<BatchStream> stream_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<std::atomic<int>> active_;
};

class StokerFlightServer final : public flight::FlightServerBase, public FlightService {
 public:
  StokerFlightServer(std::shared_ptr<Loader> loader, ServeOptions options)
      : loader_(std::move(loader)),
        options_(std::move(options)),
        config_digest_(StreamConfigDigest(*loader_)),
        config_json_(StreamConfigJson(*loader_, options_.chunk_batches)) {}

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
    return SetShutdownOnSignals({SIGINT, SIGTERM});
  }

  int port() const override { return FlightServerBase::port(); }
  arrow::Status Serve() override { return FlightServerBase::Serve(); }
  arrow::Status Shutdown() override { return FlightServerBase::Shutdown(); }
  const std::string& config_json() const override { return config_json_; }

  arrow::Status ListFlights(const flight::ServerCallContext& context, const flight::Criteria*,
                            std::unique_ptr<flight::FlightListing>* listings) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto info, Info());
    *listings = std::make_unique<flight::SimpleFlightListing>(
        std::vector<flight::FlightInfo>{std::move(info)});
    return arrow::Status::OK();
  }

  arrow::Status GetFlightInfo(const flight::ServerCallContext& context,
                              const flight::FlightDescriptor&,
                              std::unique_ptr<flight::FlightInfo>* info) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto made, Info());
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
      ARROW_ASSIGN_OR_RAISE(auto planned, loader_->PlanStream(spec));
      body = "{\"plan_batches\":" + std::to_string(planned.first.num_batches()) +
             ",\"stream_batches\":" + std::to_string(planned.second.size()) + "}";
    } else {
      return arrow::Status::NotImplemented("unknown action '", action.type,
                                           "'; this server answers 'config' and 'plan'");
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
                {"plan", "batch counts of the stream a ticket names (JSON)"}};
    return arrow::Status::OK();
  }

  arrow::Status DoGet(const flight::ServerCallContext& context, const flight::Ticket& request,
                      std::unique_ptr<flight::FlightDataStream>* stream) override {
    ARROW_RETURN_NOT_OK(Authenticate(context));
    ARROW_ASSIGN_OR_RAISE(auto spec, CheckedTicket(request.ticket));
    if (active_->fetch_add(1) >= options_.max_streams) {
      active_->fetch_sub(1);
      return flight::MakeFlightError(
          flight::FlightStatusCode::Unavailable,
          "server busy: it serves at most " + std::to_string(options_.max_streams) + " streams");
    }
    auto started = loader_->StartStream(spec);
    if (!started.ok()) {
      active_->fetch_sub(1);
      return started.status();
    }
    auto reader = std::make_shared<StreamReader>(std::move(*started), loader_->schema(), active_);
    *stream = std::make_unique<flight::RecordBatchStream>(reader);
    return arrow::Status::OK();
  }

 private:
  arrow::Status Authenticate(const flight::ServerCallContext& context) const {
    if (options_.token.empty()) return arrow::Status::OK();
    const auto& headers = context.incoming_headers();
    auto it = headers.find("authorization");
    if (it != headers.end() && it->second == "Bearer " + options_.token) {
      return arrow::Status::OK();
    }
    return flight::MakeFlightError(
        flight::FlightStatusCode::Unauthenticated,
        it == headers.end() ? "this server needs a bearer token" : "wrong bearer token");
  }

  arrow::Result<Loader::StreamSpec> CheckedTicket(const std::string& ticket) const {
    auto parsed = DecodeTicket(ticket);
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

  arrow::Result<flight::FlightInfo> Info() const {
    return flight::FlightInfo::Make(*loader_->schema(),
                                    flight::FlightDescriptor::Command(config_json_), {},
                                    loader_->num_rows(), -1, /*ordered=*/true);
  }

  std::shared_ptr<Loader> loader_;
  ServeOptions options_;
  std::string config_digest_;
  std::string config_json_;
  std::shared_ptr<std::atomic<int>> active_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace

arrow::Status ServeOptions::Validate() const {
  if (max_streams < 1) {
    return arrow::Status::Invalid("max_streams must be >= 1, got ", max_streams);
  }
  if (chunk_batches < 1) {
    return arrow::Status::Invalid("chunk_batches must be >= 1, got ", chunk_batches);
  }
  if (tls_cert_pem.empty() != tls_key_pem.empty()) {
    return arrow::Status::Invalid("TLS needs both a certificate and a key");
  }
  return arrow::Status::OK();
}

arrow::Result<std::unique_ptr<FlightService>> FlightService::Make(std::shared_ptr<Loader> loader,
                                                                  ServeOptions options) {
  ARROW_RETURN_NOT_OK(options.Validate());
  auto server = std::make_unique<StokerFlightServer>(std::move(loader), std::move(options));
  ARROW_RETURN_NOT_OK(server->Start());
  return server;
}

}  // namespace stoker
