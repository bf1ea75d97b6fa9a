// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// RowFilter: an Arrow compute expression bound to the columns read; the rows it keeps (a null
// counts as false), the columns it reads, its serialized form and digest, and the row groups
// whose Parquet statistics rule out every row.
#include "transform/row_filter.h"

#include <arrow/api.h>
#include <arrow/compute/expression.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/file_reader.h>

#include <string>
#include <vector>

#include "common/fixtures.h"
#include "transform/transform_test_util.h"

namespace stoker {
namespace {

namespace cp = arrow::compute;

std::shared_ptr<arrow::RecordBatch> Rows() {
  return Batch({{"x", Json(arrow::int32(), "[1, 5, null, 7]")},
                {"s", Json(arrow::utf8(), R"(["a", "b", "c", "d"])")}});
}

std::shared_ptr<RowFilter> Filter(const cp::Expression& expression,
                                  const std::shared_ptr<arrow::Schema>& schema) {
  auto filter = RowFilter::Make(expression, schema);
  EXPECT_TRUE(filter.ok()) << filter.status().ToString();
  return filter.ValueOrDie();
}

TEST(RowFilterTest, KeepsTheRowsWhereTheExpressionIsTrueAndNullCountsAsFalse) {
  const auto batch = Rows();
  const auto filter = Filter(cp::greater(cp::field_ref("x"), cp::literal(3)), batch->schema());
  const auto kept = filter->Apply(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_TRUE(kept->Equals(
      *Batch({{"x", Json(arrow::int32(), "[5, 7]")}, {"s", Json(arrow::utf8(), R"(["b", "d"])")}})))
      << kept->ToString();
  EXPECT_EQ(filter->Count(batch, arrow::default_memory_pool()).ValueOrDie(), 2);
  EXPECT_EQ(filter->ToString(), "(x > 3)");
}

// A filter that binds to a constant gives a scalar mask: all rows or none.
TEST(RowFilterTest, AConstantFilterKeepsAllRowsOrNone) {
  const auto batch = Rows();
  const auto all = Filter(cp::literal(true), batch->schema());
  EXPECT_TRUE(all->Apply(batch, arrow::default_memory_pool()).ValueOrDie()->Equals(*batch));
  EXPECT_EQ(all->Count(batch, arrow::default_memory_pool()).ValueOrDie(), 4);
  const auto none = Filter(cp::literal(false), batch->schema());
  EXPECT_EQ(none->Apply(batch, arrow::default_memory_pool()).ValueOrDie()->num_rows(), 0);
  EXPECT_EQ(none->Count(batch, arrow::default_memory_pool()).ValueOrDie(), 0);
}

TEST(RowFilterTest, AnUnknownColumnOrANonBooleanExpressionIsAnErrorNamingIt) {
  const auto schema = Rows()->schema();
  const auto unknown = RowFilter::Make(cp::greater(cp::field_ref("nope"), cp::literal(1)), schema);
  EXPECT_TRUE(unknown.status().IsInvalid());
  EXPECT_EQ(unknown.status().message().rfind("filter (nope > 1): ", 0), 0u)
      << unknown.status().message();
  const auto number =
      RowFilter::Make(cp::call("add", {cp::field_ref("x"), cp::literal(1)}), schema);
  EXPECT_TRUE(number.status().IsTypeError());
  EXPECT_EQ(number.status().message(), "filter add(x, 1) gives int32, not a boolean");
}

TEST(RowFilterTest, ColumnsOfNamesEachColumnOnceAndOnlyByName) {
  const auto expression = cp::and_({cp::greater(cp::field_ref("x"), cp::literal(1)),
                                    cp::equal(cp::field_ref("s"), cp::literal("a")),
                                    cp::less(cp::field_ref("x"), cp::literal(9))});
  EXPECT_EQ(RowFilter::ColumnsOf(expression).ValueOrDie(), (std::vector<std::string>{"x", "s"}));
  const auto by_index = RowFilter::ColumnsOf(cp::field_ref(arrow::FieldRef(0)));
  EXPECT_TRUE(by_index.status().IsInvalid());
  EXPECT_EQ(by_index.status().message().rfind("filter: refer to columns by name, got ", 0), 0u)
      << by_index.status().message();
}

TEST(RowFilterTest, DeserializeReadsArrowsFormAndRejectsOtherBytes) {
  const auto expression = cp::greater(cp::field_ref("x"), cp::literal(3));
  const auto serialized = cp::Serialize(expression).ValueOrDie();
  EXPECT_TRUE(RowFilter::Deserialize(serialized).ValueOrDie().Equals(expression));
  const auto garbage = RowFilter::Deserialize(arrow::Buffer::FromString("not an expression"));
  EXPECT_TRUE(garbage.status().IsInvalid());
  EXPECT_EQ(
      garbage.status().message().rfind("filter is not an expression in Arrow's serialized form "
                                       "(arrow::compute::Serialize): ",
                                       0),
      0u)
      << garbage.status().message();
  // A valid file cut short is rejected too, not trusted.
  const auto cut = arrow::SliceBuffer(serialized, 0, serialized->size() / 2);
  EXPECT_TRUE(RowFilter::Deserialize(cut).status().IsInvalid());
}

TEST(RowFilterTest, TheDigestIsOfTheExpression) {
  const auto schema = Rows()->schema();
  const auto a = Filter(cp::greater(cp::field_ref("x"), cp::literal(3)), schema);
  const auto same = Filter(cp::greater(cp::field_ref("x"), cp::literal(3)), schema);
  const auto other = Filter(cp::greater(cp::field_ref("x"), cp::literal(4)), schema);
  EXPECT_EQ(a->digest().size(), 32u);
  EXPECT_EQ(a->digest(), same->digest());
  EXPECT_NE(a->digest(), other->digest());
}

// One file of two row groups, row_id 0..49 and 50..99: statistics prove which can match.
TEST(RowFilterTest, MayMatchSkipsRowGroupsWhoseStatisticsRuleOutEveryRow) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), /*files=*/1, /*rows_per_file=*/100, /*row_group_size=*/50);
  const auto reader =
      parquet::ParquetFileReader::OpenFile((dir.path() / "part-0.parquet").string());
  const auto metadata = reader->metadata();
  ASSERT_EQ(metadata->num_row_groups(), 2);
  const auto first = metadata->RowGroup(0);
  const auto second = metadata->RowGroup(1);
  const auto schema = arrow::schema(
      {arrow::field("row_id", arrow::int64()), arrow::field("value", arrow::float32())});
  const std::vector<int> leaves = {0, 1};

  const auto late =
      Filter(cp::greater_equal(cp::field_ref("row_id"), cp::literal(int64_t{60})), schema);
  EXPECT_FALSE(late->MayMatch(*first, leaves));
  EXPECT_TRUE(late->MayMatch(*second, leaves));
  // value = row_id / 2: value < 10 only in the first row group.
  const auto small = Filter(cp::less(cp::field_ref("value"), cp::literal(10.0f)), schema);
  EXPECT_TRUE(small->MayMatch(*first, leaves));
  EXPECT_FALSE(small->MayMatch(*second, leaves));
  // Without statistics for the column (no single leaf), nothing is ruled out.
  EXPECT_TRUE(late->MayMatch(*first, {-1, 1}));
}

}  // namespace
}  // namespace stoker
