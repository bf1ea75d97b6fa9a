// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "mixture/mixed_batches.h"
#include "mixture/mixture_layout.h"
#include "mixture/mixture_plan.h"
#include "mixture/source_rows.h"
#include "plan/plan.h"
#include "stoker/batch_stream.h"
#include "stoker/loader.h"
#include "util/thread_annotations.h"

namespace stoker {

/// What every epoch of a mixture reads (docs/mixtures.md): the sources' loaders (world size
/// 1 each), the plan of which source fills each position, and the batches' shape.
struct MixtureConfig {
  /// One loader per source, in the plan's source order; the first one's schema is the
  /// output's, the others give the same columns (any order).
  std::vector<std::shared_ptr<const Loader>> sources;
  /// Where epoch e starts in source s's stream of rows: e * strides[s] (whole source epochs,
  /// so every mixture epoch starts a fresh source epoch).
  std::vector<int64_t> strides;
  std::shared_ptr<const MixturePlan> plan;
  int64_t batch_size = 1;
  bool drop_last = false;
  /// Worker threads of each epoch, which all the sources' engines share: the mixture's
  /// num_threads is the total, as a Loader's (>= 1).
  int num_threads = 1;
  /// Where the mixed batches' buffers come from.
  arrow::MemoryPool* pool = nullptr;
};

/// The config of a mixture of `sources` (loaders of world size 1, each built with the
/// mixture's options) under `plan`; batch_size, drop_last and num_threads are the first
/// loader's (each source's engine keeps its own prefetch). Each source is read through a copy of
/// its loader whose shuffle window is its share of the epoch's positions times the mixture's window
/// (at least 1 row): a mixed batch draws from all the sources' windows at once, so together they
/// hold about one Loader's window, not one each (three full windows measured 3x the page faults and
/// cache misses of one Loader on the same rows). `strides` are whole source epochs: ceil(rows / T)
/// * T.
arrow::Result<std::shared_ptr<const MixtureConfig>> MakeMixtureConfig(
    const std::vector<std::shared_ptr<const Loader>>& sources, const MixturePlan& plan,
    arrow::MemoryPool* pool);

/// Rows each source delivered and batches delivered, summed over the epochs that share it
/// (a mixture loader's life). Thread-safe.
class MixtureTally {
 public:
  explicit MixtureTally(int num_sources) : rows_(static_cast<size_t>(num_sources)) {}
  void Add(const std::vector<int64_t>& rows);
  std::vector<int64_t> rows() const;
  int64_t batches() const { return batches_.load(std::memory_order_relaxed); }

 private:
  std::vector<std::atomic<int64_t>> rows_;
  std::atomic<int64_t> batches_{0};
};

/// One epoch of a mixture for one rank, a BatchStream like a Loader's epoch. Its layout
/// (MixtureLayout, computed at the start from the plan and the rank's segments) says what
/// each batch takes from each source; the sources' engines are cut at those pieces and write
/// their fixed-width columns straight into the batches' buffers (MixedBatches). Next() takes
/// the batch's pieces from the sources (SourceRows) in source order and gathers them
/// (GatherSlices: only what the engines could not write in place, variable-width columns and
/// any with nulls, is copied, on the consumer's thread). Nothing depends on threads or
/// timing: the batches are a pure function of the config, the epoch and the segments.
///
/// Bounds: no mixed batch is held ahead of the consumer; each source's engine holds its own
/// bounds (its prefetch pieces, one epoch open at a time), and a mixed batch's buffers exist
/// from its first piece's assembly on. Threads: config.num_threads workers, one pool every
/// source's engine submits its tasks to, and none of its own. Next() and WaitReady() are
/// called by one consumer; destroying the stream stops the sources' engines.
class MixtureStream final : public BatchStream {
 public:
  /// Starts `epoch` for the rank whose positions are `segments` (begin < end each, in order);
  /// delivered batches are counted in `tally`.
  static arrow::Result<std::unique_ptr<MixtureStream>> Make(
      std::shared_ptr<const MixtureConfig> config, int64_t epoch, std::vector<Segment> segments,
      std::shared_ptr<MixtureTally> tally);
  ~MixtureStream() override;

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override EXCLUDES(mutex_);
  bool WaitReady(std::chrono::milliseconds timeout) override EXCLUDES(mutex_);
  int64_t num_batches() const override { return layout_->num_batches(); }
  int64_t planned_rows_delivered() const override EXCLUDES(mutex_);

 private:
  struct Mixed {
    std::shared_ptr<arrow::RecordBatch> batch;
    std::vector<int64_t> source_rows;  // rows of each source in it
  };

  MixtureStream(std::shared_ptr<const MixtureConfig> config,
                std::shared_ptr<const MixtureLayout> layout, std::shared_ptr<MixedBatches> batches,
                std::vector<SourceRows> sources, std::shared_ptr<MixtureTally> tally);
  /// Source s's next piece of the layout when it is in batch b; null otherwise.
  const MixturePiece* NextPiece(size_t s, int64_t b) const;
  /// Starts the engines of the sources whose next piece is in batch b, where they do not run
  /// yet (a segment's start, a source's next epoch), so that they read at once.
  arrow::Status PrepareSources(int64_t b);
  /// Batch b of the layout (the batches before it are assembled): waits for the sources'
  /// pieces of it.
  arrow::Result<Mixed> Assemble(int64_t b);

  const std::shared_ptr<const MixtureConfig> config_;
  /// What each batch takes from each source (computed once, at the epoch's start).
  const std::shared_ptr<const MixtureLayout> layout_;
  /// The batches' buffers the sources' engines write into.
  const std::shared_ptr<MixedBatches> batches_;
  const std::shared_ptr<MixtureTally> tally_;

  // The consumer's own (Next and WaitReady run on one thread at a time): each source's
  // reader, its next piece of the layout, and the next batch to assemble.
  std::vector<SourceRows> sources_;
  std::vector<size_t> next_piece_;
  int64_t next_batch_ = 0;

  mutable Mutex mutex_;
  arrow::Status error_ GUARDED_BY(mutex_);
  int64_t delivered_ GUARDED_BY(mutex_) = 0;
  int64_t rows_delivered_ GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
