// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/batch_stream.h"
#include "stoker/cpu_budget.h"
#include "stoker/options.h"
#include "stoker/resume.h"
#include "stoker/stats.h"

namespace stoker {

// The engine's internals, which this header names but an embedder never needs to see.
class BatchTargets;
class EpochPlan;
class Manifest;
class Stats;
class TaskPool;
class TransformSpec;
struct PlanConfig;
struct UnitSource;

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

  /// The options as resolved by Make: num_threads 0 becomes cpu_budget().threads.
  const LoaderOptions& options() const { return options_; }
  /// The CPU budget read at Make (affinity, cgroup quota, ranks per node).
  const CpuBudget& cpu_budget() const { return cpu_budget_; }
  const Manifest& manifest() const;
  /// Columns of every batch (after the transforms, then the plan columns: kValidColumn,
  /// kFileIndexColumn, kRowInFileColumn when asked for).
  const std::shared_ptr<arrow::Schema>& schema() const;
  /// The compiled transform spec (its canonical form and digest key caches and servers).
  const TransformSpec& transforms() const;
  /// Digest of the filter's serialized expression ("" without a filter).
  std::string filter_digest() const;
  /// Output columns delivered to tensors as values + offsets.
  const std::vector<std::string>& ragged_columns() const;
  /// Rows of an epoch (all ranks): those matching the filter.
  int64_t num_rows() const { return num_rows_; }
  /// Batches per epoch for this rank (the same for every epoch; the same for every rank
  /// except with LoaderMode::kEval without pad_to_equal_steps, where they may differ by one).
  int64_t num_batches() const;
  /// The order of `epoch` for this rank; a pure function of dataset, options, epoch and the
  /// rounds of it consumed before a resume (empty for a fresh epoch).
  arrow::Result<EpochPlan> PlanEpoch(int64_t epoch,
                                     const std::vector<ResumeRound>& resumed = {}) const;
  /// Starts reading `epoch` (the rest of it after `resumed`); the stream yields its batches in
  /// plan order.
  arrow::Result<std::unique_ptr<BatchStream>> StartEpoch(
      int64_t epoch, const std::vector<ResumeRound>& resumed = {}) const;

  /// What a stream serves: an epoch for some rank, possibly only some of its batches.
  struct StreamSpec {
    int64_t epoch = 0;
    std::vector<ResumeRound> resumed;
    /// The rank and world size (a server serves any; a local loader its options').
    int rank = 0;
    int world_size = 1;
    /// Only the batches b with (b / chunk) % shards == shard and b >= first_batch
    /// (shards = 1: every batch from first_batch on). How several servers split a plan.
    int64_t shards = 1;
    int64_t shard = 0;
    int64_t chunk = 1;
    int64_t first_batch = 0;
    /// Where the batches end, as offsets into the rank's rows (PlanConfig::batch_ends;
    /// empty: every batch_size rows), and the buffers they are written into (null: their
    /// own). How a mixture's sources write into the mixed batches.
    std::vector<int64_t> batch_ends;
    std::shared_ptr<const BatchTargets> targets;
  };
  /// The plan a stream follows, and the batches of it the stream delivers.
  arrow::Result<std::pair<EpochPlan, std::vector<int64_t>>> PlanStream(
      const StreamSpec& spec) const;
  /// Starts a stream (see StreamSpec). Its work runs on `workers` when given (a pool several
  /// streams share: a mixture's sources), else on options().num_threads threads of its own.
  arrow::Result<std::unique_ptr<BatchStream>> StartStream(
      const StreamSpec& spec, std::shared_ptr<TaskPool> workers = nullptr) const;
  /// This loader with LoaderOptions::shuffle_window set to `rows`: the same dataset, filter
  /// counts and stats (its epochs count in this loader's), nothing read again. How a
  /// mixture gives each source its share of the mixture's window.
  arrow::Result<std::shared_ptr<Loader>> WithShuffleWindow(int64_t rows) const;
  /// Counters summed over every epoch so far.
  StatsSnapshot stats() const;
  /// Writes the kept spans of work as Chrome trace JSON (ui.perfetto.dev opens it); an
  /// error when options().trace_events is 0.
  arrow::Status WriteTrace(const std::string& path) const;
  /// A warning the disk cache raised (writes turned off), once; empty otherwise.
  std::string TakeCacheWarning() const;
  /// Continues stats().delivered_digest from a value saved before a resume.
  arrow::Status RestoreDeliveredDigest(const std::string& hex);

 private:
  Loader(LoaderOptions options, std::shared_ptr<const UnitSource> source,
         std::shared_ptr<Stats> stats);
  PlanConfig MakePlanConfig(int64_t epoch) const;

  LoaderOptions options_;
  std::shared_ptr<const UnitSource> source_;
  std::vector<int64_t> unit_rows_;
  int64_t num_rows_ = 0;
  std::shared_ptr<Stats> stats_;
  CpuBudget cpu_budget_;
};

}  // namespace stoker
