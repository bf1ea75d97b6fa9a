// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <vector>

#include "stoker/plan.h"

namespace stoker {

/// The decoded units of one window, in the window's unit order.
struct LoadedWindow {
  int64_t index = 0;
  std::vector<std::shared_ptr<arrow::RecordBatch>> units;
};

/// Gathers the rows of one batch, in plan order, into freshly allocated 64-byte-aligned
/// buffers that the batch owns. Fixed-width columns without nulls are gathered by direct
/// copy; other types (strings, nullable columns, bool) go through Arrow's take kernel.
class Assembler {
 public:
  Assembler(std::shared_ptr<arrow::Schema> schema, arrow::MemoryPool* pool)
      : schema_(std::move(schema)), pool_(pool) {}

  /// Positions [begin, end) of the plan's sequence; `windows` are the consecutive windows
  /// from plan.WindowOf(begin) to plan.WindowOf(end - 1).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Assemble(
      const EpochPlan& plan, int64_t begin, int64_t end,
      const std::vector<std::shared_ptr<const LoadedWindow>>& windows) const;

 private:
  std::shared_ptr<arrow::Schema> schema_;
  arrow::MemoryPool* pool_;
};

}  // namespace stoker
