// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/flight_service.h"

#include <arrow/flight/api.h>
#include <arrow/record_batch.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>

#include "manifest/manifest.h"
#include "plan/plan.h"
#include "transform/transform_spec.h"
#include "util/digest.h"

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
  digest.Add(loader.schema()->ToString());
  digest.Add(loader.transforms().digest());
  digest.Add(loader.filter_digest());
  return digest.Hex();
}

namespace {

std::string JsonString(const std::string& s) {
  std::ostringstream out;
  out << '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out << buf;
    } else {
      out << c;
    }
  }
  out << '"';
  return out.str();
}

// A ticket: "stoker1;config=<hex>;epoch=E;rank=R;world=W;rounds=W1:C1,W2:C2;shards=K;
// shard=k;chunk=C;first=B" (docs/serve.md). Unknown or malformed fields are errors.
arrow::Result<std::pair<std::string, Loader::StreamSpec>> ParseTicket(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::stringstream in(text);
  std::string part;
  bool first = true;
  while (std::getline(in, part, ';')) {
    if (first) {
      if (part != "stoker1") return arrow::Status::Invalid("not a stoker1 ticket");
      first = false;
      continue;
    }
    const auto eq = part.find('=');
    if (eq == std::string::npos) return arrow::Status::Invalid("malformed field '", part, "'");
    fields[part.substr(0, eq)] = part.substr(eq + 1);
  }
  if (first) return arrow::Status::Invalid("empty ticket");
  auto integer = [&](const char* key, int64_t fallback) -> arrow::Result<int64_t> {
    auto it = fields.find(key);
    if (it == fields.end()) return fallback;
    try {
      size_t used = 0;
      const int64_t value = std::stoll(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument(key);
      return value;
    } catch (const std::exception&) {
      return arrow::Status::Invalid("field '", key, "' is not an integer: '", it->second, "'");
    }
  };
  Loader::StreamSpec spec;
  ARROW_ASSIGN_OR_RAISE(spec.epoch, integer("epoch", 0));
  ARROW_ASSIGN_OR_RAISE(int64_t rank, integer("rank", 0));
  ARROW_ASSIGN_OR_RAISE(int64_t world, integer("world", 1));
  spec.rank = static_cast<int>(rank);
  spec.world_size = static_cast<int>(world);
  ARROW_ASSIGN_OR_RAISE(spec.shards, integer("shards", 1));
  ARROW_ASSIGN_OR_RAISE(spec.shard, integer("shard", 0));
  ARROW_ASSIGN_OR_RAISE(spec.chunk, integer("chunk", 1));
  ARROW_ASSIGN_OR_RAISE(spec.first_batch, integer("first", 0));
  if (auto it = fields.find("rounds"); it != fields.end() && !it->second.empty()) {
    std::stringstream rounds(it->second);
    std::string round;
    while (std::getline(rounds, round, ',')) {
      const auto colon = round.find(':');
      try {
        if (colon == std::string::npos) throw std::invalid_argument(round);
        spec.resumed.push_back(
            {std::stoi(round.substr(0, colon)), std::stoll(round.substr(colon + 1))});
      } catch (const std::exception&) {
        return arrow::Status::Invalid("field 'rounds' is not W:C,W:C,...: '", it->second, "'");
      }
    }
  }
  for (const auto& [key, value] : fields) {
    static const char* kKnown[] = {"config", "epoch", "rank",  "world", "rounds",
                                   "shards", "shard", "chunk", "first"};
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) return arrow::Status::Invalid("unknown field '", key, "'");
  }
  return std::make_pair(fields["config"], spec);
}

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
        config_digest_(StreamConfigDigest(*loader_)) {
    const auto& o = loader_->options();
    std::ostringstream json;
    json << "{\"stoker\":1,\"config\":" << JsonString(config_digest_)
         << ",\"dataset_fingerprint\":" << JsonString(loader_->manifest().fingerprint())
         << ",\"files\":" << loader_->manifest().files().size()
         << ",\"rows\":" << loader_->num_rows() << ",\"batch_size\":" << o.batch_size
         << ",\"seed\":" << o.seed << ",\"shuffle\":" << (o.shuffle ? "true" : "false")
         << ",\"shuffle_window\":";
    if (o.shuffle) {
      json << o.ResolvedShuffleWindow();
    } else {
      json << "null";
    }
    json << ",\"drop_last\":" << (o.drop_last ? "true" : "false") << ",\"columns\":[";
    const auto& fields = loader_->schema()->fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      json << (i == 0 ? "" : ",") << JsonString(fields[i]->name());
    }
    json << "],\"ragged\":[";
    const auto& ragged = loader_->ragged_columns();
    for (size_t i = 0; i < ragged.size(); ++i) {
      json << (i == 0 ? "" : ",") << JsonString(ragged[i]);
    }
    json << "],\"transform_digest\":" << JsonString(loader_->transforms().digest())
         << ",\"filter_digest\":" << JsonString(loader_->filter_digest())
         << ",\"chunk\":" << options_.chunk_batches << "}";
    config_json_ = json.str();
  }

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
    auto parsed = ParseTicket(ticket);
    if (!parsed.ok()) {
      return arrow::Status::Invalid("bad ticket: ", parsed.status().message(),
                                    " (see docs/serve.md for the format)");
    }
    if (parsed->first != config_digest_) {
      return arrow::Status::Invalid("the ticket is for configuration '", parsed->first,
                                    "' but this server serves '", config_digest_,
                                    "' (another dataset, or other loader options)");
    }
    return parsed->second;
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

arrow::Result<std::unique_ptr<FlightService>> FlightService::Make(std::shared_ptr<Loader> loader,
                                                                  ServeOptions options) {
  if (options.max_streams < 1) {
    return arrow::Status::Invalid("max_streams must be >= 1, got ", options.max_streams);
  }
  if (options.chunk_batches < 1) {
    return arrow::Status::Invalid("chunk_batches must be >= 1, got ", options.chunk_batches);
  }
  if (options.tls_cert_pem.empty() != options.tls_key_pem.empty()) {
    return arrow::Status::Invalid("TLS needs both a certificate and a key");
  }
  auto server = std::make_unique<StokerFlightServer>(std::move(loader), std::move(options));
  ARROW_RETURN_NOT_OK(server->Start());
  return server;
}

}  // namespace stoker
