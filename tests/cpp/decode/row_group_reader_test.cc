// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/row_group_reader.h"

#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "manifest/dataset_index.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Fetches and decodes `columns` of unit `u`, as the workers do.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> Read(const Manifest& manifest, size_t u,
                                                        std::vector<int> columns, Stats* stats) {
  const Unit& unit = manifest.units()[u];
  ARROW_ASSIGN_OR_RAISE(auto fetch, StartFetch(manifest, unit, std::move(columns),
                                               arrow::io::default_io_context(), stats));
  fetch->ready.Wait();
  NoteArrived(*fetch, stats);
  return DecodeFetch(manifest, unit, fetch.get(), arrow::default_memory_pool(), stats);
}

void ExpectHas(const arrow::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok()) << text;
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(RowGroupReaderTest, ColumnsComeInTheOrderAskedWithTheUnitsRows) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 4);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  const Unit& unit = manifest->units()[4];  // file 1, row group 1: rows 14..17
  ASSERT_EQ(unit.file, 1);
  ASSERT_EQ(unit.row_group, 1);
  Stats stats;
  auto fetch =
      StartFetch(*manifest, unit, {3, 1, 0}, arrow::io::default_io_context(), &stats).ValueOrDie();
  EXPECT_EQ(fetch->leaves, (std::vector<int>{3, 1, 0}));
  auto metadata = manifest->FileMetadata(1).ValueOrDie();
  int64_t needed = 0;
  for (int leaf : {0, 1, 3}) {
    needed += ChunkRangeOf(*metadata->RowGroup(1)->ColumnChunk(leaf)).length;
  }
  EXPECT_EQ(fetch->bytes_needed, needed);
  EXPECT_GE(fetch->end_byte - fetch->first_byte, needed);
  ASSERT_TRUE(fetch->ready.status().ok());
  NoteArrived(*fetch, &stats);
  auto batch =
      DecodeFetch(*manifest, unit, fetch.get(), arrow::default_memory_pool(), &stats).ValueOrDie();
  ASSERT_TRUE(batch->ValidateFull().ok());
  EXPECT_EQ(batch->schema()->ToString(), "name: string\nvalue: float\nrow_id: int64");
  EXPECT_TRUE(batch->column(2)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::int64(), "[14, 15, 16, 17]").ValueOrDie()));
  EXPECT_TRUE(batch->column(1)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::float32(), "[7, 7.5, 8, 8.5]").ValueOrDie()));
  EXPECT_TRUE(batch->column(0)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::utf8(), R"(["row14", "row15", "row16", "row17"])")
           .ValueOrDie()));
  const StatsSnapshot counted = stats.Snapshot();
  EXPECT_EQ(counted.bytes_read, needed);
  EXPECT_GE(counted.requests, 1);
  EXPECT_GE(counted.bytes_fetched, needed);

  // Nulls and nested values come through as stored.
  auto nested = Read(*manifest, 0, {2, 4}, &stats).ValueOrDie();
  EXPECT_EQ(nested->num_rows(), 4);
  EXPECT_EQ(nested->column(1)->null_count(), 1);  // row 0: every 7th is null
  EXPECT_TRUE(nested->column(1)->IsNull(0));
  EXPECT_TRUE(
      static_cast<const arrow::FixedSizeListArray&>(*nested->column(0))
          .value_slice(3)
          ->Equals(*arrow::json::ArrayFromJSONString(arrow::float32(), "[3, 4, 5]").ValueOrDie()));
  EXPECT_EQ(DescribeUnit(*manifest, unit),
            "'" + (dir.path() / "part-1.parquet").string() + "' (row group 1)");
}

TEST(RowGroupReaderTest, PartitionColumnsAreTheFilesValueOnEveryRow) {
  testing::TempDir dir;
  for (int day : {3, 4}) {
    fs::create_directories(dir.path() / ("day=" + std::to_string(day)));
    auto x = arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 2, 3]").ValueOrDie();
    testing::WriteTable(
        dir.path() / ("day=" + std::to_string(day)) / "a.parquet",
        *arrow::Table::Make(arrow::schema({arrow::field("x", arrow::int64())}), {x}), 2);
  }
  PartitionOptions hive;
  hive.hive = true;
  auto manifest = Manifest::Make({dir.path().string()}, {"day", "x"}, {}, nullptr,
                                 IndexPolicy::kUse, nullptr, hive)
                      .ValueOrDie();
  Stats stats;
  auto batch = Read(*manifest, 2, {0, 1}, &stats).ValueOrDie();  // day=4, first row group
  EXPECT_TRUE(batch->column(0)->Equals(
      *arrow::json::ArrayFromJSONString(arrow::int32(), "[4, 4]").ValueOrDie()));
  // Partition columns only: nothing decoded, the row group's rows counted.
  auto only = Read(*manifest, 3, {0}, &stats).ValueOrDie();
  EXPECT_EQ(only->num_rows(), 1);
  EXPECT_EQ(only->column(0)->GetScalar(0).ValueOrDie()->ToString(), "4");
}

TEST(RowGroupReaderTest, AFileGoneSinceTheManifestNamesTheUnit) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 4, 4);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  fs::remove(dir.path() / "part-1.parquet");
  Stats stats;
  const auto status = Read(*manifest, 1, {0}, &stats).status();
  ASSERT_TRUE(status.IsIOError()) << status.ToString();
  EXPECT_EQ(status.message().rfind(
                "reading '" + (dir.path() / "part-1.parquet").string() + "' (row group 0): ", 0),
            0u)
      << status.message();
  EXPECT_TRUE(Read(*manifest, 0, {0}, &stats).ok());
}

TEST(RowGroupReaderTest, StringsThatAreNotUtf8AreRefusedNamingTheColumn) {
  testing::TempDir dir;
  arrow::BinaryBuilder raw;
  ASSERT_TRUE(raw.Append("fine").ok());
  ASSERT_TRUE(raw.Append(std::string("\xff\xfe", 2)).ok());
  auto strings = raw.Finish().ValueOrDie()->View(arrow::utf8()).ValueOrDie();
  testing::WriteTable(
      dir.path() / "a.parquet",
      *arrow::Table::Make(arrow::schema({arrow::field("s", arrow::utf8())}), {strings}), 10);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  Stats stats;
  const auto status = Read(*manifest, 0, {0}, &stats).status();
  ExpectHas(status, "reading '" + (dir.path() / "a.parquet").string() +
                        "' (row group 0): column 's' holds a string that is not valid UTF-8");
}

TEST(RowGroupReaderTest, ChunksThatDifferFromTheIndexChecksumsAreRefused) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 1, 8, 8);
  ASSERT_TRUE(WriteDatasetIndex(dir.path().string(), {}, false, true).ok());
  auto manifest =
      Manifest::Make({dir.path().string()}, {}, {}, nullptr, IndexPolicy::kTrust).ValueOrDie();
  ASSERT_FALSE(manifest->files()[0].checksums.empty());
  Stats stats;
  ASSERT_TRUE(Read(*manifest, 0, {0, 3}, &stats).ok());
  // One byte of the last value of row_id (the chunk's data page ends its bytes) changed in
  // place: same size, the footer untouched.
  const ChunkRange range =
      ChunkRangeOf(*manifest->FileMetadata(0).ValueOrDie()->RowGroup(0)->ColumnChunk(0));
  const std::string path = (dir.path() / "part-0.parquet").string();
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(range.start + range.length - 1);
    const char byte = static_cast<char>(file.get());
    file.seekp(range.start + range.length - 1);
    file.put(static_cast<char>(byte ^ 0x01));
  }
  ExpectHas(Read(*manifest, 0, {0, 3}, &stats).status(),
            "'" + path + "' changed after the dataset index '" +
                (dir.path() / kSummaryFileName).string() +
                "' was written: column 'row_id' of row group 0 does not have the bytes indexed "
                "(checksum ");
  // A column whose chunk is untouched still reads.
  EXPECT_TRUE(Read(*manifest, 0, {3}, &stats).ok());
}

}  // namespace
}  // namespace stoker
