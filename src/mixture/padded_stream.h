// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <chrono>
#include <cstdint>
#include <memory>

#include "stoker/batch_stream.h"

namespace stoker {

/// A rank's evaluation epoch with pad_to_equal_steps (docs/evaluation.md) over a stream of its
/// rows that does not pad itself (a mixture's): `num_batches` batches of `batch_size` rows
/// each, the first `real_rows` rows of them `inner`'s, every later one a copy of the last row
/// `inner` delivered, and the kValidColumn mask (false on the copies) appended after the data
/// columns. With `real_rows` 0, `inner` delivers the one row the padding copies (the row before
/// the rank's share), which no batch counts as real. Padding appends to the last real batch and
/// builds the batches after it; the real batches pass through but for the mask.
class PaddedStream final : public BatchStream {
 public:
  static arrow::Result<std::unique_ptr<PaddedStream>> Make(std::unique_ptr<BatchStream> inner,
                                                           int64_t real_rows, int64_t batch_size,
                                                           int64_t num_batches,
                                                           arrow::MemoryPool* pool);

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override;
  bool WaitReady(std::chrono::milliseconds timeout) override;
  int64_t num_batches() const override { return num_batches_; }
  /// The inner stream's rows, then batch_size per padded batch: the planned rows of a padded
  /// plan (EpochPlan::rank_rows()), as a Loader's padded epoch counts them.
  int64_t planned_rows_delivered() const override { return inner_planned_ + pad_rows_; }

 private:
  PaddedStream(std::unique_ptr<BatchStream> inner, int64_t real_rows, int64_t batch_size,
               int64_t num_batches, arrow::MemoryPool* pool);
  /// `batch`'s rows, padded to batch_size with copies of its last row, and the mask: the first
  /// `valid` rows real.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Pad(const arrow::RecordBatch& batch,
                                                         int64_t valid) const;

  std::unique_ptr<BatchStream> inner_;
  const int64_t real_rows_;
  const int64_t batch_size_;
  const int64_t num_batches_;
  arrow::MemoryPool* const pool_;
  bool inner_done_ = false;
  int64_t delivered_ = 0;
  int64_t rows_read_ = 0;  // rows the inner stream delivered
  int64_t inner_planned_ = 0;  // the inner stream's planned rows at its last batch
  int64_t pad_rows_ = 0;       // copies delivered
  std::shared_ptr<arrow::RecordBatch> last_row_;  // the last row read, which padding copies
};

}  // namespace stoker
