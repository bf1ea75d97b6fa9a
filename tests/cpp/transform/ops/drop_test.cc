// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// drop: the named columns removed.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Drop) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")},
                            {"y", Json(arrow::int8(), "[2]")},
                            {"z", Json(arrow::utf8(), R"(["c"])")}});
  const auto spec = Compile({Op(TransformKind::kDrop, {"z", "x"})}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"y"}));
  EXPECT_EQ(spec->canonical(), R"([{"op":"drop","columns":["z","x"]}])");

  auto error = CompileError(Op(TransformKind::kDrop, {"x", "nope"}), batch);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(error.message(),
            "transform 0 (drop): column 'nope' not found; columns at this step: y, z");
  error = CompileError(Op(TransformKind::kDrop, {}), batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (drop): names no column");
}

TEST(DropTest, NamingAColumnTwiceIsAKeyError) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  const auto error = CompileError(Op(TransformKind::kDrop, {"x", "x"}), batch);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(error.message(), "transform 0 (drop): column 'x' not found; columns at this step: y");
}

TEST(DropTest, ADroppedNameIsFreeForALaterOp) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto rename = Op(TransformKind::kRename, {"y"});
  rename.output = "x";
  const auto out = Transform(*Compile({Op(TransformKind::kDrop, {"x"}), rename}, batch), batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"x"}));
  ExpectColumn(*out, "x", Json(arrow::int8(), "[2]"));
}

}  // namespace
}  // namespace stoker
