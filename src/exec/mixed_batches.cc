// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/mixed_batches.h"

#include <arrow/util/logging.h>

#include <utility>

#include "assemble/column_types.h"

namespace stoker {

namespace {

constexpr int64_t kAlignment = 64;

}  // namespace

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
  const int64_t rows = layout_->batch_rows(b);
  std::vector<int64_t> start(row_bytes_.size());
  int64_t bytes = 0;
  for (size_t c = 0; c < row_bytes_.size(); ++c) {
    start[c] = bytes;
    // One more line between columns: columns a power of two apart (4,096 rows of 8 bytes)
    // would map to the same cache sets, and the engines' scatter writes a row of every
    // column at once (measured: the gather took twice as long without it).
    if (row_bytes_[c] > 0) {
      bytes += (rows * row_bytes_[c] + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
    }
  }
  auto columns = std::make_shared<Columns>(row_bytes_.size());
  if (bytes > 0) {
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> arena,
                          arrow::AllocateBuffer(bytes, pool_));
    for (size_t c = 0; c < row_bytes_.size(); ++c) {
      if (row_bytes_[c] > 0) {
        (*columns)[c] = arrow::SliceMutableBuffer(arena, start[c], rows * row_bytes_[c]);
      }
    }
  }
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
