// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/footer_reader.h"

#include <arrow/json/from_string.h>
#include <gtest/gtest.h>
#include <parquet/file_reader.h>

#include <fstream>

#include "common/fixtures.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

TEST(FooterReaderTest, EachFilesFooterInSourceOrderWithItsArrowSchema) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 3, 10, 4);
  auto files = ResolveSources({dir.path().string()}).ValueOrDie();
  std::swap(files[0], files[2]);  // the order given, not sorted
  Stats stats;
  auto footers = ReadFooters(files, 2, &stats).ValueOrDie();
  ASSERT_EQ(footers.size(), 3u);
  int64_t file_bytes = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const Footer& footer = footers[f];
    // The stored Arrow schema: the fixed-size list reads back as one.
    testing::ExpectDatasetSchema(*footer.schema);
    ASSERT_EQ(footer.schema_manifest->schema_fields.size(), 5u);
    EXPECT_EQ(footer.schema_manifest->schema_fields[2].children.size(), 1u);
    EXPECT_EQ(footer.schema_manifest->schema_fields[4].column_index, 4);
    EXPECT_EQ(footer.bytes.summary(), nullptr);
    EXPECT_TRUE(footer.skimmed_rows.empty());
    EXPECT_TRUE(footer.checksums.empty());
    EXPECT_GT(footer.bytes.HeldBytes(), 0);
    auto decoded = DecodeFooter(footer.bytes.Serialized()).ValueOrDie();
    auto own = parquet::ParquetFileReader::OpenFile(files[f].path)->metadata();
    EXPECT_TRUE(decoded->Equals(*own));
    EXPECT_EQ(decoded->num_row_groups(), 3);
    file_bytes += files[f].size;
  }
  // One request per footer (two for a large one), never more bytes than the files hold.
  const StatsSnapshot counted = stats.Snapshot();
  EXPECT_GE(counted.metadata_requests, 3);
  EXPECT_LE(counted.metadata_requests, 6);
  EXPECT_GT(counted.metadata_bytes, 0);
  EXPECT_LE(counted.metadata_bytes, file_bytes);
  EXPECT_TRUE(ReadFooters({}, 4, nullptr).ValueOrDie().empty());
}

TEST(FooterReaderTest, DescribeFooterGivesTheSchemaParquetsReaderDerives) {
  auto values = arrow::json::ArrayFromJSONString(arrow::list(arrow::int32()), "[[1, 2], null, []]")
                    .ValueOrDie();
  auto table = arrow::Table::Make(arrow::schema({arrow::field("l", values->type())}), {values});
  testing::TempDir dir;
  // Without the stored Arrow schema, as other writers leave it.
  auto out = arrow::io::FileOutputStream::Open((dir.path() / "a.parquet").string()).ValueOrDie();
  ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 10).ok());
  ASSERT_TRUE(out->Close().ok());
  auto metadata =
      parquet::ParquetFileReader::OpenFile((dir.path() / "a.parquet").string())->metadata();
  const Footer footer = DescribeFooter(*metadata).ValueOrDie();
  ASSERT_EQ(footer.schema->num_fields(), 1);
  EXPECT_EQ(footer.schema->field(0)->name(), "l");
  EXPECT_EQ(footer.schema->field(0)->type()->id(), arrow::Type::LIST);
  EXPECT_EQ(footer.schema_manifest->schema_fields[0].children[0].column_index, 0);
  EXPECT_TRUE(footer.bytes.Serialized().empty());
}

TEST(FooterReaderTest, BytesThatAreNotAFooterAreAnError) {
  EXPECT_FALSE(DecodeFooter("").ok());
  EXPECT_FALSE(DecodeFooter(std::string(64, '\xff')).ok());
}

TEST(FooterReaderTest, ErrorsSayWhetherTheStoreOrTheFileIsAtFault) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 1, 4, 4);
  std::ofstream(dir.path() / "not.parquet") << "this is text, not Parquet, and long enough";
  auto files = ResolveSources({(dir.path() / "part-0.parquet").string(),
                               (dir.path() / "not.parquet").string()})
                   .ValueOrDie();
  auto not_parquet = ReadFooters(files, 2, nullptr);
  ASSERT_FALSE(not_parquet.ok());
  EXPECT_EQ(not_parquet.status().message().rfind(
                "'" + files[1].display + "' could not be read as Parquet: ", 0),
            0u)
      << not_parquet.status().message();

  fs::remove(dir.path() / "part-0.parquet");  // listed, then gone: the store fails
  auto missing = ReadFooters(files, 2, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsIOError());
  EXPECT_EQ(missing.status().message().rfind("reading the footer: '" + files[0].display + "': ", 0),
            0u)
      << missing.status().message();
}

}  // namespace
}  // namespace stoker
