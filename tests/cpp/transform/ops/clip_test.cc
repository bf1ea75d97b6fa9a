// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// clip: min(max(x, min), max) in the column's type; an infinite bound is no bound.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <limits>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Clip) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[-5, 0.5, 10, null]")},
                            {"i", Json(arrow::int32(), "[-5, 3, 10, null]")}});
  auto both = Op(TransformKind::kClip, {"x"});
  both.low = 0;
  both.high = 1;
  auto low_only = Op(TransformKind::kClip, {"i"});
  low_only.low = 0;
  const auto spec = Compile({both, low_only}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "x", Json(arrow::float64(), "[0, 0.5, 1, null]"));
  ExpectColumn(*out, "i", Json(arrow::int32(), "[0, 3, 10, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"clip","column":"x","min":0,"max":1},)"
                               R"({"op":"clip","column":"i","min":0,"max":"inf"}])");

  both.low = 5;
  auto error = CompileError(both, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (clip): needs min <= max, got min 5.000000, max 1.000000");
  low_only.low = 1.5;
  error = CompileError(low_only, batch);
  EXPECT_EQ(error.message(), "transform 0 (clip): min 1.500000 is not representable as int32");
}

TEST(ClipTest, HighOnlyAndNoBoundAtAll) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[-5, 3, 10, null]")}});
  auto high_only = Op(TransformKind::kClip, {"x"});
  high_only.high = 4;
  const auto spec = Compile({high_only}, batch);
  ExpectColumn(*Transform(*spec, batch), "x", Json(arrow::int64(), "[-5, 3, 4, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"clip","column":"x","min":"-inf","max":4}])");
  ExpectColumn(*Transform(*Compile({Op(TransformKind::kClip, {"x"})}, batch), batch), "x",
               batch->column(0));
}

TEST(ClipTest, NanBoundsUnrepresentableBoundsAndTextAreErrors) {
  const auto batch =
      Batch({{"i", Json(arrow::int8(), "[1]")}, {"s", Json(arrow::utf8(), R"(["a"])")}});
  auto op = Op(TransformKind::kClip, {"i"});
  op.low = std::numeric_limits<double>::quiet_NaN();
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message().rfind("transform 0 (clip): needs min <= max, got min ", 0), 0u)
      << error.message();
  op.low = 0;
  op.high = 1000;
  error = CompileError(op, batch);
  EXPECT_EQ(error.message(), "transform 0 (clip): max 1000.000000 is not representable as int8");
  op.columns = {"s"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(), "transform 0 (clip): column 's' has type string; clip takes numbers");
}

}  // namespace
}  // namespace stoker
