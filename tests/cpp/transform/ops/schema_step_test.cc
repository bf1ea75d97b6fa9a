// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// SchemaStep and the checks every op's compile shares: column lookup, type kinds, values
// representable in a column's type, dtype names.
#include "transform/ops/schema_step.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>

namespace stoker {
namespace {

SchemaStep Step() {
  SchemaStep step;
  step.columns.names = {"i", "s", "l"};
  step.columns.values = {arrow::int32(), arrow::utf8(), arrow::list(arrow::float32())};
  return step;
}

TEST(SchemaStepTest, RequireFindsAColumnOrListsTheColumnsAtThisStep) {
  const SchemaStep step = Step();
  EXPECT_EQ(step.Require("s").ValueOrDie(), 1);
  const auto missing = step.Require("x");
  EXPECT_TRUE(missing.status().IsKeyError());
  EXPECT_EQ(missing.status().message(), "column 'x' not found; columns at this step: i, s, l");
}

TEST(SchemaStepTest, RequireOfAKindSaysWhatTheOpTakes) {
  const SchemaStep step = Step();
  EXPECT_EQ(step.Require("i", "log1p", kNumbers).ValueOrDie(), 0);
  EXPECT_EQ(step.Require("s", "hash", kIds).ValueOrDie(), 1);
  EXPECT_EQ(step.Require("l", "pad", kNumericLists).ValueOrDie(), 2);
  const auto wrong = step.Require("s", "log1p", kNumbers);
  EXPECT_TRUE(wrong.status().IsTypeError());
  EXPECT_EQ(wrong.status().message(), "column 's' has type string; log1p takes numbers");
  // A missing column is a KeyError before its type is looked at.
  EXPECT_TRUE(step.Require("x", "log1p", kNumbers).status().IsKeyError());
  const auto status = WrongType("pad", "i", *arrow::int32(), kNumericLists.description);
  EXPECT_TRUE(status.IsTypeError());
  EXPECT_EQ(status.message(),
            "column 'i' has type int32; pad takes variable-length lists of numbers");
}

TEST(SchemaStepTest, RepresentableRejectsOutOfRangeValuesAndFractionsOfIntegers) {
  const auto int8 = Representable(-128, arrow::int8(), "min").ValueOrDie();
  EXPECT_TRUE(int8->Equals(arrow::Int8Scalar(-128)));
  EXPECT_TRUE(
      Representable(1.5, arrow::float32(), "v").ValueOrDie()->Equals(arrow::FloatScalar(1.5f)));
  EXPECT_TRUE(
      Representable(1, arrow::boolean(), "v").ValueOrDie()->Equals(arrow::BooleanScalar(true)));
  auto error = Representable(128, arrow::int8(), "min").status();
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "min 128.000000 is not representable as int8");
  error = Representable(-1, arrow::uint16(), "max").status();
  EXPECT_EQ(error.message(), "max -1.000000 is not representable as uint16");
  error = Representable(2.5, arrow::int64(), "fill value").status();
  EXPECT_EQ(error.message(), "fill value 2.500000 is not representable as int64");
}

TEST(SchemaStepTest, CastScalarIsASafeCast) {
  const auto three = CastScalar(arrow::MakeScalar(int64_t{3}), arrow::int8()).ValueOrDie();
  EXPECT_TRUE(three->Equals(arrow::Int8Scalar(3)));
  EXPECT_FALSE(CastScalar(arrow::MakeScalar(int64_t{300}), arrow::int8()).ok());
  const auto text = CastScalar(arrow::MakeScalar(std::string("a")), arrow::large_utf8());
  EXPECT_TRUE(text.ValueOrDie()->Equals(arrow::LargeStringScalar("a")));
}

TEST(SchemaStepTest, ParseDtypeKnowsEveryNameAndListsThemOtherwise) {
  const std::pair<const char*, std::shared_ptr<arrow::DataType>> names[] = {
      {"bool", arrow::boolean()},    {"int8", arrow::int8()},       {"int16", arrow::int16()},
      {"int32", arrow::int32()},     {"int64", arrow::int64()},     {"uint8", arrow::uint8()},
      {"uint16", arrow::uint16()},   {"uint32", arrow::uint32()},   {"uint64", arrow::uint64()},
      {"float16", arrow::float16()}, {"float32", arrow::float32()}, {"float64", arrow::float64()},
  };
  for (const auto& [name, type] : names) {
    EXPECT_TRUE(ParseDtype(name).ValueOrDie()->Equals(*type)) << name;
  }
  const auto unknown = ParseDtype("double");
  EXPECT_TRUE(unknown.status().IsInvalid());
  EXPECT_EQ(unknown.status().message(),
            "dtype 'double' is not one of bool, int8, int16, int32, int64, uint8, uint16, uint32, "
            "uint64, float16, float32, float64");
}

TEST(SchemaStepTest, TypeKinds) {
  EXPECT_TRUE(IsNumber(*arrow::uint8()));
  EXPECT_TRUE(IsNumber(*arrow::float16()));
  EXPECT_FALSE(IsNumber(*arrow::boolean()));
  EXPECT_FALSE(IsNumber(*arrow::utf8()));
  EXPECT_TRUE(IsNumberOrBool(*arrow::boolean()));
  EXPECT_FALSE(IsNumberOrBool(*arrow::utf8()));
  EXPECT_TRUE(IsId(*arrow::int16()));
  EXPECT_TRUE(IsId(*arrow::large_binary()));
  EXPECT_FALSE(IsId(*arrow::float64()));
  EXPECT_TRUE(IsText(*arrow::utf8()));
  EXPECT_TRUE(IsText(*arrow::large_utf8()));
  EXPECT_TRUE(IsText(*arrow::binary()));
  EXPECT_FALSE(IsText(*arrow::int64()));
  EXPECT_TRUE(IsNumericList(*arrow::list(arrow::float32())));
  EXPECT_TRUE(IsNumericList(*arrow::large_list(arrow::int8())));
  EXPECT_FALSE(IsNumericList(*arrow::list(arrow::utf8())));
  EXPECT_FALSE(IsNumericList(*arrow::list(arrow::boolean())));
  EXPECT_FALSE(IsNumericList(*arrow::fixed_size_list(arrow::float32(), 2)));
  EXPECT_FALSE(IsNumericList(*arrow::float32()));
}

TEST(SchemaStepTest, FloatForKeepsFloat64AndMakesAllElseFloat32) {
  EXPECT_TRUE(FloatFor(*arrow::float64())->Equals(*arrow::float64()));
  EXPECT_TRUE(FloatFor(*arrow::float32())->Equals(*arrow::float32()));
  EXPECT_TRUE(FloatFor(*arrow::float16())->Equals(*arrow::float32()));
  EXPECT_TRUE(FloatFor(*arrow::int64())->Equals(*arrow::float32()));
  EXPECT_TRUE(FloatFor(*arrow::uint8())->Equals(*arrow::float32()));
}

}  // namespace
}  // namespace stoker
