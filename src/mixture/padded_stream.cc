// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/padded_stream.h"

#include <arrow/array/concatenate.h>
#include <arrow/array/util.h>
#include <arrow/builder.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "stoker/options.h"

namespace stoker {

arrow::Result<std::unique_ptr<PaddedStream>> PaddedStream::Make(std::unique_ptr<BatchStream> inner,
                                                                int64_t real_rows,
                                                                int64_t batch_size,
                                                                int64_t num_batches,
                                                                arrow::MemoryPool* pool) {
  if (inner == nullptr || pool == nullptr || batch_size < 1 || real_rows < 0 ||
      num_batches < 0 || real_rows > num_batches * batch_size) {
    return arrow::Status::Invalid("a padded stream needs an inner stream, a pool, batch_size >= 1 ",
                                  "and real_rows <= num_batches * batch_size; got real_rows ",
                                  real_rows, ", batch_size ", batch_size, ", num_batches ",
                                  num_batches);
  }
  return std::unique_ptr<PaddedStream>(
      new PaddedStream(std::move(inner), real_rows, batch_size, num_batches, pool));
}

PaddedStream::PaddedStream(std::unique_ptr<BatchStream> inner, int64_t real_rows,
                           int64_t batch_size, int64_t num_batches, arrow::MemoryPool* pool)
    : inner_(std::move(inner)),
      real_rows_(real_rows),
      batch_size_(batch_size),
      num_batches_(num_batches),
      pool_(pool) {}

bool PaddedStream::WaitReady(std::chrono::milliseconds timeout) {
  return inner_done_ || delivered_ >= num_batches_ || inner_->WaitReady(timeout);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PaddedStream::Next() {
  if (delivered_ >= num_batches_) return nullptr;
  std::shared_ptr<arrow::RecordBatch> batch;
  if (!inner_done_) {
    ARROW_ASSIGN_OR_RAISE(batch, inner_->Next());
    inner_done_ = batch == nullptr;
  }
  int64_t valid = 0;
  const bool read = batch != nullptr && batch->num_rows() > 0;
  if (read) {
    valid = std::clamp<int64_t>(real_rows_ - rows_read_, 0, batch->num_rows());
    rows_read_ += batch->num_rows();
    inner_planned_ = inner_->planned_rows_delivered();
    last_row_ = batch->Slice(batch->num_rows() - 1, 1);
  } else {
    if (last_row_ == nullptr) {
      return arrow::Status::Invalid("padding needs a row to copy, and this rank's stream "
                                    "delivered none");
    }
    batch = last_row_;
  }
  if (batch->num_rows() > batch_size_) {
    return arrow::Status::Invalid("a padded stream's batch holds ", batch->num_rows(),
                                  " rows, more than batch_size ", batch_size_);
  }
  ARROW_ASSIGN_OR_RAISE(auto padded, Pad(*batch, valid));
  pad_rows_ += read ? batch_size_ - batch->num_rows() : batch_size_;
  ++delivered_;
  if (delivered_ == num_batches_) inner_.reset();  // stops the sources' read-ahead
  return padded;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PaddedStream::Pad(
    const arrow::RecordBatch& batch, int64_t valid) const {
  const int64_t rows = batch.num_rows();
  const int64_t copies = batch_size_ - rows;
  arrow::ArrayVector columns;
  columns.reserve(static_cast<size_t>(batch.num_columns()) + 1);
  for (const auto& column : batch.columns()) {
    if (copies == 0) {
      columns.push_back(column);
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto last, column->GetScalar(rows - 1));
    ARROW_ASSIGN_OR_RAISE(auto repeated, arrow::MakeArrayFromScalar(*last, copies, pool_));
    ARROW_ASSIGN_OR_RAISE(auto whole, arrow::Concatenate({column, repeated}, pool_));
    columns.push_back(std::move(whole));
  }
  arrow::BooleanBuilder mask(pool_);
  ARROW_RETURN_NOT_OK(mask.Reserve(batch_size_));
  ARROW_RETURN_NOT_OK(mask.AppendValues(valid, true));
  ARROW_RETURN_NOT_OK(mask.AppendValues(batch_size_ - valid, false));
  ARROW_ASSIGN_OR_RAISE(auto mask_array, mask.Finish());
  columns.push_back(std::move(mask_array));
  ARROW_ASSIGN_OR_RAISE(auto schema, batch.schema()->AddField(
                                         batch.num_columns(),
                                         arrow::field(kValidColumn, arrow::boolean(), false)));
  return arrow::RecordBatch::Make(std::move(schema), batch_size_, std::move(columns));
}

}  // namespace stoker
