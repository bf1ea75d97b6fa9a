// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/flat_column.h"

#include <arrow/array.h>
#include <arrow/io/file.h>
#include <arrow/json/from_string.h>
#include <arrow/table.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>

#include "common/fixtures.h"

namespace stoker {
namespace {

// Writes `table` (one row group) and returns Parquet's Arrow reader over it.
std::unique_ptr<parquet::arrow::FileReader> Written(const std::filesystem::path& path,
                                                    const arrow::Table& table) {
  testing::WriteTable(path, table, table.num_rows());
  auto input = arrow::io::ReadableFile::Open(path.string()).ValueOrDie();
  return parquet::arrow::OpenFile(input, arrow::default_memory_pool()).ValueOrDie();
}

TEST(FlatColumnTest, NumbersDecodeAsTheArrowReaderDecodesThem) {
  testing::TempDir dir;
  const std::vector<std::shared_ptr<arrow::DataType>> types = {
      arrow::int8(),    arrow::int16(),   arrow::int32(),  arrow::int64(),
      arrow::uint8(),   arrow::uint16(),  arrow::uint32(), arrow::uint64(),
      arrow::float16(), arrow::float32(), arrow::float64()};
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (size_t i = 0; i < types.size(); ++i) {
    // Nullable (one definition level) and required (none), no nulls in either.
    const bool nullable = i % 2 == 0;
    fields.push_back(arrow::field("c" + std::to_string(i), types[i], nullable));
    const char* values =
        types[i]->id() == arrow::Type::HALF_FLOAT ? "[0, 15360, 49152, 31743]" : "[0, 1, 127, 100]";
    arrays.push_back(arrow::json::ArrayFromJSONString(types[i], values).ValueOrDie());
  }
  const auto table = arrow::Table::Make(arrow::schema(fields), arrays);
  auto reader = Written(dir.path() / "numbers.parquet", *table);
  auto row_group = reader->parquet_reader()->RowGroup(0);
  const auto& descriptors = *reader->parquet_reader()->metadata()->schema();
  for (int i = 0; i < table->num_columns(); ++i) {
    ASSERT_TRUE(DecodesFlat(*descriptors.Column(i), *types[i])) << types[i]->ToString();
    auto decoded = DecodeFlatColumn(row_group.get(), i, types[i], 4, arrow::default_memory_pool());
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_NE(*decoded, nullptr) << types[i]->ToString();
    std::shared_ptr<arrow::ChunkedArray> expected;
    ASSERT_TRUE(reader->ReadColumn(i, &expected).ok());
    EXPECT_TRUE(arrow::MakeArray(*decoded)->Equals(*expected->chunk(0))) << types[i]->ToString();
  }
}

TEST(FlatColumnTest, NullsAndOtherTypesAreLeftToTheArrowReader) {
  testing::TempDir dir;
  const auto schema =
      arrow::schema({arrow::field("maybe", arrow::float32()), arrow::field("name", arrow::utf8()),
                     arrow::field("day", arrow::date32()), arrow::field("flag", arrow::boolean())});
  const auto table = arrow::Table::Make(
      schema, {arrow::json::ArrayFromJSONString(arrow::float32(), "[1, null]").ValueOrDie(),
               arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["a", "b"])").ValueOrDie(),
               arrow::json::ArrayFromJSONString(arrow::date32(), "[1, 2]").ValueOrDie(),
               arrow::json::ArrayFromJSONString(arrow::boolean(), "[true, false]").ValueOrDie()});
  auto reader = Written(dir.path() / "others.parquet", *table);
  const auto& descriptors = *reader->parquet_reader()->metadata()->schema();
  ASSERT_TRUE(DecodesFlat(*descriptors.Column(0), *arrow::float32()));
  auto row_group = reader->parquet_reader()->RowGroup(0);
  auto with_null =
      DecodeFlatColumn(row_group.get(), 0, arrow::float32(), 2, arrow::default_memory_pool());
  ASSERT_TRUE(with_null.ok()) << with_null.status();
  EXPECT_EQ(*with_null, nullptr);  // a null: not decoded here
  // A count other than the row group's is not decoded here either.
  auto short_count =
      DecodeFlatColumn(row_group.get(), 0, arrow::float32(), 3, arrow::default_memory_pool());
  ASSERT_TRUE(short_count.ok());
  EXPECT_EQ(*short_count, nullptr);
  EXPECT_FALSE(DecodesFlat(*descriptors.Column(0), *arrow::float64()));  // not its type
  EXPECT_FALSE(DecodesFlat(*descriptors.Column(1), *arrow::utf8()));
  EXPECT_FALSE(DecodesFlat(*descriptors.Column(2), *arrow::date32()));
  EXPECT_FALSE(DecodesFlat(*descriptors.Column(2), *arrow::int32()));  // annotated as a date
  EXPECT_FALSE(DecodesFlat(*descriptors.Column(3), *arrow::boolean()));
}

}  // namespace
}  // namespace stoker
