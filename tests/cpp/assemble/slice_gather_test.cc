// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/slice_gather.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstring>
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

// A batch like Batch(first, rows) whose id values lie in `values` (rows * 8 bytes), written
// there.
std::shared_ptr<arrow::RecordBatch> BatchOver(std::shared_ptr<arrow::Buffer> values, int64_t first,
                                              int64_t rows) {
  auto* ids = reinterpret_cast<int64_t*>(values->mutable_data());
  for (int64_t i = 0; i < rows; ++i) ids[i] = first + i;
  const auto plain = Batch(first, rows);
  auto id = arrow::MakeArray(arrow::ArrayData::Make(arrow::int64(), rows, {nullptr, values}, 0));
  return arrow::RecordBatch::Make(plain->schema(), rows, {id, plain->column(1), plain->column(2)});
}

std::vector<std::shared_ptr<arrow::Buffer>> Buffers(int64_t rows) {
  std::vector<std::shared_ptr<arrow::Buffer>> into;
  for (int i = 0; i < 3; ++i) into.push_back(arrow::AllocateBuffer(rows * 8).ValueOrDie());
  return into;
}

std::shared_ptr<arrow::RecordBatch> Concatenated(const std::vector<BatchSlice>& slices) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> parts;
  for (const auto& slice : slices) parts.push_back(slice.batch->Slice(slice.offset, slice.length));
  return arrow::ConcatenateRecordBatches(parts).ValueOrDie();
}

TEST(SliceGatherTest, SlicesAlreadyInPlaceStayAndOthersAreCopiedIntoTheGivenBuffer) {
  // 9 rows: rows 0..2 and 5..8 of the id column were written in place (a source's engine
  // wrote them into the mixed batch); rows 3..4 come from a batch elsewhere.
  const auto into = Buffers(9);
  std::memset(into[0]->mutable_data(), 0xAB, 9 * 8);
  const auto in_front = BatchOver(arrow::SliceMutableBuffer(into[0], 0, 3 * 8), 0, 3);
  const auto in_back = BatchOver(arrow::SliceMutableBuffer(into[0], 5 * 8, 4 * 8), 50, 4);
  const auto elsewhere = Batch(100, 6);
  const std::vector<BatchSlice> slices = {
      {in_front, 0, 3}, {elsewhere, 2, 2}, {in_back, 0, 4}, {elsewhere, 0, 0}};
  const auto expected = Concatenated(slices);
  const auto gathered =
      GatherSlices(slices, in_front->schema(), arrow::default_memory_pool(), &into).ValueOrDie();
  ASSERT_TRUE(gathered->ValidateFull().ok());
  EXPECT_TRUE(gathered->Equals(*expected)) << gathered->ToString();
  EXPECT_EQ(gathered->column(0)->data()->buffers[1]->data(), into[0]->data());
  const auto* ids = reinterpret_cast<const int64_t*>(into[0]->data());
  EXPECT_EQ(std::vector<int64_t>(ids, ids + 9),
            (std::vector<int64_t>{0, 1, 2, 102, 103, 50, 51, 52, 53}));
  // The string column and the column with nulls are concatenated, not put in `into`.
  for (int i : {1, 2}) {
    for (const auto& buffer : gathered->column(i)->data()->buffers) {
      if (buffer != nullptr) EXPECT_NE(buffer->data(), into[i]->data()) << "column " << i;
    }
  }
}

TEST(SliceGatherTest, SlicesFromElsewhereAreCopiedIntoTheGivenBuffer) {
  const auto a = Batch(0, 10);
  const auto b = Batch(100, 7);
  const std::vector<BatchSlice> slices = {{a, 2, 3}, {b, 0, 7}};
  const auto into = Buffers(10);
  const auto gathered =
      GatherSlices(slices, a->schema(), arrow::default_memory_pool(), &into).ValueOrDie();
  EXPECT_TRUE(gathered->Equals(*Concatenated(slices))) << gathered->ToString();
  EXPECT_EQ(gathered->column(0)->data()->buffers[1]->data(), into[0]->data());
  EXPECT_EQ(reinterpret_cast<const int64_t*>(into[0]->data())[3], 100);
}

TEST(SliceGatherTest, AGivenBufferOfAnotherSizeOrReadOnlyIsNotUsed) {
  const auto a = Batch(0, 10);
  const std::vector<BatchSlice> slices = {{a, 1, 4}, {a, 6, 4}};  // 8 rows
  std::vector<int64_t> storage(8, -1);
  const std::vector<std::vector<std::shared_ptr<arrow::Buffer>>> unusable = {
      Buffers(9),
      Buffers(7),
      {std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(storage.data()), 8 * 8),
       nullptr, nullptr}};
  for (const auto& into : unusable) {
    const auto gathered =
        GatherSlices(slices, a->schema(), arrow::default_memory_pool(), &into).ValueOrDie();
    EXPECT_TRUE(gathered->Equals(*Concatenated(slices))) << gathered->ToString();
    EXPECT_NE(gathered->column(0)->data()->buffers[1]->data(), into[0]->data());
  }
  EXPECT_EQ(storage, std::vector<int64_t>(8, -1));
}

TEST(SliceGatherTest, ASliceInTheGivenBufferButOutOfPlaceGetsABufferOfItsOwn) {
  // 8 rows: a slice from elsewhere, then one whose values lie in the given buffer at rows
  // 0..3 (or overlapping them), where the first slice belongs. Copying into the buffer would
  // overwrite them before they were copied.
  for (const int64_t at : {0, 2, 5}) {
    SCOPED_TRACE(::testing::Message() << "values at row " << at);
    const auto into = Buffers(9);
    const auto in_buffer = BatchOver(arrow::SliceMutableBuffer(into[0], at * 8, 4 * 8), 50, 4);
    const auto elsewhere = Batch(100, 4);
    const std::vector<BatchSlice> slices = {{elsewhere, 0, 4}, {in_buffer, 0, 4}};
    const auto expected = Concatenated(slices);
    // The given buffer is the first 8 rows of `into`, so that values at row 5 lie partly in
    // it and partly past it.
    const std::vector<std::shared_ptr<arrow::Buffer>> given = {
        arrow::SliceMutableBuffer(into[0], 0, 8 * 8), into[1], into[2]};
    const auto gathered =
        GatherSlices(slices, elsewhere->schema(), arrow::default_memory_pool(), &given)
            .ValueOrDie();
    ASSERT_TRUE(gathered->ValidateFull().ok());
    EXPECT_TRUE(gathered->Equals(*expected)) << gathered->ToString();
    EXPECT_NE(gathered->column(0)->data()->buffers[1]->data(), given[0]->data());
    // The values the slice reads from are as they were.
    const auto* ids = reinterpret_cast<const int64_t*>(into[0]->data() + at * 8);
    EXPECT_EQ(std::vector<int64_t>(ids, ids + 4), (std::vector<int64_t>{50, 51, 52, 53}));
  }
}

}  // namespace
}  // namespace stoker
