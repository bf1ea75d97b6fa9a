// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// ragged: a list column marked to reach tensors as values + offsets, followed through renames
// and drops.
#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, RaggedFollowsRenamesAndDrops) {
  const auto type = arrow::list(arrow::int64());
  const auto batch = Batch({{"h", Json(type, "[[1, 2], null]")}, {"g", Json(type, "[[], [3]]")}});
  auto rename = Op(TransformKind::kRename, {"h"});
  rename.output = "history";
  const auto spec = Compile({Op(TransformKind::kRagged, {"h"}), Op(TransformKind::kRagged, {"g"}),
                             rename, Op(TransformKind::kDrop, {"g"})},
                            batch);
  EXPECT_EQ(spec->ragged_columns(), std::vector<std::string>{"history"});
  const auto out = Transform(*spec, batch);
  ExpectColumn(*out, "history", Json(type, "[[1, 2], null]"));
  EXPECT_EQ(spec->canonical(),
            R"([{"op":"ragged","column":"h"},{"op":"ragged","column":"g"},)"
            R"({"op":"rename","column":"h","to":"history"},{"op":"drop","columns":["g"]}])");

  const auto error = CompileError(Op(TransformKind::kRagged, {"x"}),
                                  Batch({{"x", Json(arrow::utf8(), R"(["a"])")}}));
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (ragged): column 'x' has type string; ragged takes variable-length "
            "lists of numbers");
}

TEST(RaggedTest, LargeListsPassUnchanged) {
  const auto type = arrow::large_list(arrow::float64());
  const auto batch = Batch({{"h", Json(type, "[[1.5], null, []]")}});
  const auto spec = Compile({Op(TransformKind::kRagged, {"h"})}, batch);
  EXPECT_EQ(spec->ragged_columns(), std::vector<std::string>{"h"});
  EXPECT_TRUE(spec->output_schema()->Equals(*batch->schema()));
  ExpectColumn(*Transform(*spec, batch), "h", Json(type, "[[1.5], null, []]"));
}

TEST(RaggedTest, ListsOfTextAndFixedSizeListsAreTypeErrors) {
  const auto batch = Batch({{"s", Json(arrow::list(arrow::utf8()), R"([["a"]])")},
                            {"f", Json(arrow::fixed_size_list(arrow::int32(), 1), "[[1]]")}});
  auto error = CompileError(Op(TransformKind::kRagged, {"s"}), batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (ragged): column 's' has type list<item: string>; ragged takes "
            "variable-length lists of numbers");
  error = CompileError(Op(TransformKind::kRagged, {"f"}), batch);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(),
            "transform 0 (ragged): column 'f' has type fixed_size_list<item: int32>[1]; ragged "
            "takes variable-length lists of numbers");
}

}  // namespace
}  // namespace stoker
