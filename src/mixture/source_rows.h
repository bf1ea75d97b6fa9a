// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "assemble/slice_gather.h"
#include "exec/task_pool.h"
#include "loader/loader_internal.h"
#include "mixture/mixed_batches.h"
#include "mixture/mixture_layout.h"
#include "stoker/batch_stream.h"
#include "stoker/loader.h"

namespace stoker {

/// One mixture source as an endless stream Z of rows: its own epochs 0, 1, 2, ... back to
/// back, each in its own plan's order (the source's loader has world size 1). Row z of Z is
/// row z mod T of the source's epoch z / T (T rows per epoch). Take() continues the engine
/// epoch being read when `start` is where the last Take ended, and otherwise starts the
/// engine at `start` (a resume of that epoch after z mod T rows: nothing before it is read).
///
/// Given the mixture epoch's layout, each engine epoch is cut at the mixed batches'
/// boundaries: its batch k is the k-th piece of the layout it reaches, written straight into
/// that mixed batch's buffers (MixedBatches) at the piece's offset; rows past the pieces
/// (what a downsampled source's epoch leaves) come in batches of the loader's batch_size.
///
/// Bounds: at most one engine epoch is open (its read-ahead is the source loader's
/// `prefetch` batches), plus the one engine batch being handed out. The engine's work runs
/// on the mixture's pool of workers, which every source shares. Rows are handed out as
/// slices of the engine's batches, never copied here. Not thread-safe: one reader.
class SourceRows {
 public:
  /// Hands out `loader`'s rows with their columns in the order of `schema` (the mixture's
  /// output), its engine's epochs running on `workers`: a KeyError names a column of
  /// `schema` the source does not give. With `batches` and `pieces` (this source's pieces of
  /// the mixture epoch's layout, which outlive this), the engine writes into the mixed
  /// batches; without, its batches are its own.
  static arrow::Result<SourceRows> Make(std::shared_ptr<const Loader> loader,
                                        const arrow::Schema& schema,
                                        std::shared_ptr<TaskPool> workers,
                                        std::shared_ptr<MixedBatches> batches = nullptr,
                                        const std::vector<MixturePiece>* pieces = nullptr);

  /// Starts the engine that gives row `start` of Z (at `start`, or the source's next epoch
  /// when this one is all taken) unless it runs already: what Take(start, ...) would do
  /// first, without waiting for any row.
  arrow::Status Prepare(int64_t start);
  /// True when Take(start, ...) has its first rows at hand (at most the rest of the piece
  /// may still wait for a second engine batch), false when `deadline` passed first. Starts
  /// the engine at `start` when it is not there.
  arrow::Result<bool> WaitReady(int64_t start, std::chrono::steady_clock::time_point deadline);

  /// Appends rows [start, start + count) of Z to `out` as slices. Blocks on the engine.
  arrow::Status Take(int64_t start, int64_t count, std::vector<BatchSlice>* out);

 private:
  SourceRows(std::shared_ptr<const Loader> loader, std::vector<int> columns,
             std::vector<int> in_place, std::shared_ptr<arrow::Schema> schema,
             std::shared_ptr<TaskPool> workers, std::shared_ptr<MixedBatches> batches,
             const std::vector<MixturePiece>* pieces);
  /// Cuts the engine epoch that starts at row `start` of Z (and ends with the source's
  /// epoch) at the layout's pieces: its batch ends, and where each batch goes.
  void CutAtPieces(int64_t start, LoaderImpl::StreamSpec* spec) const;
  /// Starts the engine's epoch `epoch` after its first `skipped` rows.
  arrow::Status StartEngine(int64_t epoch, int64_t skipped);
  /// Starts the engine at row `start` of Z.
  arrow::Status Open(int64_t start);
  /// Starts the source's next epoch when every batch of this one is taken.
  arrow::Status NextEpochIfDone();
  /// Takes the next engine batch, going on into the source's next epoch at the end of one.
  arrow::Status Fill();

  std::shared_ptr<const Loader> loader_;
  /// Index in the engine's batches of each output column.
  std::vector<int> columns_;
  /// columns_, less the columns whose type differs from the output's (-1): what the engine
  /// may write into the mixed batches.
  std::vector<int> in_place_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<TaskPool> workers_;
  std::shared_ptr<MixedBatches> batches_;    // null: the engine's batches are its own
  const std::vector<MixturePiece>* pieces_;  // this source's pieces, with batches_
  std::unique_ptr<BatchStream> epoch_;       // the engine epoch being read; null before Open
  int64_t source_epoch_ = 0;
  int64_t taken_ = 0;                          // batches of epoch_ taken
  int64_t position_ = -1;                      // the row of Z that batch_'s first unconsumed row is
  std::shared_ptr<arrow::RecordBatch> batch_;  // the engine batch being handed out
  int64_t offset_ = 0;                         // its first row not handed out yet
};

}  // namespace stoker
