// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// pad: variable-length lists -> fixed_size_list[length] and "<column>_length".
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Pad) {
  const auto type = arrow::list(arrow::float32());
  const auto batch = Batch({{"h", Json(type, "[[1, 2, 3], [4], null, [null, 5]]")},
                            {"k", Json(arrow::int8(), "[1, 2, 3, 4]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 2;
  op.number = -1;
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"h", "h_length", "k"}));
  ExpectColumn(
      *out, "h",
      Json(arrow::fixed_size_list(arrow::float32(), 2), "[[1, 2], [4, -1], [-1, -1], [null, 5]]"));
  ExpectColumn(*out, "h_length", Json(arrow::int32(), "[2, 1, 0, 2]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"pad","column":"h","length":2,"value":-1}])");

  op.length = 0;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (pad): length must be >= 1, got 0");
  op.length = 2;
  op.columns = {"k"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (pad): column 'k' has type int8; pad takes variable-length lists of "
            "numbers");
}

TEST(PadTest, LargeListsOfIntegersTruncateAndFill) {
  const auto batch =
      Batch({{"h", Json(arrow::large_list(arrow::int32()), "[[1, 2, 3, 4], [5], null, []]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 3;
  op.number = 0;
  const auto out = Transform(*Compile({op}, batch), batch);
  ExpectColumn(*out, "h",
               Json(arrow::fixed_size_list(arrow::int32(), 3),
                    "[[1, 2, 3], [5, 0, 0], [0, 0, 0], [0, 0, 0]]"));
  ExpectColumn(*out, "h_length", Json(arrow::int32(), "[3, 1, 0, 0]"));
}

TEST(PadTest, KeepLastTakesTheMostRecentValuesInOrder) {
  const auto batch =
      Batch({{"h", Json(arrow::list(arrow::int64()), "[[1, 2, 3, 4], [5], null, []]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 3;
  op.keep = "last";
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "h",
               Json(arrow::fixed_size_list(arrow::int64(), 3),
                    "[[2, 3, 4], [5, 0, 0], [0, 0, 0], [0, 0, 0]]"));
  ExpectColumn(*out, "h_length", Json(arrow::int32(), "[3, 1, 0, 0]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"pad","column":"h","length":3,"value":0,"keep":"last"}])");
  op.keep = "middle";
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (pad): keep must be \"first\" or \"last\", got \"middle\"");
}

TEST(PadTest, ASliceReadsItsOwnLists) {
  const auto batch =
      Batch({{"h", Json(arrow::list(arrow::float64()), "[[1, 2], [null, 3, 4], null, [5]]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 2;
  op.number = 9;
  const auto out = Transform(*Compile({op}, batch), batch->Slice(1, 3));
  ExpectColumn(*out, "h",
               Json(arrow::fixed_size_list(arrow::float64(), 2), "[[null, 3], [9, 9], [5, 9]]"));
  ExpectColumn(*out, "h_length", Json(arrow::int32(), "[2, 0, 1]"));
}

TEST(PadTest, AnUnrepresentableValueOrAnExistingLengthColumnIsAnError) {
  const auto batch = Batch({{"h", Json(arrow::list(arrow::int32()), "[[1]]")},
                            {"h_length", Json(arrow::int32(), "[1]")}});
  auto op = Op(TransformKind::kPad, {"h"});
  op.length = 2;
  op.number = 1.5;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (pad): pad value 1.500000 is not representable as int32");
  op.number = 0;
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (pad): 'h_length' already exists");
}

}  // namespace
}  // namespace stoker
