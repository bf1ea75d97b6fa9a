// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// A loader's plans and streams: its own epochs (Loader::StartEpoch) and the streams of any
// rank or share of one that the server, the local-first share and a mixture's sources start
// (LoaderImpl::StreamSpec).
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
      first_batch < 0) {
    return arrow::Status::Invalid("invalid stream shard ", shard, " (span ", span, ") of ", shards,
                                  " (chunk ", chunk, ", first batch ", first_batch, ")");
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

arrow::Result<std::pair<EpochPlan, std::vector<int64_t>>> LoaderImpl::PlanStream(
    const StreamSpec& spec) const {
  ARROW_RETURN_NOT_OK(spec.Validate());
  PlanConfig config = MakePlanConfig(spec.epoch);
  config.resumed = spec.resumed;
  config.rank = spec.rank;
  config.world_size = spec.world_size;
  config.batch_ends = spec.batch_ends;
  ARROW_ASSIGN_OR_RAISE(auto plan, EpochPlan::Make(unit_rows_, config));
  std::vector<int64_t> batches = spec.Batches(plan.num_batches());
  return std::make_pair(std::move(plan), std::move(batches));
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
  return std::make_unique<EpochPipeline>(source_, std::move(planned.first),
                                         std::move(planned.second), options_, stats_,
                                         std::move(workers), spec.targets, std::move(tune));
}

}  // namespace stoker
