// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/column_types.h"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/bit_util.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/fixtures.h"

namespace stoker {
namespace {

constexpr int64_t kRows = 5;

// Reads `path` back as one chunk per column: what a decoded unit holds.
std::shared_ptr<arrow::Table> ReadBack(const std::filesystem::path& path) {
  auto file = arrow::io::ReadableFile::Open(path.string()).ValueOrDie();
  auto reader = parquet::arrow::OpenFile(file, arrow::default_memory_pool()).ValueOrDie();
  auto table = reader->ReadTable().ValueOrDie();
  return table->CombineChunks().ValueOrDie();
}

// kRows rows: id (int64 = r), maybe (int32, null on row 2), vec (fixed_size_list<float>[3] =
// 3r, 3r+1, 3r+2), holes (fixed_size_list<float>[2], no null list but a null value in row 1),
// grid (fixed_size_list<fixed_size_list<int16>[2]>[3] = 6r .. 6r+5), flag (bool), name
// (string), seq (list<float>).
std::shared_ptr<arrow::Table> WrittenTable(const std::filesystem::path& dir) {
  arrow::Int64Builder id;
  arrow::Int32Builder maybe;
  arrow::FloatBuilder vec_values, hole_values, seq_values;
  arrow::Int16Builder grid_values;
  arrow::BooleanBuilder flag;
  arrow::StringBuilder name;
  for (int64_t r = 0; r < kRows; ++r) {
    EXPECT_TRUE(id.Append(r).ok());
    EXPECT_TRUE((r == 2 ? maybe.AppendNull() : maybe.Append(static_cast<int32_t>(10 * r))).ok());
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(vec_values.Append(static_cast<float>(3 * r + k)).ok());
    for (int k = 0; k < 2; ++k) {
      const bool hole = r == 1 && k == 1;
      EXPECT_TRUE((hole ? hole_values.AppendNull() : hole_values.Append(1.5f * r)).ok());
    }
    for (int k = 0; k < 6; ++k) {
      EXPECT_TRUE(grid_values.Append(static_cast<int16_t>(6 * r + k)).ok());
    }
    EXPECT_TRUE(flag.Append(r % 2 == 0).ok());
    EXPECT_TRUE(name.Append(std::to_string(r)).ok());
    EXPECT_TRUE(seq_values.Append(static_cast<float>(r)).ok());
  }
  auto vec = arrow::FixedSizeListArray::FromArrays(vec_values.Finish().ValueOrDie(), 3);
  auto holes = arrow::FixedSizeListArray::FromArrays(hole_values.Finish().ValueOrDie(), 2);
  auto pairs = arrow::FixedSizeListArray::FromArrays(grid_values.Finish().ValueOrDie(), 2);
  auto grid = arrow::FixedSizeListArray::FromArrays(pairs.ValueOrDie(), 3);
  std::vector<int32_t> offsets(kRows + 1);
  for (int64_t r = 0; r <= kRows; ++r) offsets[r] = static_cast<int32_t>(r);
  arrow::Int32Builder seq_offsets;
  EXPECT_TRUE(seq_offsets.AppendValues(offsets).ok());
  auto seq = arrow::ListArray::FromArrays(*seq_offsets.Finish().ValueOrDie(),
                                          *seq_values.Finish().ValueOrDie());
  std::vector<std::shared_ptr<arrow::Array>> columns = {
      id.Finish().ValueOrDie(),   maybe.Finish().ValueOrDie(),
      vec.ValueOrDie(),           holes.ValueOrDie(),
      grid.ValueOrDie(),          flag.Finish().ValueOrDie(),
      name.Finish().ValueOrDie(), seq.ValueOrDie()};
  const std::vector<std::string> names = {"id",   "maybe", "vec",  "holes",
                                          "grid", "flag",  "name", "seq"};
  arrow::FieldVector fields;
  for (size_t i = 0; i < columns.size(); ++i) {
    fields.push_back(arrow::field(names[i], columns[i]->type()));
  }
  const auto path = dir / "columns.parquet";
  testing::WriteTable(path, *arrow::Table::Make(arrow::schema(fields), columns), kRows);
  return ReadBack(path);
}

class ColumnTypesTest : public ::testing::Test {
 protected:
  void SetUp() override { table_ = WrittenTable(dir_.path()); }
  std::shared_ptr<arrow::ArrayData> Column(const std::string& name) const {
    auto column = table_->GetColumnByName(name);
    EXPECT_NE(column, nullptr) << name;
    EXPECT_EQ(column->num_chunks(), 1) << name;
    return column->chunk(0)->data();
  }
  testing::TempDir dir_;
  std::shared_ptr<arrow::Table> table_;
};

template <typename T>
std::vector<T> ValuesAt(const FixedWidthValues& values, int64_t count) {
  std::vector<T> out(count);
  std::memcpy(out.data(), values.first, count * sizeof(T));
  return out;
}

TEST(FixedWidthLayoutTest, ANumberIsOneValueOfItsWidth) {
  const std::vector<std::pair<std::shared_ptr<arrow::DataType>, int64_t>> numbers = {
      {arrow::int8(), 1},    {arrow::uint8(), 1},   {arrow::int16(), 2},  {arrow::uint16(), 2},
      {arrow::int32(), 4},   {arrow::uint32(), 4},  {arrow::int64(), 8},  {arrow::uint64(), 8},
      {arrow::float16(), 2}, {arrow::float32(), 4}, {arrow::float64(), 8}};
  for (const auto& [type, width] : numbers) {
    SCOPED_TRACE(type->ToString());
    const auto layout = GetFixedWidthLayout(*type);
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(layout->row_bytes, width);
    EXPECT_EQ(layout->values_per_row, 1);
    EXPECT_TRUE(layout->value_type->Equals(*type));
  }
}

TEST(FixedWidthLayoutTest, FixedSizeListsMultiplyTheirLengthsIn) {
  const auto vec = GetFixedWidthLayout(*arrow::fixed_size_list(arrow::float32(), 3));
  ASSERT_TRUE(vec.ok()) << vec.status();
  EXPECT_EQ(vec->row_bytes, 12);
  EXPECT_EQ(vec->values_per_row, 3);
  EXPECT_TRUE(vec->value_type->Equals(*arrow::float32()));

  const auto grid =
      GetFixedWidthLayout(*arrow::fixed_size_list(arrow::fixed_size_list(arrow::int16(), 2), 3));
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->row_bytes, 12);
  EXPECT_EQ(grid->values_per_row, 6);
  EXPECT_TRUE(grid->value_type->Equals(*arrow::int16()));

  const auto empty = GetFixedWidthLayout(*arrow::fixed_size_list(arrow::float64(), 0));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->row_bytes, 0);
  EXPECT_EQ(empty->values_per_row, 0);
}

TEST(FixedWidthLayoutTest, OtherTypesAreATypeErrorNamingTheType) {
  const std::vector<std::pair<std::shared_ptr<arrow::DataType>, std::string>> others = {
      {arrow::boolean(), "bool"},  // bit-packed, not fixed-width here
      {arrow::utf8(), "string"},
      {arrow::binary(), "binary"},
      {arrow::fixed_size_binary(4), "fixed_size_binary[4]"},
      {arrow::date32(), "date32[day]"},
      {arrow::decimal128(10, 2), "decimal128(10, 2)"},
      {arrow::list(arrow::float32()), "list<item: float>"},
      {arrow::struct_({arrow::field("x", arrow::int32())}), "struct<x: int32>"},
      // The innermost type is the one named.
      {arrow::fixed_size_list(arrow::utf8(), 2), "string"},
      {arrow::fixed_size_list(arrow::boolean(), 2), "bool"},
  };
  for (const auto& [type, named] : others) {
    SCOPED_TRACE(type->ToString());
    const auto layout = GetFixedWidthLayout(*type);
    ASSERT_FALSE(layout.ok());
    EXPECT_TRUE(layout.status().IsTypeError()) << layout.status();
    EXPECT_EQ(layout.status().message(), "type " + named + " is not fixed-width numeric");
  }
}

TEST(CheckTensorTypeTest, TakesNumbersBoolAndFixedSizeListsOfNumbers) {
  for (const auto& type : {arrow::int8(), arrow::uint64(), arrow::float16(), arrow::float64(),
                           arrow::boolean(), arrow::fixed_size_list(arrow::float32(), 3),
                           arrow::fixed_size_list(arrow::fixed_size_list(arrow::int16(), 2), 3)}) {
    EXPECT_TRUE(CheckTensorType(*arrow::field("x", type)).ok()) << type->ToString();
  }
}

TEST(CheckTensorTypeTest, RefusesOtherTypesNamingTheColumnAndItsType) {
  for (const auto& type : {arrow::utf8(), arrow::list(arrow::float32()), arrow::date32(),
                           arrow::fixed_size_list(arrow::boolean(), 2)}) {
    SCOPED_TRACE(type->ToString());
    const auto status = CheckTensorType(*arrow::field("tokens", type));
    ASSERT_TRUE(status.IsTypeError()) << status;
    EXPECT_NE(status.message().find("column 'tokens' has type " + type->ToString() + ","),
              std::string::npos)
        << status;
    EXPECT_NE(status.message().find("output=\"arrow\""), std::string::npos) << status;
  }
}

TEST_F(ColumnTypesTest, ColumnsReadFromParquetHaveTheLayoutsOfTheirTypes) {
  const auto& schema = *table_->schema();
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("id")).ok());
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("vec")).ok());
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("grid")).ok());
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("flag")).ok());
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("name")).IsTypeError());
  EXPECT_TRUE(CheckTensorType(*schema.GetFieldByName("seq")).IsTypeError());
  const auto grid = GetFixedWidthLayout(*schema.GetFieldByName("grid")->type());
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->row_bytes, 12);
  EXPECT_EQ(grid->values_per_row, 6);
}

TEST_F(ColumnTypesTest, ScalarValuesStartAtTheArraysOffset) {
  const auto id = Column("id");
  const auto whole = GetFixedWidthValues(*id);
  EXPECT_TRUE(whole.inner_dims.empty());
  ASSERT_NE(whole.buffer, nullptr);
  EXPECT_EQ(ValuesAt<int64_t>(whole, kRows), (std::vector<int64_t>{0, 1, 2, 3, 4}));

  const auto tail = GetFixedWidthValues(*id->Slice(2, 3));
  EXPECT_TRUE(tail.inner_dims.empty());
  EXPECT_EQ(tail.first, whole.first + 2 * sizeof(int64_t));
  EXPECT_EQ(ValuesAt<int64_t>(tail, 3), (std::vector<int64_t>{2, 3, 4}));

  // An empty slice at the end still points just past the last value.
  const auto none = GetFixedWidthValues(*id->Slice(kRows, 0));
  EXPECT_EQ(none.first, whole.first + kRows * sizeof(int64_t));
}

TEST_F(ColumnTypesTest, FixedSizeListValuesFollowTheListsToTheirValues) {
  const auto vec = GetFixedWidthValues(*Column("vec")->Slice(1, 3));
  EXPECT_EQ(vec.inner_dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(ValuesAt<float>(vec, 9), (std::vector<float>{3, 4, 5, 6, 7, 8, 9, 10, 11}));

  const auto grid = GetFixedWidthValues(*Column("grid")->Slice(3, 2));
  EXPECT_EQ(grid.inner_dims, (std::vector<int64_t>{3, 2}));
  std::vector<int16_t> expected(12);
  for (int k = 0; k < 12; ++k) expected[k] = static_cast<int16_t>(18 + k);
  EXPECT_EQ(ValuesAt<int16_t>(grid, 12), expected);
}

TEST(FixedWidthValuesTest, OffsetsAtEveryLevelAddUp) {
  // Lists of pairs over a slice of the values, the pairs a slice too, and the lists sliced
  // again: each level's offset counts in units of the level below.
  arrow::Int32Builder builder;
  for (int32_t v = 0; v < 30; ++v) ASSERT_TRUE(builder.Append(v * 10).ok());
  const auto flat = builder.Finish().ValueOrDie();
  const auto pairs = arrow::FixedSizeListArray::FromArrays(flat->Slice(6), 2).ValueOrDie();
  const auto triples = arrow::FixedSizeListArray::FromArrays(pairs->Slice(3), 3).ValueOrDie();
  const auto sliced = triples->Slice(1);
  const auto located = GetFixedWidthValues(*sliced->data());
  EXPECT_EQ(located.inner_dims, (std::vector<int64_t>{3, 2}));
  // Value index: 6 (flat) + 2 * (3 (pairs) + 3 * 1 (triples)) = 18.
  EXPECT_EQ(ValuesAt<int32_t>(located, 6), (std::vector<int32_t>{180, 190, 200, 210, 220, 230}));
  EXPECT_EQ(located.buffer, flat->data()->buffers[1]);
}

TEST_F(ColumnTypesTest, HasNullsLooksIntoTheListValues) {
  EXPECT_FALSE(HasNulls(*Column("id")));
  EXPECT_TRUE(HasNulls(*Column("maybe")));
  EXPECT_FALSE(HasNulls(*Column("vec")));
  EXPECT_FALSE(HasNulls(*Column("grid")));
  // No list of `holes` is null; one of its values is.
  EXPECT_EQ(Column("holes")->GetNullCount(), 0);
  EXPECT_TRUE(HasNulls(*Column("holes")));
  // A slice is judged by its own rows.
  EXPECT_FALSE(HasNulls(*Column("maybe")->Slice(3, 2)));
  EXPECT_TRUE(HasNulls(*Column("maybe")->Slice(2, 1)));
}

TEST(HasNullsTest, ANullListOrANullDeepInsideIsANull) {
  arrow::Int16Builder values;
  for (int k = 0; k < 8; ++k) {
    ASSERT_TRUE((k == 7 ? values.AppendNull() : values.Append(static_cast<int16_t>(k))).ok());
  }
  const auto flat = values.Finish().ValueOrDie();
  const auto pairs = arrow::FixedSizeListArray::FromArrays(flat, 2).ValueOrDie();
  const auto deep = arrow::FixedSizeListArray::FromArrays(pairs, 2).ValueOrDie();
  EXPECT_EQ(deep->null_count(), 0);
  EXPECT_TRUE(HasNulls(*deep->data()));

  // A null list whose value slots are not null.
  arrow::Int16Builder slots;
  ASSERT_TRUE(slots.AppendValues(std::vector<int16_t>{1, 2, 3, 4}).ok());
  auto validity = arrow::AllocateEmptyBitmap(2).ValueOrDie();
  arrow::bit_util::SetBit(validity->mutable_data(), 0);
  const auto null_list =
      arrow::FixedSizeListArray::FromArrays(slots.Finish().ValueOrDie(), 2, validity, 1)
          .ValueOrDie();
  ASSERT_EQ(null_list->data()->child_data[0]->GetNullCount(), 0);
  EXPECT_TRUE(HasNulls(*null_list->data()));
  EXPECT_FALSE(HasNulls(*null_list->Slice(0, 1)->data()));

  const auto empty = arrow::MakeArrayOfNull(arrow::int64(), 0).ValueOrDie();
  EXPECT_FALSE(HasNulls(*empty->data()));
}

}  // namespace
}  // namespace stoker
