// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/type.h>

#include <memory>
#include <vector>

#include "assemble/plan_columns.h"
#include "manifest/manifest.h"

namespace stoker {

/// What the assembler needs to know of a loader's units and columns (exec/unit_source.h's
/// LayoutOf makes it from a UnitSource): the assembler depends on nothing of exec/.
struct BatchLayout {
  /// The plan's units (UnitSource::units): their first rows' global indices, and what the
  /// plan columns report.
  std::shared_ptr<const std::vector<Unit>> units;
  /// The columns the assembler adds from the plan (mask, row origin).
  PlanColumns plan_columns;
  /// Columns of a batch without plan columns, and with them (output_schema, then the plan
  /// columns).
  std::shared_ptr<arrow::Schema> output_schema;
  std::shared_ptr<arrow::Schema> batch_schema;
  /// Output columns whose values share one allocation, one after another in the order
  /// given (list_gather.h's GatherListGroup): the ragged columns, grouped by value type in
  /// the order their ragged ops were declared, so a KeyedJaggedTensor's keys arrive
  /// key-major in one buffer.
  std::vector<std::vector<int>> list_groups;
  /// Where batches are allocated (they outlive the loader in the consumer's hands).
  arrow::MemoryPool* pool = nullptr;
};

}  // namespace stoker
