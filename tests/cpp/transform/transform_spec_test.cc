// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// TransformSpec: errors naming the op's position, kind and column; the output schema; the part
// before the first op that draws (cached) and the part from it (per epoch).
#include "transform/transform_spec.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transform/transform_test_util.h"
#include "util/digest.h"

namespace stoker {
namespace {

TEST(TransformOpsTest, ErrorsNameTheOpsPositionAndItsColumnsAtThatStep) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}, {"y", Json(arrow::int8(), "[2]")}});
  auto rename = Op(TransformKind::kRename, {"x"});
  rename.output = "z";
  auto spec = TransformSpec::Make({rename, Op(TransformKind::kLog1p, {"x"})}, batch->schema());
  ASSERT_FALSE(spec.ok());
  EXPECT_TRUE(spec.status().IsKeyError());
  EXPECT_EQ(spec.status().message(),
            "transform 1 (log1p): column 'x' not found; columns at this step: z, y");
  spec = TransformSpec::Make({rename, Op(TransformKind::kLog1p, {"z", "y"})}, batch->schema());
  EXPECT_EQ(spec.status().message(), "transform 1 (log1p): takes exactly one column, got 2");
}

TEST(TransformOpsTest, OutputSchemaKeepsUntouchedFieldsAndEmptySpecIsIdentity) {
  auto field = arrow::field("x", arrow::int32(), /*nullable=*/false,
                            arrow::key_value_metadata({"k"}, {"v"}));
  auto schema = arrow::schema({field, arrow::field("y", arrow::int8())});
  auto spec = TransformSpec::Make({Op(TransformKind::kLog1p, {"y"})}, schema).ValueOrDie();
  EXPECT_TRUE(spec->output_schema()->field(0)->Equals(*field, /*check_metadata=*/true));
  EXPECT_EQ(spec->UntouchedColumns(), std::vector<std::string>{"x"});
  auto empty = TransformSpec::Make({}, schema).ValueOrDie();
  EXPECT_EQ(empty->canonical(), "[]");
  EXPECT_EQ(empty->digest().size(), 32u);
}

TEST(DrawOpsTest, TheCachedPartEndsBeforeTheFirstOpThatDraws) {
  const auto batch = Ids(100);
  auto cast = Op(TransformKind::kCast, {"id"});
  cast.dtype = "float64";
  auto noise = Op(TransformKind::kUniform, {"noise"});
  noise.low = 0;
  noise.high = 1;
  auto log = Op(TransformKind::kLog1p, {"noise"});
  const auto spec = Compile({cast, noise, log}, batch);
  const auto before = spec->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_EQ(before->schema()->ToString(), "id: double");
  const auto split =
      spec->ApplyDraws(before, arrow::default_memory_pool(), Draws(5, 1, 20)).ValueOrDie();
  EXPECT_TRUE(split->Equals(*Drawn(*spec, batch, Draws(5, 1, 20))));
  // Without an op that draws, the cached part is everything and ApplyDraws the identity.
  const auto plain = Compile({cast}, batch);
  EXPECT_FALSE(plain->draws());
  const auto whole = plain->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_EQ(plain->ApplyDraws(whole, arrow::default_memory_pool(), {}).ValueOrDie(), whole);
}

TEST(TransformSpecTest, AKindOutsideTheEnumIsUnsupported) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}});
  const auto error = CompileError(Op(static_cast<TransformKind>(99), {"x"}), batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (?): unsupported op");
}

TEST(TransformSpecTest, AnOpNamingTheWrongNumberOfColumnsIsAnError) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1]")}});
  auto error = CompileError(Op(TransformKind::kLog1p, {}), batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (log1p): takes exactly one column, got 0");
  auto stack = Op(TransformKind::kStack, {});
  stack.output = "v";
  error = CompileError(stack, batch);
  EXPECT_TRUE(error.IsInvalid());
  EXPECT_EQ(error.message(), "transform 0 (stack): names no column");
}

TEST(TransformSpecTest, TheDigestIsTheCanonicalFormsDigest) {
  const auto batch = Batch({{"x", Json(arrow::float64(), "[1]")}});
  auto op = Op(TransformKind::kClip, {"x"});
  op.low = 0;
  const auto spec = Compile({op}, batch);
  Digest digest;
  digest.Add(spec->canonical());
  EXPECT_EQ(spec->digest(), digest.Hex());
  op.low = 1;
  EXPECT_NE(Compile({op}, batch)->digest(), spec->digest());
}

TEST(TransformSpecTest, AnEmptySpecReturnsTheBatchItself) {
  const auto batch = Batch({{"x", Json(arrow::int32(), "[1, 2]")}});
  const auto spec = Compile({}, batch);
  EXPECT_FALSE(spec->draws());
  EXPECT_EQ(spec->Apply(batch, arrow::default_memory_pool()).ValueOrDie(), batch);
  EXPECT_TRUE(spec->output_schema()->Equals(*batch->schema()));
}

// The spec tells each op its position: two like ops draw different numbers, each from the key
// of its own position.
TEST(TransformSpecTest, EachOpDrawsUnderItsOwnPosition) {
  const auto batch = Ids(50);
  auto first = Op(TransformKind::kUniform, {"a"});
  first.low = 0;
  first.high = 1;
  first.dtype = "float64";
  auto second = first;
  second.columns = {"b"};
  const auto out = Drawn(*Compile({first, second}, batch), batch, Draws(8, 1, 100));
  const auto& a = static_cast<const arrow::DoubleArray&>(*out->GetColumnByName("a"));
  const auto& b = static_cast<const arrow::DoubleArray&>(*out->GetColumnByName("b"));
  const RowDraws at_0(DrawContext{.seed = 8, .epoch = 1, .op_index = 0});
  const RowDraws at_1(DrawContext{.seed = 8, .epoch = 1, .op_index = 1});
  for (int64_t i = 0; i < 50; ++i) {
    EXPECT_EQ(a.Value(i), at_0.Uniform(100 + i, 0)) << i;
    EXPECT_EQ(b.Value(i), at_1.Uniform(100 + i, 0)) << i;
    EXPECT_NE(a.Value(i), b.Value(i)) << i;
  }
}

// Part way through a spec, columns no op has changed keep their fields (nullability, metadata).
TEST(TransformSpecTest, TheCachedPartKeepsTheFieldsOfUnchangedColumns) {
  const auto field = arrow::field("x", arrow::int64(), /*nullable=*/false,
                                  arrow::key_value_metadata({"k"}, {"v"}));
  const auto batch =
      arrow::RecordBatch::Make(arrow::schema({field, arrow::field("y", arrow::int32())}), 2,
                               {Json(arrow::int64(), "[1, 2]"), Json(arrow::int32(), "[3, 4]")});
  auto cast = Op(TransformKind::kCast, {"y"});
  cast.dtype = "float32";
  auto noise = Op(TransformKind::kUniform, {"u"});
  noise.low = 0;
  noise.high = 1;
  const auto spec = Compile({cast, noise}, batch);
  const auto before = spec->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_TRUE(before->schema()->field(0)->Equals(*field, /*check_metadata=*/true));
  EXPECT_EQ(before->schema()->field(1)->ToString(), "y: float");
  // When the first op draws, the cached part is the batch itself.
  const auto drawing_first = Compile({noise, cast}, batch);
  EXPECT_EQ(drawing_first->ApplyBeforeDraws(batch, arrow::default_memory_pool()).ValueOrDie(),
            batch);
  const auto after =
      drawing_first->ApplyDraws(batch, arrow::default_memory_pool(), Draws(1, 0, 0)).ValueOrDie();
  EXPECT_TRUE(after->Equals(*Drawn(*drawing_first, batch, Draws(1, 0, 0))));
}

TEST(TransformSpecTest, UntouchedColumnsAreThoseNoOpNames) {
  const auto batch = Batch({{"a", Json(arrow::int32(), "[1]")},
                            {"b", Json(arrow::int32(), "[1]")},
                            {"c", Json(arrow::int32(), "[1]")},
                            {"d", Json(arrow::int32(), "[1]")}});
  auto stack = Op(TransformKind::kStack, {"a", "c"});
  stack.output = "ac";
  const auto spec = Compile({stack, Op(TransformKind::kDrop, {"ac"})}, batch);
  EXPECT_EQ(spec->UntouchedColumns(), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(Transform(*spec, batch)->schema()->field_names(), (std::vector<std::string>{"b", "d"}));
}

}  // namespace
}  // namespace stoker
