// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// standardize: (x - mean) / std in float32 (float64 stays float64).
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <limits>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Standardize) {
  const auto batch = Batch(
      {{"d", Json(arrow::float64(), "[1, 3, null]")}, {"i", Json(arrow::int64(), "[1, 5, 9]")}});
  auto d = Op(TransformKind::kStandardize, {"d"});
  d.mean = 1;
  d.std = 2;
  auto i = Op(TransformKind::kStandardize, {"i"});
  i.mean = 1;
  i.std = 4;
  const auto spec = Compile({d, i}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "d", Json(arrow::float64(), "[0, 1, null]"));
  ExpectColumn(*out, "i", Json(arrow::float32(), "[0, 1, 2]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"standardize","column":"d","mean":1,"std":2},)"
                               R"({"op":"standardize","column":"i","mean":1,"std":4}])");

  d.std = 0;
  const auto error = CompileError(d, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (standardize): needs a finite mean and std > 0, got mean 1.000000, std "
            "0.000000");
}

TEST(StandardizeTest, Float32StaysFloat32AndSmallIntegersBecomeFloat32) {
  const auto batch =
      Batch({{"f", Json(arrow::float32(), "[2, 4]")}, {"i", Json(arrow::int8(), "[3, null]")}});
  auto f = Op(TransformKind::kStandardize, {"f"});
  f.mean = 2;
  f.std = 0.5;
  auto i = Op(TransformKind::kStandardize, {"i"});
  i.mean = -1;
  i.std = 8;
  const auto out = Transform(*Compile({f, i}, batch), batch);
  ExpectColumn(*out, "f", Json(arrow::float32(), "[0, 4]"));
  ExpectColumn(*out, "i", Json(arrow::float32(), "[0.5, null]"));
}

TEST(StandardizeTest, NonFiniteParametersAndTextAreErrors) {
  const auto batch =
      Batch({{"d", Json(arrow::float64(), "[1]")}, {"s", Json(arrow::utf8(), R"(["a"])")}});
  auto op = Op(TransformKind::kStandardize, {"d"});
  for (const double mean :
       {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    op.mean = mean;
    const auto error = CompileError(op, batch);
    EXPECT_TRUE(error.IsInvalid());
    EXPECT_EQ(
        error.message().rfind("transform 0 (standardize): needs a finite mean and std > 0", 0), 0u)
        << error.message();
  }
  op.mean = 0;
  op.std = -1;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (standardize): needs a finite mean and std > 0, got mean 0.000000, std "
            "-1.000000");
  op.std = 1;
  op.columns = {"s"};
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (standardize): column 's' has type string; standardize takes numbers");
}

}  // namespace
}  // namespace stoker
