// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// randint: a new int64 column (or fixed_size_list of `size` draws) uniform in [low, high).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(DrawOpsTest, RandintOneOrSeveralPerRow) {
  const auto batch = Ids(3000);
  auto op = Op(TransformKind::kRandint, {"negatives"});
  op.low = 10;
  op.high = 15;
  const auto scalar = Drawn(*Compile({op}, batch), batch, Draws(3, 2, 0));
  const auto& one = static_cast<const arrow::Int64Array&>(*scalar->GetColumnByName("negatives"));
  for (int64_t i = 0; i < one.length(); ++i) {
    EXPECT_GE(one.Value(i), 10);
    EXPECT_LT(one.Value(i), 15);
  }
  op.size = 4;
  const auto spec = Compile({op}, batch);
  const auto lists = Drawn(*spec, batch, Draws(3, 2, 0))->GetColumnByName("negatives");
  ASSERT_EQ(lists->type()->ToString(), "fixed_size_list<item: int64>[4]");
  // Draw 0 of each row is the single draw of the scalar form.
  const auto& values = static_cast<const arrow::Int64Array&>(
      *static_cast<const arrow::FixedSizeListArray&>(*lists).values());
  for (int64_t i = 0; i < 3000; ++i) EXPECT_EQ(values.Value(4 * i), one.Value(i));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"randint","column":"negatives","low":10,"high":15,"size":4,"key":""}])");
  op.low = 0.5;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (randint): low and high must be integers within +-2^53, got low "
            "0.500000, high 15.000000");
}

// Draw d of a row is low + Below(row id, d, high - low); keyed here by the id column.
TEST(RandintTest, EachDrawIsLowPlusItsDrawBelowTheSpan) {
  const auto batch = Ids(100);
  auto op = Op(TransformKind::kRandint, {"r"});
  op.low = -3;
  op.high = 4;
  op.size = 2;
  op.key = "id";
  const auto out = Drawn(*Compile({op}, batch), batch, Draws(5, 7, 0));
  const RowDraws draws(DrawContext{.seed = 5, .epoch = 7, .op_index = 0});
  const auto& lists = static_cast<const arrow::FixedSizeListArray&>(*out->GetColumnByName("r"));
  const auto& values = static_cast<const arrow::Int64Array&>(*lists.values());
  const auto& ids = static_cast<const arrow::Int64Array&>(*batch->column(0));
  for (int64_t i = 0; i < 100; ++i) {
    for (uint32_t d = 0; d < 2; ++d) {
      EXPECT_EQ(values.Value(2 * i + d),
                -3 + static_cast<int64_t>(draws.Below(static_cast<uint64_t>(ids.Value(i)), d, 7)))
          << i << " " << d;
    }
  }
}

TEST(RandintTest, EqualBoundsASizeOutOfRangeOrAHugeBoundIsAnError) {
  const auto batch = Batch({{"id", Json(arrow::int64(), "[1]")}});
  auto op = Op(TransformKind::kRandint, {"r"});
  op.low = 5;
  op.high = 5;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (randint): needs low < high, got low 5.000000, high 5.000000");
  op.high = 6;
  op.size = -1;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (randint): size must be in [1, 1048576] (or left out for one int64 per "
            "row), got -1");
  op.size = (int64_t{1} << 20) + 1;
  EXPECT_TRUE(CompileError(op, batch).IsInvalid());
  op.size = 0;
  op.high = 18014398509481984.0;  // 2^54
  EXPECT_EQ(CompileError(op, batch).message().rfind(
                "transform 0 (randint): low and high must be integers within +-2^53", 0),
            0u);
}

}  // namespace
}  // namespace stoker
