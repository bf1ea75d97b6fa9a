// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/loader.h"

#include <arrow/compute/initialize.h>

#include <mutex>

#include "epoch_pipeline.h"
#include "stoker/error.h"

namespace stoker {

namespace {

// Arrow's compute kernels (used to gather non-fixed-width columns) must be registered once
// per process; pyarrow does it on import, standalone programs rely on this.
arrow::Status EnsureComputeInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

}  // namespace

Loader::Loader(LoaderOptions options, std::shared_ptr<const Manifest> manifest)
    : options_(std::move(options)),
      manifest_(std::move(manifest)),
      stats_(std::make_shared<Stats>()) {
  for (const auto& unit : manifest_->units()) unit_rows_.push_back(unit.num_rows);
}

arrow::Result<std::shared_ptr<Loader>> Loader::Make(LoaderOptions options) {
  ARROW_RETURN_NOT_OK(options.Validate());
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  ARROW_ASSIGN_OR_RAISE(auto manifest, CatchAll([&] { return Manifest::Make(options); }));
  return std::shared_ptr<Loader>(new Loader(std::move(options), std::move(manifest)));
}

int64_t Loader::num_batches() const {
  return BatchesPerRank(manifest_->num_rows() / options_.world_size, MakePlanConfig(0));
}

PlanConfig Loader::MakePlanConfig(int64_t epoch) const {
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
  return config;
}

arrow::Result<EpochPlan> Loader::PlanEpoch(int64_t epoch,
                                           const std::vector<ResumeRound>& resumed) const {
  if (epoch < 0) return arrow::Status::Invalid("epoch must be >= 0, got ", epoch);
  PlanConfig config = MakePlanConfig(epoch);
  config.resumed = resumed;
  return EpochPlan::Make(unit_rows_, config);
}

arrow::Result<std::unique_ptr<BatchStream>> Loader::StartEpoch(
    int64_t epoch, const std::vector<ResumeRound>& resumed) const {
  ARROW_ASSIGN_OR_RAISE(auto plan, PlanEpoch(epoch, resumed));
  return std::make_unique<EpochPipeline>(manifest_, std::move(plan), options_, stats_);
}

arrow::Status Loader::RestoreDeliveredDigest(const std::string& hex) {
  if (!stats_->RestoreDigest(hex)) {
    return arrow::Status::Invalid("delivered_digest must be 32 hex digits, got '", hex, "'");
  }
  return arrow::Status::OK();
}

}  // namespace stoker
