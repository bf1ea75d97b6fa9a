// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/source_rows.h"

#include <chrono>
#include <utility>

namespace stoker {

namespace {

// How long one wait for an engine batch lasts before `stop` is checked again.
constexpr std::chrono::milliseconds kStopPollInterval{20};

}  // namespace

arrow::Result<SourceRows> SourceRows::Make(std::shared_ptr<const Loader> loader,
                                           const arrow::Schema& schema,
                                           std::shared_ptr<TaskPool> workers) {
  const arrow::Schema& own = *loader->schema();
  std::vector<int> columns;
  for (const auto& field : schema.fields()) {
    const int i = own.GetFieldIndex(field->name());
    if (i < 0)
      return arrow::Status::KeyError("a mixture source has no column '", field->name(), "'");
    columns.push_back(i);
  }
  return SourceRows(std::move(loader), std::move(columns), arrow::schema(schema.fields()),
                    std::move(workers));
}

SourceRows::SourceRows(std::shared_ptr<const Loader> loader, std::vector<int> columns,
                       std::shared_ptr<arrow::Schema> schema, std::shared_ptr<TaskPool> workers)
    : loader_(std::move(loader)),
      columns_(std::move(columns)),
      schema_(std::move(schema)),
      workers_(std::move(workers)) {}

arrow::Status SourceRows::Take(int64_t start, int64_t count, const std::atomic<bool>& stop,
                               std::vector<BatchSlice>* out) {
  if (start != position_) ARROW_RETURN_NOT_OK(Open(start));
  while (count > 0) {
    if (batch_ == nullptr || offset_ == batch_->num_rows()) ARROW_RETURN_NOT_OK(Fill(stop));
    const int64_t n = std::min(count, batch_->num_rows() - offset_);
    out->push_back({batch_, offset_, n});
    offset_ += n;
    count -= n;
    position_ += n;
  }
  return arrow::Status::OK();
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
  Loader::StreamSpec spec;
  spec.epoch = epoch;
  if (skipped > 0) spec.resumed.push_back({1, skipped});
  ARROW_ASSIGN_OR_RAISE(epoch_, loader_->StartStream(spec, workers_));
  source_epoch_ = epoch;
  return arrow::Status::OK();
}

arrow::Status SourceRows::Fill(const std::atomic<bool>& stop) {
  while (true) {
    while (!epoch_->WaitReady(kStopPollInterval)) {
      if (stop.load(std::memory_order_relaxed)) return arrow::Status::Cancelled("mixture closed");
    }
    ARROW_ASSIGN_OR_RAISE(auto batch, epoch_->Next());
    if (batch != nullptr) {
      arrow::ArrayVector columns;
      columns.reserve(columns_.size());
      for (const int i : columns_) columns.push_back(batch->column(i));
      batch_ = arrow::RecordBatch::Make(schema_, batch->num_rows(), std::move(columns));
      offset_ = 0;
      return arrow::Status::OK();
    }
    epoch_.reset();  // its tasks are done before the next epoch's start
    ARROW_RETURN_NOT_OK(StartEngine(source_epoch_ + 1, 0));
  }
}

}  // namespace stoker
