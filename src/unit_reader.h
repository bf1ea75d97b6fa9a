// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stoker/manifest.h"
#include "stoker/options.h"
#include "stoker/row_filter.h"
#include "stoker/stats.h"
#include "stoker/transform.h"

namespace stoker {

/// Everything a worker needs to turn a unit into the rows the plan counts on. Immutable,
/// shared by the epochs of a loader.
struct UnitSource {
  std::shared_ptr<const Manifest> manifest;
  /// The units the plan schedules: row groups that may match the filter, with num_rows the
  /// count of matching rows (all rows without a filter).
  std::vector<Unit> units;
  /// Applied first, to every row group read; null for none.
  std::shared_ptr<const RowFilter> filter;
  std::optional<arrow::compute::Expression> filter_expression;
  /// Columns read only because the filter needs them; dropped after it.
  std::vector<std::string> filter_only_columns;
  /// Applied after the filter.
  std::shared_ptr<const TransformSpec> transforms;
  /// Columns of a finished unit (the transforms' output).
  std::shared_ptr<arrow::Schema> output_schema;
  OutputKind output = OutputKind::kTensor;
  arrow::MemoryPool* pool = nullptr;
};

/// Reads the `columns` (indices into the manifest's schema) of one row group: fetches their
/// column chunks in coalesced ranges, then decodes them. Errors name file and row group.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadRowGroup(const Manifest& manifest,
                                                                const Unit& unit,
                                                                const std::vector<int>& columns,
                                                                arrow::MemoryPool* pool,
                                                                Stats* stats);

/// Reads one unit and makes it what the plan expects: filtered, transformed, checked (with
/// OutputKind::kTensor a null in an output column is an error naming file, row group and
/// column; a row count other than unit.num_rows means the file changed).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const UnitSource& source,
                                                            const Unit& unit, Stats* stats);

}  // namespace stoker
