// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// cast: a safe cast to a dtype; overflow and truncation are errors at apply that name the
// op and the column.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Cast) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[1, 2, null]")}});
  auto op = Op(TransformKind::kCast, {"x"});
  op.dtype = "int32";
  const auto spec = Compile({op}, batch);
  ExpectColumn(*Transform(*spec, batch), "x", Json(arrow::int32(), "[1, 2, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"cast","column":"x","dtype":"int32"}])");

  op.dtype = "complex";
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (cast): dtype 'complex' is not one of bool, int8, int16, int32, int64, "
            "uint8, uint16, uint32, uint64, float16, float32, float64");
}

TEST(TransformOpsTest, CastOverflowAtApplyNamesOpAndColumn) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[1, 300]")}});
  auto op = Op(TransformKind::kCast, {"x"});
  op.dtype = "int8";
  const auto out = Compile({op}, batch)->Apply(batch, arrow::default_memory_pool());
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsInvalid());
  EXPECT_EQ(out.status().message().rfind("transform 0 (cast) on column 'x': ", 0), 0u)
      << out.status().message();
}

TEST(CastTest, TruncationAtApplyIsAnErrorNamingOpAndColumn) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[1, 2.5]")}});
  auto op = Op(TransformKind::kCast, {"x"});
  op.dtype = "int32";
  const auto spec = Compile({op}, batch);
  EXPECT_TRUE(spec->output_schema()->field(0)->type()->Equals(*arrow::int32()));
  ExpectColumn(*Transform(*spec, batch->Slice(0, 1)), "x", Json(arrow::int32(), "[1]"));
  const auto out = spec->Apply(batch, arrow::default_memory_pool());
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsInvalid());
  EXPECT_EQ(out.status().message().rfind("transform 0 (cast) on column 'x': ", 0), 0u)
      << out.status().message();
}

TEST(CastTest, IntegersToBoolAndFloat64KeepNulls) {
  const auto batch = Batch(
      {{"i", Json(arrow::int32(), "[0, 2, null]")}, {"h", Json(arrow::int8(), "[1, null, -3]")}});
  auto to_bool = Op(TransformKind::kCast, {"i"});
  to_bool.dtype = "bool";
  auto to_double = Op(TransformKind::kCast, {"h"});
  to_double.dtype = "float64";
  const auto out = Transform(*Compile({to_bool, to_double}, batch), batch);
  ExpectColumn(*out, "i", Json(arrow::boolean(), "[false, true, null]"));
  ExpectColumn(*out, "h", Json(arrow::float64(), "[1, null, -3]"));
}

TEST(CastTest, AColumnThatCannotBeCastOrIsMissingIsAnError) {
  const auto batch = Batch({{"l", Json(arrow::list(arrow::int32()), "[[1]]")}});
  auto op = Op(TransformKind::kCast, {"l"});
  op.dtype = "int32";
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (cast): column 'l' has type list<item: int32>; cast takes a type castable "
            "to int32");
  op.columns = {"nope"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(error.message(),
            "transform 0 (cast): column 'nope' not found; columns at this step: l");
}

}  // namespace
}  // namespace stoker
