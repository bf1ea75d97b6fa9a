// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// fill_null: nulls -> a number (numbers, bool) or text (strings), the value checked against
// the column's type when the spec is compiled.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, FillNull) {
  const auto batch = Batch({{"n", Json(arrow::int32(), "[1, null, 3]")},
                            {"s", Json(arrow::utf8(), R"(["a", null, "c"])")}});
  auto number = Op(TransformKind::kFillNull, {"n"});
  number.number = -1;
  auto text = Op(TransformKind::kFillNull, {"s"});
  text.is_text = true;
  text.text = "?";
  const auto spec = Compile({number, text}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "n", Json(arrow::int32(), "[1, -1, 3]"));
  ExpectColumn(*out, "s", Json(arrow::utf8(), R"(["a", "?", "c"])"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"fill_null","column":"n","value":-1},)"
                               R"({"op":"fill_null","column":"s","value":"?"}])");

  number.number = 1.5;
  auto error = CompileError(number, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): fill value 1.500000 is not representable as int32");
  text.columns = {"n"};
  error = CompileError(text, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): column 'n' has type int32; fill_null takes a number here "
            "(the value is text)");
}

TEST(FillNullTest, BoolTakesANumberAndAColumnWithoutNullsIsUnchanged) {
  const auto batch = Batch({{"b", Json(arrow::boolean(), "[true, null, false]")},
                            {"n", Json(arrow::int64(), "[1, 2, 3]")}});
  auto flag = Op(TransformKind::kFillNull, {"b"});
  flag.number = 1;
  auto full = Op(TransformKind::kFillNull, {"n"});
  full.number = 0;
  const auto out = Transform(*Compile({flag, full}, batch), batch);
  ExpectColumn(*out, "b", Json(arrow::boolean(), "[true, true, false]"));
  ExpectColumn(*out, "n", Json(arrow::int64(), "[1, 2, 3]"));
}

TEST(FillNullTest, LargeStringsTakeText) {
  const auto batch = Batch({{"s", Json(arrow::large_utf8(), R"([null, "b"])")}});
  auto op = Op(TransformKind::kFillNull, {"s"});
  op.is_text = true;
  op.text = "none";
  ExpectColumn(*Transform(*Compile({op}, batch), batch), "s",
               Json(arrow::large_utf8(), R"(["none", "b"])"));
}

TEST(FillNullTest, AValueOutOfRangeOrAListColumnIsAnError) {
  const auto batch = Batch(
      {{"i", Json(arrow::int8(), "[null]")}, {"l", Json(arrow::list(arrow::int32()), "[null]")}});
  auto op = Op(TransformKind::kFillNull, {"i"});
  op.number = 300;
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): fill value 300.000000 is not representable as int8");
  op.columns = {"l"};
  op.number = 0;
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (fill_null): column 'l' has type list<item: int32>; fill_null takes "
            "numbers, bool or strings");
}

}  // namespace
}  // namespace stoker
