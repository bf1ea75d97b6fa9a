// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/stream_identity.h"

#include <sstream>
#include <vector>

#include "loader/loader_internal.h"
#include "manifest/manifest.h"
#include "transform/transform_spec.h"
#include "util/digest.h"
#include "util/json.h"

namespace stoker {

std::string StreamConfigDigest(const Loader& loader) {
  const auto& o = loader.options();
  Digest digest;
  digest.Add(Internal(loader).manifest().fingerprint());
  digest.Add(static_cast<uint64_t>(o.batch_size));
  digest.Add(o.seed);
  digest.Add(static_cast<uint64_t>(o.shuffle));
  digest.Add(static_cast<uint64_t>(o.shuffle ? o.ResolvedShuffleWindow() : 0));
  digest.Add(static_cast<uint64_t>(o.drop_last));
  // Plan version 1 keeps the digest it had before there were versions.
  if (o.plan_version != kFirstPlanVersion) {
    digest.Add(std::string("plan_version"));
    digest.Add(static_cast<uint64_t>(o.plan_version));
  }
  // Training configurations keep the digest they had before evaluation mode existed.
  if (o.mode != LoaderMode::kTrain || o.pad_to_equal_steps) {
    digest.Add(std::string(LoaderModeName(o.mode)));
    digest.Add(static_cast<uint64_t>(o.pad_to_equal_steps));
  }
  digest.Add(loader.schema()->ToString());
  digest.Add(Internal(loader).transforms().digest());
  digest.Add(loader.filter_digest());
  // Configurations without codecs keep the digest they had before codecs were part of it.
  if (!Internal(loader).codecs_digest().empty()) digest.Add(Internal(loader).codecs_digest());
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
       << ",\"dataset_fingerprint\":" << JsonString(Internal(loader).manifest().fingerprint())
       << ",\"files\":" << Internal(loader).manifest().files().size()
       << ",\"rows\":" << loader.num_rows() << ",\"batch_size\":" << o.batch_size
       << ",\"seed\":" << o.seed << ",\"shuffle\":" << (o.shuffle ? "true" : "false")
       << ",\"shuffle_window\":" << (o.shuffle ? std::to_string(o.ResolvedShuffleWindow()) : "null")
       << ",\"plan_version\":" << o.plan_version
       << ",\"drop_last\":" << (o.drop_last ? "true" : "false")
       << ",\"mode\":" << JsonString(LoaderModeName(o.mode))
       << ",\"pad_to_equal_steps\":" << (o.pad_to_equal_steps ? "true" : "false")
       << ",\"columns\":" << strings(loader.schema()->field_names())
       << ",\"ragged\":" << strings(loader.ragged_columns())
       << ",\"transform_digest\":" << JsonString(Internal(loader).transforms().digest())
       << ",\"filter_digest\":" << JsonString(loader.filter_digest())
       << ",\"codecs_digest\":" << JsonString(Internal(loader).codecs_digest())
       << ",\"chunk\":" << chunk_batches << "}";
  return json.str();
}

}  // namespace stoker
