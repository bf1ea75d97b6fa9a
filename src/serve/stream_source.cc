// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/stream_source.h"

#include <utility>

#include "stoker/stream_identity.h"
#include "util/digest.h"

namespace stoker {

namespace {

class LoaderSource final : public StreamSource {
 public:
  explicit LoaderSource(std::shared_ptr<Loader> loader)
      : loader_(std::move(loader)), digest_(StreamConfigDigest(*loader_)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return loader_->schema(); }
  int64_t num_rows() const override { return loader_->num_rows(); }
  const std::string& config_digest() const override { return digest_; }
  std::string config_json(int64_t chunk_batches) const override {
    // Its streams can be shared in whole windows (StreamSpec::chunk_rows): what a client asks
    // for when the server says so.
    std::string json = StreamConfigJson(*loader_, chunk_batches);
    return json.substr(0, json.rfind('}')) + ",\"window_shares\":true}";
  }
  arrow::Result<StreamPlan> PlanStream(const LoaderImpl::StreamSpec& spec) const override {
    ARROW_ASSIGN_OR_RAISE(auto planned, Internal(*loader_).PlanStream(spec));
    return StreamPlan{planned.plan_batches, static_cast<int64_t>(planned.batches.size()),
                      std::move(planned.chunk_ends)};
  }
  arrow::Result<std::unique_ptr<BatchStream>> StartStream(
      const LoaderImpl::StreamSpec& spec) const override {
    return Internal(*loader_).StartStream(spec);
  }

 private:
  std::shared_ptr<Loader> loader_;
  std::string digest_;
};

class MixtureSource final : public StreamSource {
 public:
  MixtureSource(std::shared_ptr<const MixtureStreams> streams, std::string identity_json,
                std::string digest)
      : streams_(std::move(streams)),
        identity_json_(std::move(identity_json)),
        digest_(std::move(digest)) {}

  std::shared_ptr<arrow::Schema> schema() const override { return streams_->schema(); }
  int64_t num_rows() const override { return streams_->num_rows(); }
  const std::string& config_digest() const override { return digest_; }
  std::string config_json(int64_t chunk_batches) const override {
    // identity_json_ is an object: its fields, then the digest and the chunk.
    std::string json = identity_json_.substr(0, identity_json_.rfind('}'));
    return json + ",\"config\":\"" + digest_ + "\",\"chunk\":" + std::to_string(chunk_batches) +
           "}";
  }
  arrow::Result<StreamPlan> PlanStream(const LoaderImpl::StreamSpec& spec) const override {
    ARROW_ASSIGN_OR_RAISE(auto planned, streams_->PlanStream(spec));
    return StreamPlan{planned.first.num_batches(), static_cast<int64_t>(planned.second.size()), {}};
  }
  arrow::Result<std::unique_ptr<BatchStream>> StartStream(
      const LoaderImpl::StreamSpec& spec) const override {
    return streams_->StartStream(spec);
  }

 private:
  std::shared_ptr<const MixtureStreams> streams_;
  std::string identity_json_;
  std::string digest_;
};

}  // namespace

std::shared_ptr<const StreamSource> LoaderStreamSource(std::shared_ptr<Loader> loader) {
  return std::make_shared<LoaderSource>(std::move(loader));
}

arrow::Result<std::shared_ptr<const StreamSource>> MixtureStreamSource(
    std::shared_ptr<const MixtureStreams> streams, std::string identity_json) {
  const size_t open = identity_json.find_first_not_of(" \t\r\n");
  const size_t close = identity_json.find_last_not_of(" \t\r\n");
  if (streams == nullptr || open == std::string::npos || identity_json[open] != '{' ||
      identity_json[close] != '}' || close - open < 2) {
    return arrow::Status::Invalid(
        "a served mixture needs its streams and a non-empty JSON "
        "object of its identity");
  }
  identity_json = identity_json.substr(open, close - open + 1);
  // What the batches depend on besides the stream's rank, world size, epoch and rounds: the
  // identity Python computed, every source's own configuration (its dataset, options,
  // transforms, filter, codecs, its share of the window), the output columns and the sharing.
  Digest digest;
  digest.Add("mixture");
  digest.Add(identity_json);
  for (const auto& source : streams->config().sources) digest.Add(StreamConfigDigest(*source));
  digest.Add(streams->schema()->ToString());
  const MixtureSharing& sharing = streams->sharing();
  digest.Add(static_cast<uint64_t>(sharing.batch_size));
  digest.Add(static_cast<uint64_t>(sharing.drop_last));
  digest.Add(static_cast<uint64_t>(sharing.exactly_once));
  digest.Add(static_cast<uint64_t>(sharing.pad_to_equal_steps));
  return std::make_shared<MixtureSource>(std::move(streams), std::move(identity_json),
                                         digest.Hex());
}

}  // namespace stoker
