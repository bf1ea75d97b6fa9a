// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// RowDraws and RowIds: Philox-4x32-10 of the documented key and counter, and the row ids the
// random ops draw from.
#include "transform/row_draws.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "transform/transform_test_util.h"
#include "util/digest.h"
#include "util/philox.h"

namespace stoker {
namespace {

TEST(DrawOpsTest, RowDrawsArePhiloxOfTheDocumentedKeyAndCounter) {
  const DrawContext context{.seed = 42, .epoch = 3, .first_row = 0, .num_rows = 0, .op_index = 2};
  const RowDraws draws(context);
  const uint64_t key = Mix64(42 + 0x9e3779b97f4a7c15ULL * 3);
  const uint64_t row = (uint64_t{5} << 32) | 9;
  const auto block = Philox4x32::Block(
      {9, 5, 4, 3}, {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
  EXPECT_EQ(draws.Bits(row, 4), block[0] | (static_cast<uint64_t>(block[1]) << 32));
  EXPECT_EQ(draws.Uniform(row, 4), static_cast<double>(draws.Bits(row, 4) >> 11) * 0x1.0p-53);
  EXPECT_LT(draws.Below(row, 4, 10), 10u);
}

TEST(RowDrawsTest, UniformAndBelowAreMadeFromTheSameBits) {
  const RowDraws draws(DrawContext{.seed = 1, .epoch = 0});
  for (uint64_t row = 0; row < 1000; ++row) {
    const uint64_t bits = draws.Bits(row, 1);
    const double u = draws.Uniform(row, 1);
    EXPECT_EQ(u, static_cast<double>(bits >> 11) * 0x1.0p-53);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_EQ(draws.Below(row, 1, 1000),
              static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * 1000) >> 64));
    EXPECT_EQ(draws.Below(row, 1, 1), 0u);
  }
}

// The epoch enters modulo 2^32; the seed and the op's position change the key; where the unit
// stands and its length do not enter at all.
TEST(RowDrawsTest, WhatTheDrawsDependOn) {
  const DrawContext base{.seed = 7, .epoch = 1, .first_row = 0, .num_rows = 10, .op_index = 0};
  const uint64_t bits = RowDraws(base).Bits(123, 0);
  auto with = [&](auto change) {
    DrawContext context = base;
    change(context);
    return RowDraws(context).Bits(123, 0);
  };
  EXPECT_EQ(with([](DrawContext& c) { c.epoch = 1 + (uint64_t{1} << 32); }), bits);
  EXPECT_EQ(with([](DrawContext& c) { c.first_row = 500; }), bits);
  EXPECT_EQ(with([](DrawContext& c) { c.num_rows = 3; }), bits);
  EXPECT_NE(with([](DrawContext& c) { c.epoch = 2; }), bits);
  EXPECT_NE(with([](DrawContext& c) { c.seed = 8; }), bits);
  EXPECT_NE(with([](DrawContext& c) { c.op_index = 1; }), bits);
  EXPECT_NE(RowDraws(base).Bits(124, 0), bits);
  EXPECT_NE(RowDraws(base).Bits(123, 1), bits);
  EXPECT_NE(RowDraws(base).Bits(123 + (uint64_t{1} << 32), 0), bits);
}

TEST(RowDrawsTest, RowIdsArePositionsOrTheKeyColumnsValues) {
  ArrayColumns columns;
  columns.names = {"k", "u"};
  columns.values = {Json(arrow::int8(), "[5, -1, 7]"),
                    Json(arrow::uint64(), "[18446744073709551615, 0, 1]")};
  const DrawContext context{.seed = 0, .epoch = 0, .first_row = 10, .num_rows = 3};
  EXPECT_EQ(RowIds(columns, "", context).ValueOrDie(), (std::vector<uint64_t>{10, 11, 12}));
  EXPECT_EQ(RowIds(columns, "k", context).ValueOrDie(),
            (std::vector<uint64_t>{5, ~uint64_t{0}, 7}));
  EXPECT_EQ(RowIds(columns, "u", context).ValueOrDie(),
            (std::vector<uint64_t>{~uint64_t{0}, 0, 1}));
}

TEST(RowDrawsTest, AKeyColumnWithNullsIsAnErrorNamingIt) {
  ArrayColumns columns;
  columns.names = {"k"};
  columns.values = {Json(arrow::int64(), "[1, null]")};
  const auto ids = RowIds(columns, "k", DrawContext{.num_rows = 2});
  EXPECT_TRUE(ids.status().IsInvalid());
  EXPECT_EQ(ids.status().message(), "key column 'k' has nulls: every row needs an id to draw from");
}

}  // namespace
}  // namespace stoker
