// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// truncate: each row's first or last `length` elements of one or several paired lists.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TruncateTest, KeepsTheLastElementsOfPairedListsAlike) {
  const auto batch =
      Batch({{"ids", Json(arrow::list(arrow::int64()), "[[1, 2, 3, 4], [5], null, []]")},
             {"ts", Json(arrow::list(arrow::int64()), "[[10, 20, 30, 40], [50], null, []]")},
             {"w", Json(arrow::large_list(arrow::float32()), "[[1, 2, 3, 4], [5], null, []]")}});
  auto op = Op(TransformKind::kTruncate, {"ids", "ts", "w"});
  op.length = 2;
  op.keep = "last";
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "ids", Json(arrow::list(arrow::int64()), "[[3, 4], [5], null, []]"));
  ExpectColumn(*out, "ts", Json(arrow::list(arrow::int64()), "[[30, 40], [50], null, []]"));
  ExpectColumn(*out, "w", Json(arrow::large_list(arrow::float32()), "[[3, 4], [5], null, []]"));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"truncate","columns":["ids","ts","w"],"length":2,"keep":"last"}])");
  op.keep = "first";
  const auto first = Transform(*Compile({op}, batch), batch->Slice(0, 2));
  ExpectColumn(*first, "ts", Json(arrow::list(arrow::int64()), "[[10, 20], [50]]"));
}

TEST(TruncateTest, PairedListsOfOtherLengthsAndBadParametersAreErrors) {
  const auto batch = Batch({{"ids", Json(arrow::list(arrow::int64()), "[[1, 2], [3]]")},
                            {"ts", Json(arrow::list(arrow::int64()), "[[1, 2], [3, 4]]")},
                            {"k", Json(arrow::int8(), "[1, 2]")}});
  auto op = Op(TransformKind::kTruncate, {"ids", "ts"});
  op.length = 1;
  const auto spec = Compile({op}, batch);
  const auto result = spec->Apply(batch, arrow::default_memory_pool());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(
                "'ts' is paired with 'ids' but row 1 of the row group holds 2 elements against 1"),
            std::string::npos)
      << result.status().message();
  op.length = 0;
  EXPECT_EQ(CompileError(op, batch).message(),
            "transform 0 (truncate): length must be >= 1, got 0");
  op.length = 1;
  op.columns = {"k"};
  EXPECT_TRUE(CompileError(op, batch).IsTypeError());
}

}  // namespace
}  // namespace stoker
