// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// rename: a column under a new name.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, Rename) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto op = Op(TransformKind::kRename, {"x"});
  op.output = "z";
  const auto spec = Compile({op}, batch);
  const auto out = Transform(*spec, batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"z", "y"}));
  ExpectColumn(*out, "z", Json(arrow::int32(), "[1]"));
  EXPECT_EQ(spec->canonical(), R"([{"op":"rename","column":"x","to":"z"}])");

  op.output = "y";
  const auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (rename): 'y' already exists");
}

TEST(RenameTest, NoNewNameOrAMissingColumnIsAnError) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto op = Op(TransformKind::kRename, {"x"});
  auto error = CompileError(op, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (rename): needs a new name");
  op.output = "z";
  op.columns = {"w"};
  error = CompileError(op, batch);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(error.message(),
            "transform 0 (rename): column 'w' not found; columns at this step: x, y");
}

TEST(RenameTest, LaterOpsUseTheNewNameAndKeepTheValues) {
  const auto batch = Batch({{"x", Json(arrow::int64(), "[1, null]")}});
  auto rename = Op(TransformKind::kRename, {"x"});
  rename.output = "count";
  auto cast = Op(TransformKind::kCast, {"count"});
  cast.dtype = "int8";
  const auto out = Transform(*Compile({rename, cast}, batch), batch);
  ASSERT_EQ(out->schema()->field_names(), (std::vector<std::string>{"count"}));
  ExpectColumn(*out, "count", Json(arrow::int8(), "[1, null]"));
}

}  // namespace
}  // namespace stoker
