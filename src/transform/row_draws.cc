// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/row_draws.h"

#include <arrow/array.h>
#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>

#include "util/digest.h"

namespace stoker {

namespace {

// The golden ratio's 64-bit Weyl step (SplitMix64's), spreading op indices over the key space.
constexpr uint64_t kOpStep = 0x9e3779b97f4a7c15ULL;

}  // namespace

RowDraws::RowDraws(const DrawContext& context) : epoch_(static_cast<uint32_t>(context.epoch)) {
  const uint64_t key =
      Mix64(context.seed + kOpStep * (static_cast<uint64_t>(context.op_index) + 1));
  key_ = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
}

uint64_t RowDraws::Bits(uint64_t row, uint32_t draw) const {
  const auto block = Philox4x32::Block(
      {static_cast<uint32_t>(row), static_cast<uint32_t>(row >> 32), draw, epoch_}, key_);
  return static_cast<uint64_t>(block[0]) | (static_cast<uint64_t>(block[1]) << 32);
}

double RowDraws::Uniform(uint64_t row, uint32_t draw) const {
  return static_cast<double>(Bits(row, draw) >> 11) * 0x1.0p-53;
}

uint64_t RowDraws::Below(uint64_t row, uint32_t draw, uint64_t n) const {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Bits(row, draw)) * n) >> 64);
}

arrow::Result<std::vector<uint64_t>> RowIds(const ArrayColumns& columns,
                                            const std::string& key_column,
                                            const DrawContext& context) {
  const int64_t rows = context.num_rows;
  std::vector<uint64_t> ids(rows);
  if (key_column.empty()) {
    for (int64_t i = 0; i < rows; ++i) ids[i] = static_cast<uint64_t>(context.first_row + i);
    return ids;
  }
  const auto& keys = columns.values[columns.Find(key_column)];
  if (keys->null_count() > 0) {
    return arrow::Status::Invalid("key column '", key_column,
                                  "' has nulls: every row needs an id to draw from");
  }
  // Any integer type, as its value in int64 (uint64 ids keep their bits).
  const auto target = keys->type_id() == arrow::Type::UINT64 ? arrow::uint64() : arrow::int64();
  ARROW_ASSIGN_OR_RAISE(auto cast, arrow::compute::Cast(*keys, target));
  const auto* values = cast->data()->GetValues<uint64_t>(1);
  for (int64_t i = 0; i < rows; ++i) ids[i] = values[i];
  return ids;
}

}  // namespace stoker
