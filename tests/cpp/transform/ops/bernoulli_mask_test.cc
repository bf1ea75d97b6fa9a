// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// bernoulli_mask: a new column, true with probability p per row, a pure function of (seed,
// epoch, op, row id).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(DrawOpsTest, BernoulliMask) {
  const auto batch = Ids(4000);
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0.25;
  const auto spec = Compile({op}, batch);
  EXPECT_TRUE(spec->draws());
  const auto out = Drawn(*spec, batch, Draws(7, 0, 100));
  const auto& mask = static_cast<const arrow::BooleanArray&>(*out->GetColumnByName("mask"));
  EXPECT_EQ(mask.type_id(), arrow::Type::BOOL);
  EXPECT_NEAR(static_cast<double>(mask.true_count()) / 4000, 0.25, 0.03);
  // A pure function of (seed, epoch, row): the same again, another epoch differs.
  EXPECT_TRUE(Drawn(*spec, batch, Draws(7, 0, 100))->Equals(*out));
  EXPECT_FALSE(Drawn(*spec, batch, Draws(7, 1, 100))->Equals(*out));
  EXPECT_FALSE(Drawn(*spec, batch, Draws(8, 0, 100))->Equals(*out));
  // Row 100 + i of one unit draws what row i of a unit starting at 100 draws.
  const auto shifted = Drawn(*spec, batch->Slice(10), Draws(7, 0, 110));
  EXPECT_TRUE(shifted->column(1)->Equals(*out->column(1)->Slice(10)));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"bernoulli_mask","column":"mask","p":0.25,"dtype":"bool","key":""}])");

  op.dtype = "int8";
  op.key = "id";
  const auto keyed = Compile({op}, batch);
  const auto by_id = Drawn(*keyed, batch, Draws(7, 0, 0));
  EXPECT_EQ(by_id->GetColumnByName("mask")->type_id(), arrow::Type::INT8);
  // Keyed by the id column, the row's position does not matter.
  EXPECT_TRUE(Drawn(*keyed, batch, Draws(7, 0, 555))->Equals(*by_id));

  op.p = 1.5;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (bernoulli_mask): p must be in [0, 1], got 1.500000");
  op.p = 0.5;
  op.columns = {"id"};
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (bernoulli_mask): column 'id' exists already; bernoulli_mask writes a "
            "new column: name one that does not exist");
}

// Row i of a unit is mask true exactly when draw 0 of row id first_row + i is below p.
TEST(BernoulliMaskTest, EachRowIsItsDrawBelowP) {
  const auto batch = Ids(200);
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0.3;
  const auto out = Drawn(*Compile({op}, batch), batch, Draws(11, 4, 500));
  op.dtype = "int8";
  const auto as_int8 = Drawn(*Compile({op}, batch), batch, Draws(11, 4, 500));
  const RowDraws draws(
      DrawContext{.seed = 11, .epoch = 4, .first_row = 500, .num_rows = 200, .op_index = 0});
  const auto& mask = static_cast<const arrow::BooleanArray&>(*out->GetColumnByName("mask"));
  const auto& ints = static_cast<const arrow::Int8Array&>(*as_int8->GetColumnByName("mask"));
  EXPECT_EQ(mask.null_count(), 0);
  for (int64_t i = 0; i < 200; ++i) {
    const bool expected = draws.Uniform(500 + i, 0) < 0.3;
    EXPECT_EQ(mask.Value(i), expected) << i;
    EXPECT_EQ(ints.Value(i), expected ? 1 : 0) << i;
  }
}

TEST(BernoulliMaskTest, PZeroIsNeverAndPOneAlways) {
  const auto batch = Ids(100);
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0;
  const auto never = Drawn(*Compile({op}, batch), batch, Draws(1, 0, 0));
  EXPECT_EQ(static_cast<const arrow::BooleanArray&>(*never->column(1)).true_count(), 0);
  op.p = 1;
  const auto always = Drawn(*Compile({op}, batch), batch, Draws(1, 0, 0));
  EXPECT_EQ(static_cast<const arrow::BooleanArray&>(*always->column(1)).true_count(), 100);
}

TEST(BernoulliMaskTest, TheSameRowDrawsTheSameInAnyBatchSplit) {
  const auto batch = Ids(100);
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0.5;
  const auto spec = Compile({op}, batch);
  const auto whole = Drawn(*spec, batch, Draws(2, 3, 1000))->column(1);
  const auto head = Drawn(*spec, batch->Slice(0, 37), Draws(2, 3, 1000))->column(1);
  const auto tail = Drawn(*spec, batch->Slice(37), Draws(2, 3, 1037))->column(1);
  EXPECT_TRUE(head->Equals(*whole->Slice(0, 37)));
  EXPECT_TRUE(tail->Equals(*whole->Slice(37)));
}

TEST(BernoulliMaskTest, ADtypeOtherThanBoolOrInt8IsAnError) {
  auto op = Op(TransformKind::kBernoulliMask, {"mask"});
  op.p = 0.5;
  op.dtype = "float32";
  const auto error = CompileError(op, Batch({{"id", Json(arrow::int64(), "[1]")}}));
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (bernoulli_mask): dtype must be bool or int8, got 'float32'");
}

}  // namespace
}  // namespace stoker
