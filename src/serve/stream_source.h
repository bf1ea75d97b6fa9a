// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loader/loader_internal.h"
#include "mixture/mixture_streams.h"
#include "stoker/batch_stream.h"
#include "stoker/flight_service.h"
#include "stoker/loader.h"

namespace stoker {

/// What a Flight server serves: the streams of one configuration's plan, for any rank, world
/// size, resume and share of batches (a ticket's StreamSpec), with the identity that tickets
/// and clients check. A Loader's, or a mixture's.
class StreamSource {
 public:
  virtual ~StreamSource() = default;
  virtual std::shared_ptr<arrow::Schema> schema() const = 0;
  /// Rows (positions) of an epoch, all ranks.
  virtual int64_t num_rows() const = 0;
  /// The digest tickets carry (StreamConfigDigest for a loader).
  virtual const std::string& config_digest() const = 0;
  /// The configuration JSON the server advertises, "chunk" set to `chunk_batches`.
  virtual std::string config_json(int64_t chunk_batches) const = 0;
  /// What the `plan` action answers for a stream: the batches of its rank's whole plan,
  /// those the stream delivers (pieces, for a share of whole windows) and, for such a share,
  /// where the rank's chunks end.
  struct StreamPlan {
    int64_t plan_batches = 0;
    int64_t stream_batches = 0;
    std::vector<int64_t> chunk_ends;
  };
  virtual arrow::Result<StreamPlan> PlanStream(const LoaderImpl::StreamSpec& spec) const = 0;
  virtual arrow::Result<std::unique_ptr<BatchStream>> StartStream(
      const LoaderImpl::StreamSpec& spec) const = 0;
};

/// A loader's streams (its identity: stream_identity.h).
std::shared_ptr<const StreamSource> LoaderStreamSource(std::shared_ptr<Loader> loader);

/// A mixture's streams, with the identity its MixtureLoader computes
/// (stoker._loading.mixture_loader): `identity_json`, a JSON object of every field of
/// kResumeIdentity's config keys (and what else the client reads: "ragged"), to which "config" (a
/// digest of it, the sources' own configuration digests and the sharing) and "chunk" are added.
arrow::Result<std::shared_ptr<const StreamSource>> MixtureStreamSource(
    std::shared_ptr<const MixtureStreams> streams, std::string identity_json);

/// A Flight server over `source`, listening when this returns.
arrow::Result<std::unique_ptr<FlightService>> MakeFlightService(
    std::shared_ptr<const StreamSource> source, ServeOptions options);

}  // namespace stoker
