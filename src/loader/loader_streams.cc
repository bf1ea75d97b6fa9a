// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// A loader's plans and streams: its own epochs (Loader::StartEpoch) and the streams of any
// rank or share of one that the server, the local-first share and a mixture's sources start
// (LoaderImpl::StreamSpec).
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "exec/autotune.h"
#include "exec/epoch_pipeline.h"
#include "exec/task_pool.h"
#include "loader/loader_internal.h"
#include "plan/plan.h"

namespace stoker {

int64_t LoaderImpl::num_batches() const {
  // Only the row counts decide it, the same for every epoch; a plan is cheap to make.
  auto plan = PlanEpoch(0);
  return plan.ok() ? plan->num_batches() : 0;
}

PlanConfig LoaderImpl::MakePlanConfig(int64_t epoch) const {
  PlanConfig config;
  config.seed = options_.seed;
  config.epoch = static_cast<uint64_t>(epoch);
  config.shuffle = options_.shuffle;
  config.plan_version = options_.plan_version;
  // Without shuffle a window is one unit: rows stream in order, nothing needs mixing.
  config.window_rows = options_.shuffle ? options_.ResolvedShuffleWindow() : 1;
  config.world_size = options_.world_size;
  config.rank = options_.rank;
  config.batch_size = options_.batch_size;
  config.drop_last = options_.drop_last;
  config.exactly_once = options_.mode == LoaderMode::kEval;
  config.pad_to_equal_steps = options_.pad_to_equal_steps;
  return config;
}

arrow::Result<EpochPlan> LoaderImpl::PlanEpoch(int64_t epoch,
                                               const std::vector<ResumeRound>& resumed) const {
  if (epoch < 0) return arrow::Status::Invalid("epoch must be >= 0, got ", epoch);
  PlanConfig config = MakePlanConfig(epoch);
  config.resumed = resumed;
  return EpochPlan::Make(unit_rows_, config);
}

arrow::Result<std::unique_ptr<BatchStream>> LoaderImpl::StartEpoch(
    int64_t epoch, const std::vector<ResumeRound>& resumed) const {
  StreamSpec spec;
  spec.epoch = epoch;
  spec.resumed = resumed;
  spec.rank = options_.rank;
  spec.world_size = options_.world_size;
  return StartStream(spec);
}

arrow::Status LoaderImpl::StreamSpec::Validate() const {
  if (epoch < 0) return arrow::Status::Invalid("epoch must be >= 0, got ", epoch);
  ARROW_RETURN_NOT_OK(ValidateRank(rank, world_size));
  if (shards < 1 || shard < 0 || span < 1 || shard + span > shards || chunk < 1 ||
      first_batch < 0 || chunk_rows < 0 || first_row < 0) {
    return arrow::Status::Invalid("invalid stream shard ", shard, " (span ", span, ") of ", shards,
                                  " (chunk ", chunk, ", first batch ", first_batch, ", chunk rows ",
                                  chunk_rows, ", first row ", first_row, ")");
  }
  if (chunk_rows > 0 && (first_batch > 0 || !batch_ends.empty())) {
    return arrow::Status::Invalid(
        "a stream shared in chunks of windows (chunk rows ", chunk_rows,
        ") starts at a row (first_row), not a batch, and takes no batch ends");
  }
  if (chunk_rows == 0 && first_row > 0) {
    return arrow::Status::Invalid("first_row (", first_row,
                                  ") is for streams shared in chunks of windows (chunk_rows > 0)");
  }
  return arrow::Status::OK();
}

std::vector<int64_t> LoaderImpl::StreamSpec::Batches(int64_t plan_batches) const {
  std::vector<int64_t> batches;
  for (int64_t b = first_batch; b < plan_batches; ++b) {
    const int64_t slot = (b / chunk) % shards;
    if (slot >= shard && slot < shard + span) batches.push_back(b);
  }
  return batches;
}

arrow::Result<LoaderImpl::PlannedStream> LoaderImpl::PlanStream(const StreamSpec& spec) const {
  ARROW_RETURN_NOT_OK(spec.Validate());
  PlanConfig config = MakePlanConfig(spec.epoch);
  config.resumed = spec.resumed;
  config.rank = spec.rank;
  config.world_size = spec.world_size;
  config.batch_ends = spec.batch_ends;
  ARROW_ASSIGN_OR_RAISE(auto plan, EpochPlan::Make(unit_rows_, config));
  const int64_t plan_batches = plan.num_batches();
  if (spec.chunk_rows == 0) {
    std::vector<int64_t> batches = spec.Batches(plan_batches);
    return PlannedStream{std::move(plan), std::move(batches), plan_batches, {}};
  }
  // Chunks of whole windows: the batches cut at the chunk ends into pieces, each piece in one
  // chunk. Rows past the last batch (drop_last) end the plan as a piece no stream delivers.
  std::vector<int64_t> chunk_ends = plan.WindowChunkEnds(spec.chunk_rows);
  const int64_t delivered = plan_batches > 0 ? plan.BatchRange(plan_batches - 1).second : 0;
  std::vector<int64_t> piece_ends;
  auto chunk_end = chunk_ends.begin();
  for (int64_t b = 0; b < plan_batches; ++b) {
    const int64_t batch_end = plan.BatchRange(b).second;
    for (; chunk_end != chunk_ends.end() && *chunk_end <= batch_end; ++chunk_end) {
      if (*chunk_end < batch_end) piece_ends.push_back(*chunk_end);
    }
    piece_ends.push_back(batch_end);
  }
  if (delivered < plan.rank_rows()) piece_ends.push_back(plan.rank_rows());
  std::vector<int64_t> pieces;
  int64_t start = 0;
  for (size_t p = 0; p < piece_ends.size() && piece_ends[p] <= delivered; ++p) {
    const auto chunk = static_cast<int64_t>(
        std::upper_bound(chunk_ends.begin(), chunk_ends.end(), start) - chunk_ends.begin());
    const int64_t slot = chunk % spec.shards;
    if (slot >= spec.shard && slot < spec.shard + spec.span && start >= spec.first_row) {
      pieces.push_back(static_cast<int64_t>(p));
    }
    start = piece_ends[p];
  }
  config.batch_ends = std::move(piece_ends);
  ARROW_ASSIGN_OR_RAISE(auto piece_plan, EpochPlan::Make(unit_rows_, config));
  return PlannedStream{std::move(piece_plan), std::move(pieces), plan_batches,
                       std::move(chunk_ends)};
}

arrow::Result<std::unique_ptr<BatchStream>> LoaderImpl::StartStream(
    const StreamSpec& spec, std::shared_ptr<TaskPool> workers) const {
  ARROW_ASSIGN_OR_RAISE(auto planned, PlanStream(spec));
  // A pool of its own may be sized by the controller; a shared one (a mixture's) is not.
  std::shared_ptr<TuneState> tune;
  if (workers == nullptr) {
    // Under the controller the pool has every worker it may ever set to work.
    workers = std::make_shared<TaskPool>(tune_ != nullptr ? tune_->bounds().max_threads
                                                          : options_.ResolvedThreads());
    tune = tune_;
  }
  return std::make_unique<EpochPipeline>(source_, std::move(planned.plan),
                                         std::move(planned.batches), options_, stats_,
                                         std::move(workers), spec.targets, std::move(tune));
}

}  // namespace stoker
