// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <vector>

#include "assemble/batch_layout.h"
#include "assemble/row_store.h"
#include "plan/plan.h"

namespace stoker {

/// The decoded units of one window, in the window's unit order.
struct LoadedWindow {
  /// Window index in the plan.
  int64_t index = 0;
  /// Indices into BatchLayout::units of the units, in the same order.
  std::vector<int32_t> unit_ids;
  /// The finished units, staged row-major or not (see RowStore).
  std::vector<StagedUnit> units;
};

/// A finished batch and the hash of its rows' global indices, in order.
struct AssembledBatch {
  std::shared_ptr<arrow::RecordBatch> batch;
  uint64_t rows_hash = 0;
  /// Rows of the plan the batch stands for: its rows, plus those of skipped units.
  int64_t planned_rows = 0;
};

/// Buffers a batch's columns are written into instead of new ones: columns[c], when set
/// (and mutable), receives output column c's values, exactly its rows times the column's
/// row bytes. How a mixture's sources write their rows straight into the mixed batch
/// (mixture/mixed_batches.h). Used only for fixed-width columns of numbers (not bool); a batch
/// that leaves rows out (on_error="skip") gets buffers of its own.
struct OutputTarget {
  std::vector<std::shared_ptr<arrow::Buffer>> columns;
};

/// Where a stream's batches go (OutputTarget): asked once per batch, by the worker that
/// assembles it (any thread).
class BatchTargets {
 public:
  virtual ~BatchTargets() = default;
  /// The target of the plan's batch `batch` (no columns: buffers of its own).
  virtual arrow::Result<OutputTarget> For(int64_t batch) const = 0;
  /// Batch `batch` is in the stream's reorder buffer (or failed): Next() has it at hand.
  virtual void Done(int64_t batch) const = 0;
};

/// Gathers the rows of one batch, in plan order, into freshly allocated 64-byte-aligned
/// buffers that the batch owns. Columns of staged units (row_store.h) are gathered record by
/// record; unstaged fixed-width columns without nulls by direct copy; other types (strings,
/// nullable unstaged columns) go through Arrow's take kernel, lists of numbers through
/// GatherLists (list_gather.h). Rows of units
/// skipped under on_error="skip" are left out: the batch is shorter, the plan unchanged.
class Assembler {
 public:
  explicit Assembler(BatchLayout layout) : layout_(std::move(layout)) {}

  /// Rank-local offsets [begin, end) of the plan; `windows` are the loaded windows of
  /// plan.window_schedule() that hold them, in order. Values go into `target`'s buffers
  /// where it gives one (see OutputTarget), into new ones from the layout's pool otherwise.
  arrow::Result<AssembledBatch> Assemble(
      const EpochPlan& plan, int64_t begin, int64_t end,
      const std::vector<std::shared_ptr<const LoadedWindow>>& windows,
      const OutputTarget* target = nullptr) const;

 private:
  BatchLayout layout_;
};

}  // namespace stoker
