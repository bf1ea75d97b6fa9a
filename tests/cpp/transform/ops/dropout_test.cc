// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// dropout: each list element dropped with probability p, in place; null lists stay null.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <memory>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(DrawOpsTest, DropoutDropsElementsInOrderAndKeepsNullLists) {
  const auto batch =
      Batch({{"l", Json(arrow::list(arrow::int32()), "[[1, 2, 3, 4, 5, 6], null, [], [7, 8]]")}});
  auto op = Op(TransformKind::kDropout, {"l"});
  op.p = 0;
  ExpectColumn(*Drawn(*Compile({op}, batch), batch, Draws(0, 0, 0)), "l", batch->column(0));
  op.p = 1;
  ExpectColumn(*Drawn(*Compile({op}, batch), batch, Draws(0, 0, 0)), "l",
               Json(arrow::list(arrow::int32()), "[[], null, [], []]"));
  op.p = 0.5;
  const auto spec = Compile({op}, batch);
  const auto out = Drawn(*spec, batch, Draws(9, 0, 0))->GetColumnByName("l");
  const auto& lists = static_cast<const arrow::ListArray&>(*out);
  EXPECT_TRUE(lists.IsNull(1));
  // What is kept is a subsequence of each list, in order.
  const auto& kept = static_cast<const arrow::Int32Array&>(*lists.values());
  for (int64_t i = 1; i < kept.length(); ++i) EXPECT_LT(kept.Value(i - 1), kept.Value(i));
  EXPECT_EQ(spec->canonical(), R"([{"op":"dropout","column":"l","p":0.5,"key":""}])");
}

// Element j of row i is kept exactly when draw j of row id first_row + i is at least p.
TEST(DropoutTest, ElementJIsKeptWhenItsDrawIsAtLeastP) {
  const auto type = arrow::list(arrow::int32());
  const auto batch = Batch({{"l", Json(type, "[[1, 2, 3, 4, 5], null, [6, 7, 8], [], [9, 10]]")}});
  auto op = Op(TransformKind::kDropout, {"l"});
  op.p = 0.4;
  const auto out = Drawn(*Compile({op}, batch), batch, Draws(2, 1, 30));
  const RowDraws draws(DrawContext{.seed = 2, .epoch = 1, .first_row = 30, .op_index = 0});
  const auto& in = static_cast<const arrow::ListArray&>(*batch->column(0));
  const auto& in_values = static_cast<const arrow::Int32Array&>(*in.values());
  arrow::ListBuilder lists(arrow::default_memory_pool(), std::make_shared<arrow::Int32Builder>());
  auto& values = static_cast<arrow::Int32Builder&>(*lists.value_builder());
  for (int64_t i = 0; i < in.length(); ++i) {
    if (in.IsNull(i)) {
      ASSERT_TRUE(lists.AppendNull().ok());
      continue;
    }
    ASSERT_TRUE(lists.Append().ok());
    for (int64_t j = 0; j < in.value_length(i); ++j) {
      if (draws.Uniform(30 + i, static_cast<uint32_t>(j)) >= 0.4) {
        ASSERT_TRUE(values.Append(in_values.Value(in.value_offset(i) + j)).ok());
      }
    }
  }
  const auto expected = lists.Finish().ValueOrDie();
  ExpectColumn(*out, "l", expected);
  // Some elements were dropped and some kept, so the check above compared both cases.
  EXPECT_GT(expected->length(), 0);
  const auto kept = static_cast<const arrow::ListArray&>(*expected).values()->length();
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 10);
}

TEST(DropoutTest, LargeListsKeyedByAColumnDropTheSameInAnySlice) {
  const auto type = arrow::large_list(arrow::int64());
  const auto batch = Batch({{"id", Json(arrow::int64(), "[10, 20, 30]")},
                            {"l", Json(type, "[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]]")}});
  auto op = Op(TransformKind::kDropout, {"l"});
  op.p = 0.5;
  op.key = "id";
  const auto spec = Compile({op}, batch);
  const auto whole = Drawn(*spec, batch, Draws(4, 0, 0))->GetColumnByName("l");
  EXPECT_EQ(whole->type_id(), arrow::Type::LARGE_LIST);
  const auto tail = Drawn(*spec, batch->Slice(1), Draws(4, 0, 999))->GetColumnByName("l");
  EXPECT_TRUE(tail->Equals(*whole->Slice(1))) << tail->ToString() << " vs " << whole->ToString();
}

TEST(DropoutTest, ANonListColumnOrABadPIsAnError) {
  const auto batch = Batch(
      {{"x", Json(arrow::int32(), "[1]")}, {"l", Json(arrow::list(arrow::int32()), "[[1]]")}});
  auto op = Op(TransformKind::kDropout, {"x"});
  op.p = 0.5;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (dropout): column 'x' has type int32; dropout takes variable-length "
            "lists of numbers");
  op.columns = {"l"};
  op.p = 2;
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (dropout): p must be in [0, 1], got 2.000000");
}

}  // namespace
}  // namespace stoker
