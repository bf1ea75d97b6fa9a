// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/partition_filter.h"

#include <arrow/compute/expression.h>
#include <gtest/gtest.h>

namespace stoker {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::Schema> Partitions() {
  return arrow::schema({arrow::field("day", arrow::utf8()), arrow::field("shard", arrow::int32())});
}

arrow::ScalarVector Values(const char* day, int32_t shard) {
  return {arrow::MakeScalar(day), arrow::MakeScalar(shard)};
}

TEST(PartitionFilterTest, EveryConjunctOnPartitionsMustHoldInAChainOfAnds) {
  // (shard >= 2) AND (x < 0) AND (day != "b") AND (shard < 5), Kleene and plain ANDs mixed.
  const auto filter =
      cp::and_({cp::greater_equal(cp::field_ref("shard"), cp::literal(2)),
                cp::call("and", {cp::less(cp::field_ref("x"), cp::literal(0)),
                                 cp::not_equal(cp::field_ref("day"), cp::literal("b"))}),
                cp::less(cp::field_ref("shard"), cp::literal(5))});
  const auto pruner = PartitionFilter::Make(filter, Partitions()).ValueOrDie();
  EXPECT_TRUE(pruner.MayMatch(Values("a", 2)).ValueOrDie());
  EXPECT_TRUE(pruner.MayMatch(Values("a", 4)).ValueOrDie());
  EXPECT_FALSE(pruner.MayMatch(Values("a", 1)).ValueOrDie());
  EXPECT_FALSE(pruner.MayMatch(Values("a", 5)).ValueOrDie());
  EXPECT_FALSE(pruner.MayMatch(Values("b", 3)).ValueOrDie());
}

TEST(PartitionFilterTest, AConjunctNamingBothKindsOfColumnDecidesNothing) {
  // day == x compares a partition column with a file column: no file can be ruled out.
  const auto pruner =
      PartitionFilter::Make(cp::equal(cp::field_ref("day"), cp::field_ref("x")), Partitions())
          .ValueOrDie();
  EXPECT_TRUE(pruner.MayMatch(Values("a", 1)).ValueOrDie());
  EXPECT_TRUE(
      pruner.MayMatch({arrow::MakeNullScalar(arrow::utf8()), arrow::MakeNullScalar(arrow::int32())})
          .ValueOrDie());
}

TEST(PartitionFilterTest, ALiteralConjunctIsNotAPartitionCondition) {
  // A constant false names no column: the row filter drops every row, pruning does not.
  const auto pruner = PartitionFilter::Make(cp::literal(false), Partitions()).ValueOrDie();
  EXPECT_TRUE(pruner.MayMatch(Values("a", 1)).ValueOrDie());
  // Beside a partition condition it is left out, and that condition decides.
  const auto both =
      PartitionFilter::Make(
          cp::and_(cp::literal(false), cp::equal(cp::field_ref("day"), cp::literal("a"))),
          Partitions())
          .ValueOrDie();
  EXPECT_TRUE(both.MayMatch(Values("a", 1)).ValueOrDie());
  EXPECT_FALSE(both.MayMatch(Values("c", 1)).ValueOrDie());
}

TEST(PartitionFilterTest, ANonBooleanConditionPrunesNothing) {
  // `shard` alone is an int32 "condition": the row filter's own check refuses it.
  const auto pruner = PartitionFilter::Make(cp::field_ref("shard"), Partitions()).ValueOrDie();
  EXPECT_TRUE(pruner.MayMatch(Values("a", 0)).ValueOrDie());
}

TEST(PartitionFilterTest, NoPartitionColumnsMeansNothingToPruneBy) {
  const auto pruner =
      PartitionFilter::Make(cp::equal(cp::field_ref("day"), cp::literal("a")), arrow::schema({}))
          .ValueOrDie();
  EXPECT_TRUE(pruner.MayMatch({}).ValueOrDie());
}

TEST(PartitionFilterTest, AConditionThatCannotBeBoundIsAnErrorSayingWhere) {
  // No kernel adds a string to an int.
  const auto made = PartitionFilter::Make(
      cp::greater(cp::call("add", {cp::field_ref("day"), cp::field_ref("shard")}), cp::literal(1)),
      Partitions());
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().message().rfind("filter on partition columns: ", 0), 0u)
      << made.status().message();
}

}  // namespace
}  // namespace stoker
