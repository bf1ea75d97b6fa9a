// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/slice_gather.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace stoker {
namespace {

std::shared_ptr<arrow::RecordBatch> Batch(int64_t first, int64_t rows) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  arrow::DoubleBuilder maybe;
  for (int64_t i = first; i < first + rows; ++i) {
    EXPECT_TRUE(ids.Append(i).ok());
    EXPECT_TRUE(names.Append("row" + std::to_string(i)).ok());
    EXPECT_TRUE((i % 3 == 0 ? maybe.AppendNull() : maybe.Append(0.5 * i)).ok());
  }
  auto schema =
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                     arrow::field("maybe", arrow::float64())});
  return arrow::RecordBatch::Make(
      schema, rows,
      {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie(), maybe.Finish().ValueOrDie()});
}

TEST(SliceGatherTest, HoldsTheSlicesRowsInOrder) {
  const auto a = Batch(0, 10);
  const auto b = Batch(100, 7);
  const std::vector<BatchSlice> slices = {{a, 2, 3}, {b, 0, 7}, {a, 9, 1}, {b, 3, 0}};
  const auto gathered =
      GatherSlices(slices, a->schema(), arrow::default_memory_pool()).ValueOrDie();
  ASSERT_TRUE(gathered->ValidateFull().ok());
  const auto expected =
      arrow::ConcatenateRecordBatches({a->Slice(2, 3), b, a->Slice(9, 1)}).ValueOrDie();
  EXPECT_TRUE(gathered->Equals(*expected)) << gathered->ToString();
  EXPECT_EQ(gathered->num_rows(), 11);
}

TEST(SliceGatherTest, CopiesIntoFreshBuffers) {
  const auto a = Batch(0, 8);
  const auto gathered =
      GatherSlices({{a, 0, 4}, {a, 4, 4}}, a->schema(), arrow::default_memory_pool()).ValueOrDie();
  EXPECT_TRUE(gathered->Equals(*a));
  EXPECT_NE(gathered->column(0)->data()->buffers[1]->data(),
            a->column(0)->data()->buffers[1]->data());
}

TEST(SliceGatherTest, NamesAColumnOfAnotherType) {
  const auto a = Batch(0, 4);
  auto other = arrow::RecordBatch::Make(
      arrow::schema(
          {arrow::field("id", arrow::int32()), a->schema()->field(1), a->schema()->field(2)}),
      4, {arrow::MakeArrayOfNull(arrow::int32(), 4).ValueOrDie(), a->column(1), a->column(2)});
  const auto result =
      GatherSlices({{a, 0, 4}, {other, 0, 4}}, a->schema(), arrow::default_memory_pool());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("column 'id'"), std::string::npos);
}

TEST(SliceGatherTest, RefusesASliceOutsideItsBatch) {
  const auto a = Batch(0, 4);
  EXPECT_FALSE(GatherSlices({{a, 2, 3}}, a->schema(), arrow::default_memory_pool()).ok());
}

}  // namespace
}  // namespace stoker
