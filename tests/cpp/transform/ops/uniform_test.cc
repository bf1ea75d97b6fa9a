// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// uniform: a new float column uniform in [low, high) per row.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(DrawOpsTest, UniformStaysInItsRange) {
  const auto batch = Ids(5000);
  auto op = Op(TransformKind::kUniform, {"noise"});
  op.low = -2;
  op.high = 3;
  const auto spec = Compile({op}, batch);
  const auto out = Drawn(*spec, batch, Draws(1, 0, 0));
  const auto& noise = static_cast<const arrow::FloatArray&>(*out->GetColumnByName("noise"));
  double sum = 0;
  for (int64_t i = 0; i < noise.length(); ++i) {
    EXPECT_GE(noise.Value(i), -2.0f);
    EXPECT_LT(noise.Value(i), 3.0f);
    sum += noise.Value(i);
  }
  EXPECT_NEAR(sum / 5000, 0.5, 0.1);
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"uniform","column":"noise","low":-2,"high":3,"dtype":"float32","key":""}])");
  op.high = -2;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (uniform): needs finite low < high, got low -2.000000, high -2.000000");
}

// Row i is low + (high - low) * u, u draw 0 of row id first_row + i, in the dtype.
TEST(UniformTest, EachRowIsLowPlusTheSpanTimesItsDraw) {
  const auto batch = Ids(300);
  auto op = Op(TransformKind::kUniform, {"u"});
  op.low = -1;
  op.high = 0.5;
  op.dtype = "float64";
  const auto doubles = Drawn(*Compile({op}, batch), batch, Draws(6, 2, 40));
  op.dtype = "float32";
  const auto floats = Drawn(*Compile({op}, batch), batch, Draws(6, 2, 40));
  const RowDraws draws(DrawContext{.seed = 6, .epoch = 2, .first_row = 40, .op_index = 0});
  const auto& d = static_cast<const arrow::DoubleArray&>(*doubles->GetColumnByName("u"));
  const auto& f = static_cast<const arrow::FloatArray&>(*floats->GetColumnByName("u"));
  for (int64_t i = 0; i < 300; ++i) {
    const double expected = -1 + 1.5 * draws.Uniform(40 + i, 0);
    EXPECT_EQ(d.Value(i), expected) << i;
    EXPECT_EQ(f.Value(i), static_cast<float>(expected)) << i;
  }
}

TEST(UniformTest, TheSameRowDrawsTheSameInAnyBatchSplit) {
  const auto batch = Ids(64);
  auto op = Op(TransformKind::kUniform, {"u"});
  op.low = 0;
  op.high = 1;
  const auto spec = Compile({op}, batch);
  const auto whole = Drawn(*spec, batch, Draws(9, 0, 0))->column(1);
  const auto head = Drawn(*spec, batch->Slice(0, 1), Draws(9, 0, 0))->column(1);
  const auto tail = Drawn(*spec, batch->Slice(1), Draws(9, 0, 1))->column(1);
  EXPECT_TRUE(head->Equals(*whole->Slice(0, 1)));
  EXPECT_TRUE(tail->Equals(*whole->Slice(1)));
}

TEST(UniformTest, ABadDtypeOrBoundsThatAreOneFloat32AreErrors) {
  const auto batch = Batch({{"id", Json(arrow::int64(), "[1]")}});
  auto op = Op(TransformKind::kUniform, {"u"});
  op.low = 0;
  op.high = 1;
  op.dtype = "int8";
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (uniform): dtype must be float32 or float64, got 'int8'");
  op.dtype = "";
  op.low = 1;
  op.high = 1 + 1e-12;
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message().rfind("transform 0 (uniform): low 1", 0), 0u) << error.message();
  EXPECT_NE(error.message().find("are the same float32: use dtype float64"), std::string::npos)
      << error.message();
  // float64 tells them apart.
  op.dtype = "float64";
  const auto out = Drawn(*Compile({op}, batch), batch, Draws(0, 0, 0));
  const double u = static_cast<const arrow::DoubleArray&>(*out->column(1)).Value(0);
  EXPECT_GE(u, 1.0);
  EXPECT_LT(u, 1 + 1e-12);
  op.high = std::numeric_limits<double>::infinity();
  EXPECT_EQ(
      CompileError(op, batch).message().rfind("transform 0 (uniform): needs finite low < high", 0),
      0u);
}

}  // namespace
}  // namespace stoker
