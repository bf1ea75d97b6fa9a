// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "loader/loader_internal.h"
#include "mixture/mixture_stream.h"
#include "plan/plan.h"
#include "stoker/batch_stream.h"

namespace stoker {

/// How a mixture's epoch is shared among ranks and cut into batches: its mode's rule over the
/// epoch's positions (the plan's, as for a Loader's rows), and evaluation's padding.
struct MixtureSharing {
  int64_t batch_size = 1;
  bool drop_last = false;
  bool exactly_once = false;        // mode="eval"
  bool pad_to_equal_steps = false;  // needs exactly_once
};

/// Every stream of a mixture: any epoch, rank, world size, resumed rounds and share of the
/// rank's batches (LoaderImpl::StreamSpec), what a MixtureLoader reads (all of a rank's
/// batches) and a server serves (a chunked share of them). The rank's positions are a one-unit
/// EpochPlan over the epoch's positions, so the elastic rule, evaluation's shares and padding
/// are the plan's own. A batch is the same whichever stream delivers it: its positions are
/// the plan's, and a MixtureStream fills them as a pure function of the positions.
class MixtureStreams {
 public:
  static arrow::Result<std::shared_ptr<const MixtureStreams>> Make(
      std::shared_ptr<const MixtureConfig> config, MixtureSharing sharing,
      std::shared_ptr<MixtureTally> tally);

  /// The batches' columns: the first source's, and kValidColumn last when padded.
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  /// Positions of an epoch (all ranks).
  int64_t num_rows() const { return config_->plan->epoch_rows(); }
  const MixtureConfig& config() const { return *config_; }
  const MixtureSharing& sharing() const { return sharing_; }

  /// The plan of the spec's rank (its positions and batches), and the batches of it the
  /// stream delivers.
  arrow::Result<std::pair<EpochPlan, std::vector<int64_t>>> PlanStream(
      const LoaderImpl::StreamSpec& spec) const;
  /// The stream of `spec`: the selected batches' positions read through one MixtureStream
  /// (their rows counted in the tally), padded when the sharing pads.
  arrow::Result<std::unique_ptr<BatchStream>> StartStream(const LoaderImpl::StreamSpec& spec) const;

 private:
  MixtureStreams(std::shared_ptr<const MixtureConfig> config, MixtureSharing sharing,
                 std::shared_ptr<MixtureTally> tally, std::shared_ptr<arrow::Schema> schema);

  std::shared_ptr<const MixtureConfig> config_;
  MixtureSharing sharing_;
  std::shared_ptr<MixtureTally> tally_;
  std::shared_ptr<arrow::Schema> schema_;
};

}  // namespace stoker
