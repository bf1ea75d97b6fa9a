// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array/data.h>
#include <arrow/result.h>
#include <arrow/status.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace stoker {

/// How a fixed-width column is laid out: each row is `row_bytes` contiguous bytes of values.
struct FixedWidthLayout {
  /// Bytes of one row (element width times the product of fixed-size-list lengths).
  int64_t row_bytes = 0;
  /// Values per row (1 for scalars).
  int64_t values_per_row = 1;
  /// The innermost value type.
  std::shared_ptr<arrow::DataType> value_type;
};

/// The layout when `type` is a fixed-width number or a (nested) fixed-size list of them;
/// nullopt-like error otherwise. bool is not fixed-width here (Arrow bit-packs it).
arrow::Result<FixedWidthLayout> GetFixedWidthLayout(const arrow::DataType& type);

/// OK when a column of this type can become a numpy array / torch tensor: numbers, bool, and
/// fixed-size lists of numbers. Otherwise a TypeError naming the column and its type.
arrow::Status CheckTensorType(const arrow::Field& field);

/// Where the values of a fixed-width column live (see GetFixedWidthLayout).
struct FixedWidthValues {
  /// Address of row 0's first value; row i starts row_bytes * i further.
  const uint8_t* first = nullptr;
  /// The buffer holding them (keeps `first` valid).
  std::shared_ptr<arrow::Buffer> buffer;
  /// Lengths of the nested fixed-size lists, outermost first (empty for scalars).
  std::vector<int64_t> inner_dims;
};

/// Locates the values of a fixed-width array, following fixed-size lists and offsets.
FixedWidthValues GetFixedWidthValues(const arrow::ArrayData& data);

/// True when the array or any of its children (a fixed-size list's values) holds a null.
bool HasNulls(const arrow::ArrayData& data);

}  // namespace stoker
