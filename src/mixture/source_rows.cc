// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/source_rows.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "loader/loader_internal.h"

namespace stoker {

arrow::Result<SourceRows> SourceRows::Make(std::shared_ptr<const Loader> loader,
                                           const arrow::Schema& schema,
                                           std::shared_ptr<TaskPool> workers,
                                           std::shared_ptr<MixedBatches> batches,
                                           const std::vector<MixturePiece>* pieces) {
  const arrow::Schema& own = *loader->schema();
  std::vector<int> columns;
  std::vector<int> in_place;
  for (const auto& field : schema.fields()) {
    const int i = own.GetFieldIndex(field->name());
    if (i < 0)
      return arrow::Status::KeyError("a mixture source has no column '", field->name(), "'");
    columns.push_back(i);
    in_place.push_back(own.field(i)->type()->Equals(*field->type()) ? i : -1);
  }
  if (pieces == nullptr) batches.reset();
  return SourceRows(std::move(loader), std::move(columns), std::move(in_place),
                    arrow::schema(schema.fields()), std::move(workers), std::move(batches), pieces);
}

SourceRows::SourceRows(std::shared_ptr<const Loader> loader, std::vector<int> columns,
                       std::vector<int> in_place, std::shared_ptr<arrow::Schema> schema,
                       std::shared_ptr<TaskPool> workers, std::shared_ptr<MixedBatches> batches,
                       const std::vector<MixturePiece>* pieces)
    : loader_(std::move(loader)),
      columns_(std::move(columns)),
      in_place_(std::move(in_place)),
      schema_(std::move(schema)),
      workers_(std::move(workers)),
      batches_(std::move(batches)),
      pieces_(pieces) {}

arrow::Status SourceRows::Take(int64_t start, int64_t count, std::vector<BatchSlice>* out) {
  if (start != position_) ARROW_RETURN_NOT_OK(Open(start));
  while (count > 0) {
    if (batch_ == nullptr || offset_ == batch_->num_rows()) ARROW_RETURN_NOT_OK(Fill());
    const int64_t n = std::min(count, batch_->num_rows() - offset_);
    out->push_back({batch_, offset_, n});
    offset_ += n;
    count -= n;
    position_ += n;
  }
  return arrow::Status::OK();
}

arrow::Status SourceRows::Prepare(int64_t start) {
  if (start != position_) return Open(start);
  if (batch_ != nullptr && offset_ < batch_->num_rows()) return arrow::Status::OK();
  return NextEpochIfDone();
}

arrow::Result<bool> SourceRows::WaitReady(int64_t start,
                                          std::chrono::steady_clock::time_point deadline) {
  ARROW_RETURN_NOT_OK(Prepare(start));
  if (batch_ != nullptr && offset_ < batch_->num_rows()) return true;
  const auto now = std::chrono::steady_clock::now();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
  return epoch_->WaitReady(std::max(left, std::chrono::milliseconds(0)));
}

arrow::Status SourceRows::Open(int64_t start) {
  epoch_.reset();
  batch_.reset();
  offset_ = 0;
  const int64_t rows = loader_->num_rows();
  ARROW_RETURN_NOT_OK(StartEngine(start / rows, start % rows));
  position_ = start;
  return arrow::Status::OK();
}

arrow::Status SourceRows::StartEngine(int64_t epoch, int64_t skipped) {
  LoaderImpl::StreamSpec spec;
  spec.epoch = epoch;
  if (skipped > 0) spec.resumed.push_back({1, skipped});
  if (batches_ != nullptr) CutAtPieces(epoch * loader_->num_rows() + skipped, &spec);
  ARROW_ASSIGN_OR_RAISE(epoch_, Internal(*loader_).StartStream(spec, workers_));
  source_epoch_ = epoch;
  taken_ = 0;
  return arrow::Status::OK();
}

void SourceRows::CutAtPieces(int64_t start, LoaderImpl::StreamSpec* spec) const {
  const int64_t rows = loader_->num_rows();
  const int64_t end = (start / rows + 1) * rows;  // where the source's epoch ends in Z
  // The first piece that ends after `start`, then every piece that continues it without a
  // gap, up to the epoch's end.
  auto it = std::partition_point(pieces_->begin(), pieces_->end(), [start](const MixturePiece& p) {
    return p.start + p.rows <= start;
  });
  std::vector<MixturePiece> targets;
  int64_t z = start;
  for (; it != pieces_->end() && it->start <= z && z < end; ++it) {
    const int64_t stop = std::min(it->start + it->rows, end);
    targets.push_back({z, stop - z, it->batch, it->offset + (z - it->start)});
    spec->batch_ends.push_back(stop - start);
    z = stop;
  }
  // The rest of the source's epoch, which this mixture epoch may not read, in the loader's
  // batches.
  const int64_t batch_size = loader_->options().batch_size;
  while (z < end) {
    z = std::min(z + batch_size, end);
    spec->batch_ends.push_back(z - start);
  }
  spec->targets = std::make_shared<SourceTargets>(
      batches_, in_place_, loader_->schema()->num_fields(), std::move(targets));
}

arrow::Status SourceRows::NextEpochIfDone() {
  if (taken_ < epoch_->num_batches()) return arrow::Status::OK();
  epoch_.reset();  // its tasks are done before the next epoch's start
  return StartEngine(source_epoch_ + 1, 0);
}

arrow::Status SourceRows::Fill() {
  while (true) {
    ARROW_RETURN_NOT_OK(NextEpochIfDone());
    ARROW_ASSIGN_OR_RAISE(auto batch, epoch_->Next());
    if (batch == nullptr) {
      taken_ = epoch_->num_batches();
      continue;
    }
    ++taken_;
    arrow::ArrayDataVector columns;
    columns.reserve(columns_.size());
    for (const int i : columns_) columns.push_back(batch->column_data(i));
    batch_ = arrow::RecordBatch::Make(schema_, batch->num_rows(), std::move(columns));
    offset_ = 0;
    return arrow::Status::OK();
  }
}

}  // namespace stoker
