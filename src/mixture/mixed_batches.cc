// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixed_batches.h"

#include <arrow/util/logging.h>

#include <utility>

#include "assemble/column_types.h"
#include "assemble/slice_gather.h"

namespace stoker {

MixedBatches::MixedBatches(std::shared_ptr<arrow::Schema> schema,
                           std::shared_ptr<const MixtureLayout> layout, arrow::MemoryPool* pool)
    : layout_(std::move(layout)), pool_(pool) {
  for (const auto& field : schema->fields()) {
    // The columns GatherSlices copies as runs of values: scalar numbers.
    const auto fixed = GetFixedWidthLayout(*field->type());
    row_bytes_.push_back(fixed.ok() && field->type()->num_fields() == 0 ? fixed->row_bytes : 0);
  }
}

arrow::Result<std::shared_ptr<const MixedBatches::Columns>> MixedBatches::Get(int64_t b) {
  MutexLock lock(mutex_);
  auto it = batches_.find(b);
  if (it != batches_.end()) return it->second;
  if (b < 0 || b >= layout_->num_batches()) {
    return arrow::Status::IndexError("mixed batch ", b, " of ", layout_->num_batches());
  }
  ARROW_ASSIGN_OR_RAISE(auto buffers, AllocateColumns(layout_->batch_rows(b), row_bytes_, pool_));
  auto columns = std::make_shared<const Columns>(std::move(buffers));
  batches_.emplace(b, columns);
  return columns;
}

void MixedBatches::Release(int64_t b) {
  MutexLock lock(mutex_);
  batches_.erase(b);
  written_.erase(b);
}

void MixedBatches::Written(int64_t b, int64_t rows) {
  MutexLock lock(mutex_);
  int64_t& written = written_[b];
  written += rows;
  if (written >= layout_->batch_rows(b)) all_written_.NotifyAll();
}

bool MixedBatches::AllWritten(int64_t b) const {
  const auto it = written_.find(b);
  return it != written_.end() && it->second >= layout_->batch_rows(b);
}

bool MixedBatches::WaitWritten(int64_t b, std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mutex_);
  while (!AllWritten(b)) {
    if (!all_written_.WaitUntil(mutex_, deadline)) return AllWritten(b);
  }
  return true;
}

SourceTargets::SourceTargets(std::shared_ptr<MixedBatches> batches, std::vector<int> engine_column,
                             int num_engine_columns, std::vector<MixturePiece> pieces)
    : batches_(std::move(batches)),
      engine_column_(std::move(engine_column)),
      num_engine_columns_(num_engine_columns),
      pieces_(std::move(pieces)) {}

void SourceTargets::Done(int64_t batch) const {
  if (batch < 0 || batch >= static_cast<int64_t>(pieces_.size())) return;
  batches_->Written(pieces_[batch].batch, pieces_[batch].rows);
}

arrow::Result<OutputTarget> SourceTargets::For(int64_t batch) const {
  OutputTarget target;
  if (batch < 0 || batch >= static_cast<int64_t>(pieces_.size())) return target;
  const MixturePiece& piece = pieces_[batch];
  ARROW_ASSIGN_OR_RAISE(auto columns, batches_->Get(piece.batch));
  target.columns.resize(static_cast<size_t>(num_engine_columns_));
  for (size_t c = 0; c < engine_column_.size(); ++c) {
    const int e = engine_column_[c];
    ARROW_DCHECK_LT(e, num_engine_columns_);
    const int64_t width = batches_->row_bytes(static_cast<int>(c));
    if (e < 0 || width == 0) continue;
    target.columns[e] =
        arrow::SliceMutableBuffer((*columns)[c], piece.offset * width, piece.rows * width);
  }
  return target;
}

}  // namespace stoker
