// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>

#include "stoker/batch_stream.h"
#include "stoker/manifest.h"
#include "stoker/options.h"
#include "stoker/plan.h"
#include "stoker/stats.h"

namespace stoker {

/// Turns a Parquet dataset into exact, deterministic, shuffled batches, one epoch at a time.
///
///   ARROW_ASSIGN_OR_RAISE(auto loader, stoker::Loader::Make(options));
///   ARROW_ASSIGN_OR_RAISE(auto stream, loader->StartEpoch(epoch));
///   while (true) {
///     ARROW_ASSIGN_OR_RAISE(auto batch, stream->Next());
///     if (batch == nullptr) break;
///     ...
///   }
class Loader {
 public:
  /// Validates the options, resolves the source and reads every footer. All errors about the
  /// dataset and the options surface here, not mid-epoch.
  static arrow::Result<std::shared_ptr<Loader>> Make(LoaderOptions options);

  const LoaderOptions& options() const { return options_; }
  const Manifest& manifest() const { return *manifest_; }
  /// Columns of every batch.
  const std::shared_ptr<arrow::Schema>& schema() const { return manifest_->schema(); }
  /// Batches per epoch for this rank (the same for every epoch and every rank).
  int64_t num_batches() const;
  /// The order of `epoch` for this rank; a pure function of dataset, options, epoch and the
  /// rounds of it consumed before a resume (empty for a fresh epoch).
  arrow::Result<EpochPlan> PlanEpoch(int64_t epoch,
                                     const std::vector<ResumeRound>& resumed = {}) const;
  /// Starts reading `epoch` (the rest of it after `resumed`); the stream yields its batches in
  /// plan order.
  arrow::Result<std::unique_ptr<BatchStream>> StartEpoch(
      int64_t epoch, const std::vector<ResumeRound>& resumed = {}) const;
  /// Counters summed over every epoch so far.
  StatsSnapshot stats() const { return stats_->Snapshot(); }
  /// Continues stats().delivered_digest from a value saved before a resume.
  arrow::Status RestoreDeliveredDigest(const std::string& hex);

 private:
  Loader(LoaderOptions options, std::shared_ptr<const Manifest> manifest);
  PlanConfig MakePlanConfig(int64_t epoch) const;

  LoaderOptions options_;
  std::shared_ptr<const Manifest> manifest_;
  std::vector<int64_t> unit_rows_;
  std::shared_ptr<Stats> stats_;
};

}  // namespace stoker
