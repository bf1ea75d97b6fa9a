// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "manifest/manifest.h"

namespace stoker {

/// The columns a batch takes from its plan rather than from its data, appended after the
/// data columns: the kValidColumn mask of pad_to_equal_steps and the kFileIndexColumn /
/// kRowInFileColumn origin of with_row_origin (options.h).
struct PlanColumns {
  bool valid_mask = false;
  bool row_origin = false;

  /// `schema` with the plan columns appended; an error when a data column already has one of
  /// their names.
  arrow::Result<std::shared_ptr<arrow::Schema>> Extend(const arrow::Schema& schema) const;

  /// The plan columns of a batch whose i-th row is at rank-local offset offsets[i] (offsets
  /// below `real` are real rows, the others padding); row_units[i] (an index into `units`)
  /// and row_in_unit[i] say where it comes from.
  arrow::Result<arrow::ArrayVector> Make(const std::vector<int64_t>& offsets, int64_t real,
                                         const std::vector<int32_t>& row_units,
                                         const std::vector<int64_t>& row_in_unit,
                                         const std::vector<Unit>& units,
                                         arrow::MemoryPool* pool) const;
};

}  // namespace stoker
