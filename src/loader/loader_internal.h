// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The engine's Loader: the public interface (stoker/loader.h) and the hooks mixtures, the
// server and the bindings use — the manifest, the compiled transforms, plans and streams of
// any rank or share, a loader with another shuffle window, the cache's warning and the
// restored digest of a resume.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"
#include "stoker/loader.h"

namespace stoker {

class BatchTargets;
class Manifest;
class Stats;
class TaskPool;
class TransformSpec;
class TuneState;
struct UnitSource;

/// stoker::Loader as the engine implements it (Loader::Make returns one).
class LoaderImpl final : public Loader {
 public:
  /// `tune`: the controller's state when it sizes this loader's streams (null: fixed).
  LoaderImpl(LoaderOptions options, std::shared_ptr<const UnitSource> source,
             std::shared_ptr<Stats> stats, CpuBudget cpu_budget,
             std::shared_ptr<TuneState> tune = nullptr);

  const LoaderOptions& options() const override { return options_; }
  const CpuBudget& cpu_budget() const override { return cpu_budget_; }
  const std::shared_ptr<arrow::Schema>& schema() const override;
  std::string filter_digest() const override;
  const std::vector<std::string>& ragged_columns() const override;
  int64_t num_rows() const override { return num_rows_; }
  int64_t num_batches() const override;
  arrow::Result<std::unique_ptr<BatchStream>> StartEpoch(
      int64_t epoch, const std::vector<ResumeRound>& resumed = {}) const override;
  StatsSnapshot stats() const override;
  arrow::Status WriteTrace(const std::string& path) const override;

  /// A warning the disk cache raised (writes turned off), once; empty otherwise (the binding
  /// raises it as a Python warning).
  std::string TakeCacheWarning() const;
  /// Continues stats().delivered_digest from a value saved before a resume (the binding's
  /// load_state_dict).
  arrow::Status RestoreDeliveredDigest(const std::string& hex);

  const Manifest& manifest() const;
  /// The compiled transform spec (its canonical form and digest key caches and servers).
  const TransformSpec& transforms() const;
  /// Digest of the codecs the workers decode; empty when there are none.
  const std::string& codecs_digest() const;
  /// The order of `epoch` for this rank; a pure function of dataset, options, epoch and the
  /// rounds of it consumed before a resume (empty for a fresh epoch).
  arrow::Result<EpochPlan> PlanEpoch(int64_t epoch,
                                     const std::vector<ResumeRound>& resumed = {}) const;

  /// What a stream serves: an epoch for some rank, possibly only some of its batches.
  struct StreamSpec {
    int64_t epoch = 0;
    std::vector<ResumeRound> resumed;
    /// The rank and world size (a server serves any; a local loader its options').
    int rank = 0;
    int world_size = 1;
    /// Only the batches b with shard <= (b / chunk) % shards < shard + span and
    /// b >= first_batch (shards = 1: every batch from first_batch on). How several servers
    /// split a plan, and a loader serving a run of `span` chunks of each `shards` itself
    /// (local first, remote for the rest: docs/autotune.md).
    int64_t shards = 1;
    int64_t shard = 0;
    int64_t span = 1;
    int64_t chunk = 1;
    int64_t first_batch = 0;
    /// > 0: chunks of whole windows instead (EpochPlan::WindowChunkEnds(chunk_rows)), so that
    /// the servers sharing a rank's epoch each decode their own windows; `chunk` and
    /// first_batch are then unused. The stream's batches are then *pieces*: the plan's batches
    /// cut at the chunk ends (a batch spanning two chunks is two pieces, one from each
    /// chunk's server, that the client joins), the pieces of chunk c served when
    /// shard <= c % shards < shard + span, from the piece that starts at rank-local row
    /// first_row on.
    int64_t chunk_rows = 0;
    int64_t first_row = 0;
    /// Where the batches end, as offsets into the rank's rows (PlanConfig::batch_ends;
    /// empty: every batch_size rows), and the buffers they are written into (null: their
    /// own). How a mixture's sources write into the mixed batches.
    std::vector<int64_t> batch_ends;
    std::shared_ptr<const BatchTargets> targets;

    /// An error naming what is out of range: the epoch, the rank and world size, the share.
    arrow::Status Validate() const;
    /// The batches of a plan of `plan_batches` this stream delivers.
    std::vector<int64_t> Batches(int64_t plan_batches) const;
  };
  /// What a stream follows: the plan (with StreamSpec::chunk_rows, one whose batches are the
  /// pieces), the batches of it the stream delivers, the rank's batch count and, with
  /// chunk_rows, where its chunks end (rank-local offsets: what a client needs to know which
  /// server serves which rows).
  struct PlannedStream {
    EpochPlan plan;
    std::vector<int64_t> batches;
    int64_t plan_batches = 0;
    std::vector<int64_t> chunk_ends;
  };
  arrow::Result<PlannedStream> PlanStream(const StreamSpec& spec) const;
  /// Starts a stream (see StreamSpec). Its work runs on `workers` when given (a pool several
  /// streams share: a mixture's sources), else on options().num_threads threads of its own,
  /// as many of them at work as the controller (tune()) finds needed.
  arrow::Result<std::unique_ptr<BatchStream>> StartStream(
      const StreamSpec& spec, std::shared_ptr<TaskPool> workers = nullptr) const;
  /// This loader with LoaderOptions::shuffle_window set to `rows`: the same dataset, filter
  /// counts and stats (its epochs count in this loader's), nothing read again. How a
  /// mixture gives each source its share of the mixture's window.
  arrow::Result<std::shared_ptr<LoaderImpl>> WithShuffleWindow(int64_t rows) const;
  /// Where batches are allocated (pinned under LoaderOptions::pinned_output): what a
  /// consumer that builds more of a batch's buffers (python/kjt.cc) allocates from.
  arrow::MemoryPool* output_pool() const;
  /// The controller's state (setting, decisions); null when the settings are fixed.
  const std::shared_ptr<TuneState>& tune() const { return tune_; }

 private:
  PlanConfig MakePlanConfig(int64_t epoch) const;

  LoaderOptions options_;
  std::shared_ptr<const UnitSource> source_;
  std::vector<int64_t> unit_rows_;
  int64_t num_rows_ = 0;
  std::shared_ptr<Stats> stats_;
  CpuBudget cpu_budget_;
  std::shared_ptr<TuneState> tune_;
};

/// The engine's implementation behind `loader` (every Loader is one).
inline const LoaderImpl& Internal(const Loader& loader) {
  return static_cast<const LoaderImpl&>(loader);
}
inline LoaderImpl& Internal(Loader& loader) { return static_cast<LoaderImpl&>(loader); }

}  // namespace stoker
