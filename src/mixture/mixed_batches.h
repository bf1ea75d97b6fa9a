// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/buffer.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "assemble/assembler.h"
#include "mixture/mixture_layout.h"
#include "util/thread_annotations.h"

namespace stoker {

/// The buffers of one mixture epoch's batches, which the sources' engines write their rows
/// into, so that a mixed batch's fixed-width columns are written once, not assembled by each
/// source and copied again (docs/mixtures.md). Each batch gets one allocation
/// holding every column of the output that is scalar fixed-width numbers (not bool, not
/// fixed-size lists: GatherSlices concatenates those), each at a 64-byte-aligned start, made by
/// whichever asks first: a source's engine assembling its piece, or the mixture gathering the
/// batch. The mixture drops it from here once it has gathered the batch (the batch's arrays keep it
/// alive). Thread-safe.
///
/// Bounds: a batch's buffers exist from its first piece's assembly to its gathering; the
/// engines assemble at most their prefetch ahead.
class MixedBatches {
 public:
  /// Per output column, the buffer of its values in one batch (null where the column is not
  /// fixed-width numbers).
  using Columns = std::vector<std::shared_ptr<arrow::Buffer>>;

  MixedBatches(std::shared_ptr<arrow::Schema> schema, std::shared_ptr<const MixtureLayout> layout,
               arrow::MemoryPool* pool);

  /// Bytes a row of output column c takes in these buffers; 0 when it has none.
  int64_t row_bytes(int c) const { return row_bytes_[c]; }
  /// Batch b's buffers, made on the first call.
  arrow::Result<std::shared_ptr<const Columns>> Get(int64_t b) EXCLUDES(mutex_);
  /// Forgets batch b's buffers (they live on in whatever holds them) and its count of rows
  /// written.
  void Release(int64_t b) EXCLUDES(mutex_);
  /// Counts `rows` of batch b as written (their engine batch is ready to be taken, or
  /// failed).
  void Written(int64_t b, int64_t rows) EXCLUDES(mutex_);
  /// True once every row of batch b is written (one wake-up for the consumer, not one per
  /// source), false when `deadline` passed first.
  bool WaitWritten(int64_t b, std::chrono::steady_clock::time_point deadline) EXCLUDES(mutex_);

 private:
  bool AllWritten(int64_t b) const REQUIRES(mutex_);

  const std::shared_ptr<const MixtureLayout> layout_;
  arrow::MemoryPool* const pool_;
  std::vector<int64_t> row_bytes_;
  mutable Mutex mutex_;
  std::map<int64_t, std::shared_ptr<const Columns>> batches_ GUARDED_BY(mutex_);
  std::map<int64_t, int64_t> written_ GUARDED_BY(mutex_);  // rows written per batch
  /// Signalled when a batch's last rows are written.
  CondVar all_written_;
};

/// Where one source engine's epoch writes its batches (a BatchTargets for
/// LoaderImpl::StreamSpec): engine batch k < pieces.size() is pieces[k] of the mixture's layout,
/// its fixed-width columns written into that mixed batch's buffers at the piece's offset;
/// later batches (a source's rows past what the epoch takes) get buffers of their own.
class SourceTargets final : public BatchTargets {
 public:
  /// `engine_column[c]`: the engine's column that output column c comes from (-1: none, or
  /// of another type).
  SourceTargets(std::shared_ptr<MixedBatches> batches, std::vector<int> engine_column,
                int num_engine_columns, std::vector<MixturePiece> pieces);

  arrow::Result<OutputTarget> For(int64_t batch) const override;
  void Done(int64_t batch) const override;

 private:
  const std::shared_ptr<MixedBatches> batches_;
  const std::vector<int> engine_column_;
  const int num_engine_columns_;
  const std::vector<MixturePiece> pieces_;
};

}  // namespace stoker
