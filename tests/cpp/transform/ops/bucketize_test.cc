// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// bucketize: the int32 index i with boundaries[i-1] <= x < boundaries[i] (NumPy's
// searchsorted, side="right").
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <limits>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Bucketize) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[-1, 0, 0.5, 1, 2, null]")}});
  auto op = Op(TransformKind::kBucketize, {"x"});
  op.boundaries = {0, 1};
  const auto spec = Compile({op}, batch);
  ExpectColumn(*Transform(*spec, batch), "x", Json(arrow::int32(), "[0, 1, 1, 2, 2, null]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"bucketize","column":"x","boundaries":[0,1]}])");

  op.boundaries = {0, 0.5, 0.5};
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(),
            "transform 0 (bucketize): boundaries must be strictly increasing numbers (position "
            "2)");
}

// NumPy's searchsorted(..., side="right") puts a NaN past every boundary; so does bucketize.
TEST(BucketizeTest, IntegersAndNanFollowSearchsortedRight) {
  arrow::DoubleBuilder doubles;
  ASSERT_TRUE(
      doubles.AppendValues({std::numeric_limits<double>::quiet_NaN(), 1.5, -7, 0, 0, 0, 0}).ok());
  const auto batch = Batch({{"i", Json(arrow::int32(), "[-3, 0, 1, 2, 7, 8, null]")},
                            {"d", doubles.Finish().ValueOrDie()}});
  auto i = Op(TransformKind::kBucketize, {"i"});
  i.boundaries = {0, 1.5, 7};
  auto d = Op(TransformKind::kBucketize, {"d"});
  d.boundaries = {0, 1.5, 7};
  const auto out = Transform(*Compile({i, d}, batch), batch);
  ExpectColumn(*out, "i", Json(arrow::int32(), "[0, 1, 1, 2, 3, 3, null]"));
  ExpectColumn(*out, "d", Json(arrow::int32(), "[3, 2, 0, 1, 1, 1, 1]"));
}

TEST(BucketizeTest, NoBoundaryANanBoundaryOrTextIsAnError) {
  const auto batch =
      Batch({{"x", Json(arrow::float32(), "[1]")}, {"s", Json(arrow::utf8(), R"(["a"])")}});
  auto op = Op(TransformKind::kBucketize, {"x"});
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (bucketize): needs at least one boundary");
  op.boundaries = {std::numeric_limits<double>::quiet_NaN(), 1};
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (bucketize): boundaries must be strictly increasing numbers (position "
            "0)");
  op.boundaries = {1};
  op.columns = {"s"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (bucketize): column 's' has type string; bucketize takes numbers");
}

}  // namespace
}  // namespace stoker
