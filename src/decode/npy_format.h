// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stoker {

/// One array in NumPy's .npy format (np.save), parsed without copying its values.
struct NpyArray {
  /// The element type (integers and floats; numpy's bool, strings and objects are refused).
  std::shared_ptr<arrow::DataType> type;
  /// The header's shape, outermost first; empty for a 0-d array.
  std::vector<int64_t> shape;
  /// Values stored column-major (fortran_order): CopyNpyValues transposes them.
  bool fortran_order = false;
  /// Values stored big-endian: CopyNpyValues swaps their bytes.
  bool swap_bytes = false;
  /// The values, `num_bytes` of them, inside the parsed bytes.
  const uint8_t* values = nullptr;
  int64_t num_bytes = 0;

  /// Elements in the array (the product of shape).
  int64_t num_elements() const;
};

/// Parses the .npy bytes `data`: magic, version 1-3 header (descr, fortran_order, shape) and
/// values whose size matches the header exactly. Malformed bytes give Invalid, never a crash.
arrow::Result<NpyArray> ParseNpy(const uint8_t* data, int64_t size);

/// Writes the array's values to `out` (num_bytes of them) in row-major order and native byte
/// order.
void CopyNpyValues(const NpyArray& array, uint8_t* out);

/// "(2, 3)"-style text of a shape (-1 printed as None), for error messages.
std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace stoker
