// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the ops that draw share: the new column they add (last, under a name that must be
// free), the integer `key` column their draws may be keyed by, the probability check, and
// their `key` in the canonical form.
#include "transform/ops/draw_op.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "transform/transform_test_util.h"

namespace stoker {
namespace {

SchemaStep Step() {
  SchemaStep step;
  step.columns.names = {"id", "s"};
  step.columns.values = {arrow::uint32(), arrow::utf8()};
  return step;
}

TEST(DrawOpTest, AddDrawnColumnAppendsANewColumnUnderAFreeName) {
  SchemaStep step = Step();
  auto op = Op(TransformKind::kUniform, {"u"});
  ASSERT_TRUE(AddDrawnColumn(op, "uniform", arrow::float64(), &step).ok());
  EXPECT_EQ(step.columns.names, (std::vector<std::string>{"id", "s", "u"}));
  EXPECT_TRUE(step.columns.values[2]->Equals(*arrow::float64()));
  const auto again = AddDrawnColumn(op, "uniform", arrow::float64(), &step);
  EXPECT_TRUE(again.IsInvalid());
  EXPECT_EQ(again.message(),
            "column 'u' exists already; uniform writes a new column: name one that does not "
            "exist");
  EXPECT_EQ(step.columns.names.size(), 3u);
}

TEST(DrawOpTest, TheKeyMustBeAnIntegerColumnAndABadOneAddsNothing) {
  SchemaStep step = Step();
  auto op = Op(TransformKind::kRandint, {"n"});
  EXPECT_TRUE(CheckKey(op, "randint", step).ok());
  op.key = "id";
  EXPECT_TRUE(CheckKey(op, "randint", step).ok());
  op.key = "s";
  auto error = CheckKey(op, "randint", step);
  EXPECT_TRUE(error.IsTypeError());
  EXPECT_EQ(error.message(), "column 's' has type string; randint takes integer ids as its key");
  op.key = "nope";
  EXPECT_TRUE(CheckKey(op, "randint", step).IsKeyError());
  error = AddDrawnColumn(op, "randint", arrow::int64(), &step);
  EXPECT_TRUE(error.IsKeyError());
  EXPECT_EQ(step.columns.names, (std::vector<std::string>{"id", "s"}));
}

TEST(DrawOpTest, AProbabilityIsInZeroOne) {
  EXPECT_TRUE(CheckProbability(0).ok());
  EXPECT_TRUE(CheckProbability(1).ok());
  EXPECT_EQ(CheckProbability(-0.25).message(), "p must be in [0, 1], got -0.250000");
  EXPECT_TRUE(CheckProbability(1.0000001).IsInvalid());
  EXPECT_TRUE(CheckProbability(std::numeric_limits<double>::quiet_NaN()).IsInvalid());
}

TEST(DrawOpTest, EveryDrawingOpDrawsAddsItsColumnLastAndWritesItsKeyLast) {
  const auto batch = Batch({{"id", Json(arrow::int64(), "[4, 9]")},
                            {"l", Json(arrow::list(arrow::int32()), "[[1], [2, 3]]")}});
  std::vector<TransformOp> ops;
  ops.push_back(Op(TransformKind::kBernoulliMask, {"m"}));
  ops.back().p = 0.5;
  ops.push_back(Op(TransformKind::kDropout, {"l"}));
  ops.back().p = 0.5;
  ops.push_back(Op(TransformKind::kUniform, {"u"}));
  ops.back().low = 0;
  ops.back().high = 1;
  ops.push_back(Op(TransformKind::kRandint, {"r"}));
  ops.back().low = 0;
  ops.back().high = 10;
  for (auto& op : ops) op.key = "id";
  const auto spec = Compile(ops, batch);
  EXPECT_TRUE(spec->draws());
  EXPECT_EQ(spec->output_schema()->field_names(),
            (std::vector<std::string>{"id", "l", "m", "u", "r"}));
  // Each op's object ends with its key.
  const std::string canonical = spec->canonical();
  const std::string key_last = R"(,"key":"id"})";
  size_t keys = 0;
  for (size_t at = canonical.find(key_last); at != std::string::npos;
       at = canonical.find(key_last, at + 1)) {
    ++keys;
  }
  EXPECT_EQ(keys, ops.size()) << canonical;
  EXPECT_EQ(static_cast<size_t>(std::count(canonical.begin(), canonical.end(), '}')), ops.size());
  // Keyed by the id column, where the unit's rows stand does not matter.
  EXPECT_TRUE(Drawn(*spec, batch, Draws(3, 1, 0))->Equals(*Drawn(*spec, batch, Draws(3, 1, 77))));
}

TEST(DrawOpTest, AKeyColumnWithNullsIsAnErrorAtApplyNamingOpAndColumn) {
  const auto batch = Batch({{"id", Json(arrow::int64(), "[4, null]")}});
  auto op = Op(TransformKind::kBernoulliMask, {"m"});
  op.p = 0.5;
  op.key = "id";
  const auto out = Compile({op}, batch)->Apply(batch, arrow::default_memory_pool(), Draws(1, 0, 0));
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(out.status().IsInvalid());
  EXPECT_EQ(out.status().message(),
            "transform 0 (bernoulli_mask) on column 'm': key column 'id' has nulls: every row "
            "needs an id to draw from");
}

}  // namespace
}  // namespace stoker
