// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "stoker/batch_stream.h"

namespace stoker {

/// Batches of a rank's evaluation epoch with pad_to_equal_steps (docs/evaluation.md) over a
/// stream of its real rows that does not pad itself (a mixture's): batch i holds
/// real_rows[i] rows of `inner` (one inner batch, which must hold exactly that many), then
/// copies of the pad row up to `batch_size`, and the kValidColumn mask (false on the copies)
/// appended after the data columns. The pad row is the position EpochPlan pads with (the
/// share's last row, or the row before an empty share); `pad_row` reads it, once, when the
/// first copy is needed. Whichever batches of the rank a stream delivers, a batch is the same.
class PaddedStream final : public BatchStream {
 public:
  using PadRow = std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>()>;

  static arrow::Result<std::unique_ptr<PaddedStream>> Make(std::unique_ptr<BatchStream> inner,
                                                           std::vector<int64_t> real_rows,
                                                           int64_t batch_size, PadRow pad_row,
                                                           arrow::MemoryPool* pool);

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override;
  bool WaitReady(std::chrono::milliseconds timeout) override;
  int64_t num_batches() const override { return static_cast<int64_t>(real_rows_.size()); }
  /// batch_size per batch delivered: the planned rows of a padded plan (EpochPlan::rank_rows()),
  /// as a Loader's padded epoch counts them.
  int64_t planned_rows_delivered() const override { return delivered_ * batch_size_; }
  StreamWork work() const override { return inner_ != nullptr ? inner_->work() : StreamWork{}; }

 private:
  PaddedStream(std::unique_ptr<BatchStream> inner, std::vector<int64_t> real_rows,
               int64_t batch_size, PadRow pad_row, arrow::MemoryPool* pool);
  /// `batch` (its `valid` rows real) padded to batch_size with copies of the pad row, and the
  /// mask.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Pad(
      const std::shared_ptr<arrow::RecordBatch>& batch, int64_t valid);

  std::unique_ptr<BatchStream> inner_;
  const std::vector<int64_t> real_rows_;
  const int64_t batch_size_;
  PadRow pad_row_;
  arrow::MemoryPool* const pool_;
  std::shared_ptr<arrow::RecordBatch> pad_;  // the pad row, once read
  int64_t delivered_ = 0;
};

}  // namespace stoker
