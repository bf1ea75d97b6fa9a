// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/padded_stream.h"

#include <arrow/array/concatenate.h>
#include <arrow/array/util.h>
#include <arrow/builder.h>

#include <utility>

#include "stoker/options.h"

namespace stoker {

arrow::Result<std::unique_ptr<PaddedStream>> PaddedStream::Make(std::unique_ptr<BatchStream> inner,
                                                                std::vector<int64_t> real_rows,
                                                                int64_t batch_size, PadRow pad_row,
                                                                arrow::MemoryPool* pool) {
  if (inner == nullptr || pool == nullptr || pad_row == nullptr || batch_size < 1) {
    return arrow::Status::Invalid(
        "a padded stream needs an inner stream, a pad row, a pool and "
        "batch_size >= 1");
  }
  for (const int64_t rows : real_rows) {
    if (rows < 0 || rows > batch_size) {
      return arrow::Status::Invalid("a padded batch holds 0 to batch_size (", batch_size,
                                    ") real rows, got ", rows);
    }
  }
  return std::unique_ptr<PaddedStream>(new PaddedStream(std::move(inner), std::move(real_rows),
                                                        batch_size, std::move(pad_row), pool));
}

PaddedStream::PaddedStream(std::unique_ptr<BatchStream> inner, std::vector<int64_t> real_rows,
                           int64_t batch_size, PadRow pad_row, arrow::MemoryPool* pool)
    : inner_(std::move(inner)),
      real_rows_(std::move(real_rows)),
      batch_size_(batch_size),
      pad_row_(std::move(pad_row)),
      pool_(pool) {}

bool PaddedStream::WaitReady(std::chrono::milliseconds timeout) {
  if (delivered_ >= num_batches() || real_rows_[static_cast<size_t>(delivered_)] == 0) return true;
  return inner_->WaitReady(timeout);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PaddedStream::Next() {
  if (delivered_ >= num_batches()) return nullptr;
  const int64_t want = real_rows_[static_cast<size_t>(delivered_)];
  std::shared_ptr<arrow::RecordBatch> batch;
  if (want > 0) {
    ARROW_ASSIGN_OR_RAISE(batch, inner_->Next());
    if (batch == nullptr || batch->num_rows() != want) {
      return arrow::Status::Invalid("padded batch ", delivered_, " expected ", want,
                                    " real rows, the stream gave ",
                                    batch == nullptr ? 0 : batch->num_rows());
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto padded, Pad(batch, want));
  ++delivered_;
  if (delivered_ == num_batches()) inner_.reset();  // stops the sources' read-ahead
  return padded;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> PaddedStream::Pad(
    const std::shared_ptr<arrow::RecordBatch>& batch, int64_t valid) {
  const int64_t copies = batch_size_ - valid;
  if (copies > 0 && pad_ == nullptr) {
    ARROW_ASSIGN_OR_RAISE(pad_, pad_row_());
    if (pad_ == nullptr || pad_->num_rows() != 1) {
      return arrow::Status::Invalid("padding needs the one row it copies, and its stream gave ",
                                    pad_ == nullptr ? 0 : pad_->num_rows());
    }
  }
  const auto& shape = batch != nullptr ? batch : pad_;
  arrow::ArrayVector columns;
  columns.reserve(static_cast<size_t>(shape->num_columns()) + 1);
  for (int i = 0; i < shape->num_columns(); ++i) {
    if (copies == 0) {
      columns.push_back(batch->column(i));
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto value, pad_->column(i)->GetScalar(0));
    ARROW_ASSIGN_OR_RAISE(auto repeated, arrow::MakeArrayFromScalar(*value, copies, pool_));
    if (batch == nullptr) {
      columns.push_back(std::move(repeated));
      continue;
    }
    ARROW_ASSIGN_OR_RAISE(auto whole, arrow::Concatenate({batch->column(i), repeated}, pool_));
    columns.push_back(std::move(whole));
  }
  arrow::BooleanBuilder mask(pool_);
  ARROW_RETURN_NOT_OK(mask.Reserve(batch_size_));
  ARROW_RETURN_NOT_OK(mask.AppendValues(valid, true));
  ARROW_RETURN_NOT_OK(mask.AppendValues(copies, false));
  ARROW_ASSIGN_OR_RAISE(auto mask_array, mask.Finish());
  columns.push_back(std::move(mask_array));
  ARROW_ASSIGN_OR_RAISE(
      auto schema, shape->schema()->AddField(shape->num_columns(),
                                             arrow::field(kValidColumn, arrow::boolean(), false)));
  return arrow::RecordBatch::Make(std::move(schema), batch_size_, std::move(columns));
}

}  // namespace stoker
