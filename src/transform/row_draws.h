// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <vector>

#include "transform/column_set.h"
#include "util/philox.h"

namespace stoker {

/// What a unit's random draws depend on besides the op: the loader's seed, the epoch and where
/// the unit's rows stand in the dataset. Threads, the cache, the world size and a resume never
/// enter, so every run that reads a row in an epoch draws the same numbers for it.
struct DrawContext {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  /// The dataset index of the unit's first row (Unit::first_row): row i of the unit has row
  /// id first_row + i (i counts the rows that pass the filter).
  int64_t first_row = 0;
  /// Rows of the unit.
  int64_t num_rows = 0;
  /// The position in the spec of the op drawing (TransformSpec sets it for each op).
  int op_index = 0;
};

/// The random numbers one op draws for one unit. Draw d of row id r is the Philox-4x32-10
/// block of counter (r mod 2^32, r >> 32, d, epoch mod 2^32) under the key
/// Mix64(seed + 0x9e3779b97f4a7c15 * (op_index + 1)) split into its low and high 32 bits;
/// its first two words are the draw's 64 bits (docs/transforms.md, "Random ops").
class RowDraws {
 public:
  explicit RowDraws(const DrawContext& context);

  /// 64 random bits: draw `draw` of row id `row`.
  uint64_t Bits(uint64_t row, uint32_t draw) const;
  /// A double uniform in [0, 1): the top 53 of the 64 bits times 2^-53.
  double Uniform(uint64_t row, uint32_t draw) const;
  /// An integer in [0, n), n >= 1: the high 64 bits of the 64 bits times n (Lemire's
  /// multiply-shift; its bias is below n / 2^64).
  uint64_t Below(uint64_t row, uint32_t draw, uint64_t n) const;

 private:
  Philox4x32::Key key_;
  uint32_t epoch_;
};

/// The row id of each of the unit's rows: first_row + i, or, when `key_column` is not empty,
/// the value of that integer column (its nulls are an error naming it).
arrow::Result<std::vector<uint64_t>> RowIds(const ArrayColumns& columns,
                                            const std::string& key_column,
                                            const DrawContext& context);

}  // namespace stoker
