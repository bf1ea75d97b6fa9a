// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/dataset_index.h"

#include <arrow/json/from_string.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>
#include <parquet/file_reader.h>

#include <fstream>

#include "common/fixtures.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The resolved source of the directory `dir` (listed, or not with `by_summary`).
ResolvedSource Resolve(const fs::path& dir, bool by_summary = false) {
  auto resolved = ResolveSourceList({dir.string()}, {}, nullptr, by_summary).ValueOrDie();
  EXPECT_EQ(resolved.size(), 1u);
  return resolved[0];
}

// Writes dir/_metadata as another tool (pyarrow's write_metadata) does: the footers of
// `files` (relative to `dir`) with no stoker.index.* entry, each row group naming its file
// unless `name_files` is false, and `extra` key-value entries.
void WriteForeignSummary(const fs::path& dir, const std::vector<std::string>& files,
                         bool name_files = true,
                         const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  std::vector<std::shared_ptr<parquet::FileMetaData>> footers;
  for (const auto& name : files) {
    auto metadata = parquet::ParquetFileReader::OpenFile((dir / name).string())->metadata();
    if (name_files) metadata->set_file_path(name);
    footers.push_back(metadata);
  }
  auto kv = footers[0]->key_value_metadata()->Copy();
  for (const auto& [key, value] : extra) kv->Append(key, value);
  auto summary =
      parquet::FileMetaDataBuilder::Make(footers[0]->schema(), parquet::default_writer_properties())
          ->Finish(kv);
  for (const auto& footer : footers) summary->AppendRowGroups(*footer);
  auto out = arrow::io::FileOutputStream::Open((dir / kSummaryFileName).string()).ValueOrDie();
  ASSERT_TRUE(parquet::arrow::WriteMetaDataFile(*summary, out.get()).ok());
  ASSERT_TRUE(out->Close().ok());
}

void ExpectHas(const arrow::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(DatasetIndexTest, AWrittenIndexRecordsEveryFileAndGivesTheirOwnFooters) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 4);  // row groups of 4, 4 and 2 rows per file
  const IndexReport report = WriteDatasetIndex(dir.path().string(), {}, false).ValueOrDie();
  EXPECT_EQ(report.path, (dir.path() / kSummaryFileName).string());
  EXPECT_EQ(report.files, 2);
  EXPECT_EQ(report.row_groups, 6);
  EXPECT_EQ(report.bytes, static_cast<int64_t>(fs::file_size(dir.path() / kSummaryFileName)));
  EXPECT_EQ(report.bytes_checksummed, 0);
  EXPECT_FALSE(fs::exists(dir.path() / ("._metadata.stoker-" + std::to_string(getpid()))));

  const ResolvedSource source = Resolve(dir.path());
  ASSERT_FALSE(source.summary.path.empty());
  Stats stats;
  DatasetIndex index = ReadDatasetIndex(source, &stats).ValueOrDie();
  EXPECT_EQ(stats.Snapshot().metadata_requests, 1);
  EXPECT_EQ(stats.Snapshot().metadata_bytes, report.bytes);
  EXPECT_TRUE(index.by_stoker);
  ASSERT_EQ(index.files.size(), 2u);
  for (int f = 0; f < 2; ++f) {
    const IndexedFile& file = index.files.at("part-" + std::to_string(f) + ".parquet");
    EXPECT_EQ(file.size, source.files[f].size);
    EXPECT_EQ(file.mtime_ns, source.files[f].mtime_ns);
    EXPECT_EQ(file.row_groups, (std::vector<int>{3 * f, 3 * f + 1, 3 * f + 2}));
    EXPECT_TRUE(file.checksums.empty());
  }

  auto footers = FootersFromIndex(std::move(index), source, IndexPolicy::kUse).ValueOrDie();
  ASSERT_TRUE(footers.has_value());
  ASSERT_EQ(footers->size(), 2u);
  auto own = ReadFooters(source.files, 1, nullptr).ValueOrDie();
  for (size_t f = 0; f < 2; ++f) {
    const Footer& footer = (*footers)[f];
    EXPECT_EQ(footer.skimmed_rows, (std::vector<int64_t>{4, 4, 2}));
    EXPECT_NE(footer.bytes.summary(), nullptr);
    EXPECT_TRUE(footer.schema->Equals(*own[f].schema));
    auto cut = DecodeFooter(footer.bytes.Serialized()).ValueOrDie();
    EXPECT_EQ(cut->num_rows(), 10);
    ASSERT_EQ(cut->num_row_groups(), 3);
    EXPECT_TRUE(CheckCut(*cut, footer.skimmed_rows).ok());
    // The index's own entries are not part of a file's footer.
    ASSERT_NE(cut->key_value_metadata(), nullptr);
    EXPECT_LT(cut->key_value_metadata()->FindKey(kIndexFilesKey), 0);
    // The cut's column chunks are the file's own, byte for byte where they are.
    auto file = DecodeFooter(own[f].bytes.Serialized()).ValueOrDie();
    for (int rg = 0; rg < 3; ++rg) {
      EXPECT_EQ(cut->RowGroup(rg)->num_rows(), file->RowGroup(rg)->num_rows());
      EXPECT_EQ(cut->RowGroup(rg)->ColumnChunk(0)->data_page_offset(),
                file->RowGroup(rg)->ColumnChunk(0)->data_page_offset());
    }
  }
}

TEST(DatasetIndexTest, WritingRefusesAnExistingIndexAFileAndDifferingSchemas) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 6, 3);
  ASSERT_TRUE(WriteDatasetIndex(dir.path().string(), {}, false).ok());
  ExpectHas(WriteDatasetIndex(dir.path().string(), {}, false).status(),
            "_metadata' exists; pass --overwrite (overwrite=True) to replace it");
  EXPECT_TRUE(WriteDatasetIndex(dir.path().string(), {}, true).ok());
  ExpectHas(WriteDatasetIndex((dir.path() / "part-0.parquet").string(), {}, false).status(),
            "part-0.parquet': an index is written for a directory, not a file or glob");

  auto other = arrow::Table::Make(
      arrow::schema({arrow::field("x", arrow::float64())}),
      {arrow::json::ArrayFromJSONString(arrow::float64(), "[1.5]").ValueOrDie()});
  testing::WriteTable(dir.path() / "part-9.parquet", *other, 1);
  ExpectHas(WriteDatasetIndex(dir.path().string(), {}, true).status(),
            "part-9.parquet' has a Parquet schema other than '" +
                (dir.path() / "part-0.parquet").string() + "': one index holds one schema");
}

TEST(DatasetIndexTest, ChecksumsAreEachColumnChunksOwn) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 4);
  const IndexReport report = WriteDatasetIndex(dir.path().string(), {}, false, true).ValueOrDie();
  const ResolvedSource source = Resolve(dir.path());
  DatasetIndex index = ReadDatasetIndex(source, nullptr).ValueOrDie();
  // Three row groups of five leaves (row_id, value, vec, name, maybe) per file.
  int64_t chunk_bytes = 0, file_bytes = 0;
  for (int f = 0; f < 2; ++f) {
    const SourceFile& file = source.files[f];
    const auto& checksums = index.files.at(RelativeTo(source.root, file.path)).checksums;
    ASSERT_EQ(checksums.size(), 15u);
    std::ifstream in(file.path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    file_bytes += static_cast<int64_t>(bytes.size());
    auto metadata = parquet::ParquetFileReader::OpenFile(file.path)->metadata();
    for (int rg = 0; rg < 3; ++rg) {
      for (int leaf = 0; leaf < 5; ++leaf) {
        const ChunkRange range = ChunkRangeOf(*metadata->RowGroup(rg)->ColumnChunk(leaf));
        EXPECT_EQ(checksums[rg * 5 + leaf],
                  ChunkChecksum(reinterpret_cast<const uint8_t*>(bytes.data()) + range.start,
                                range.length));
        chunk_bytes += range.length;
      }
    }
  }
  // Each row group's chunks are read in one request: every chunk, and no footer.
  EXPECT_GE(report.bytes_checksummed, chunk_bytes);
  EXPECT_LT(report.bytes_checksummed, file_bytes);
  const auto checksums = index.files.at("part-1.parquet").checksums;
  auto footers = FootersFromIndex(std::move(index), source, IndexPolicy::kUse).ValueOrDie();
  EXPECT_EQ((*footers)[1].checksums, checksums);
}

TEST(DatasetIndexTest, AStaleIndexNamesTheFirstFileThatDiffers) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 6, 3);
  ASSERT_TRUE(WriteDatasetIndex(dir.path().string(), {}, false).ok());
  // Added after the index: an error (kUse), or set aside (kFallback).
  fs::copy_file(dir.path() / "part-1.parquet", dir.path() / "part-2.parquet");
  ResolvedSource source = Resolve(dir.path());
  auto index = ReadDatasetIndex(source, nullptr).ValueOrDie();
  ExpectHas(FootersFromIndex(index, source, IndexPolicy::kUse).status(),
            "dataset index '" + source.summary.display + "' is stale: '" +
                (dir.path() / "part-2.parquet").string() +
                "' is not in it (added after the index was written); rewrite it with "
                "`stoker index --overwrite " +
                dir.path().string() + "`");
  EXPECT_FALSE(FootersFromIndex(index, source, IndexPolicy::kFallback).ValueOrDie().has_value());

  // Removed, and another one added: the first reason, and how many more.
  fs::remove(dir.path() / "part-1.parquet");
  source = Resolve(dir.path());
  ExpectHas(FootersFromIndex(index, source, IndexPolicy::kUse).status(),
            "is not in it (added after the index was written) (and 1 more)");
  fs::remove(dir.path() / "part-2.parquet");
  source = Resolve(dir.path());
  ExpectHas(FootersFromIndex(index, source, IndexPolicy::kUse).status(),
            "is stale: 'part-1.parquet' is in it but not in the directory (removed)");

  // Rewritten with other rows: its size differs from the one recorded.
  testing::WriteDataset(dir.path(), 2, 7, 3);
  source = Resolve(dir.path());
  const int64_t indexed = index.files.at("part-0.parquet").size;
  ExpectHas(FootersFromIndex(index, source, IndexPolicy::kUse).status(),
            "part-0.parquet' was rewritten after the index was written (size " +
                std::to_string(source.files[0].size) + " bytes, indexed " +
                std::to_string(indexed) + ")");
}

TEST(DatasetIndexTest, AnUnlistedSourceTakesItsFilesFromTheIndexUnchecked) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 3, 5, 5);
  ASSERT_TRUE(WriteDatasetIndex(dir.path().string(), {}, false).ok());
  const ResolvedSource listed = Resolve(dir.path());
  ResolvedSource source = Resolve(dir.path(), true);
  EXPECT_FALSE(source.listed);
  EXPECT_TRUE(source.files.empty());
  const DatasetIndex index = ReadDatasetIndex(source, nullptr).ValueOrDie();
  ASSERT_TRUE(ListFromIndex(index, &source).ok());
  ASSERT_EQ(source.files.size(), listed.files.size());
  for (size_t f = 0; f < listed.files.size(); ++f) {
    EXPECT_EQ(source.files[f].path, listed.files[f].path);
    EXPECT_EQ(source.files[f].display, listed.files[f].display);
    EXPECT_EQ(source.files[f].size, listed.files[f].size);
    EXPECT_EQ(source.files[f].mtime_ns, listed.files[f].mtime_ns);
  }
  // Nothing was listed, so nothing is compared: a file added since goes unseen here (the
  // identity check at its first read finds rewritten ones).
  fs::copy_file(dir.path() / "part-1.parquet", dir.path() / "part-7.parquet");
  auto footers = FootersFromIndex(index, source, IndexPolicy::kUse).ValueOrDie();
  ASSERT_TRUE(footers.has_value());
  EXPECT_EQ(footers->size(), 3u);
}

TEST(DatasetIndexTest, AnotherToolsSummaryIsCheckedByNamesAndModificationTimes) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 6, 3);
  WriteForeignSummary(dir.path(), {"part-0.parquet", "part-1.parquet"});
  ResolvedSource source = Resolve(dir.path());
  const DatasetIndex index = ReadDatasetIndex(source, nullptr).ValueOrDie();
  EXPECT_FALSE(index.by_stoker);
  ASSERT_EQ(index.files.size(), 2u);
  EXPECT_EQ(index.files.at("part-1.parquet").size, -1);
  EXPECT_EQ(index.files.at("part-1.parquet").row_groups, (std::vector<int>{2, 3}));
  auto footers = FootersFromIndex(index, source, IndexPolicy::kUse).ValueOrDie();
  ASSERT_TRUE(footers.has_value());
  EXPECT_EQ((*footers)[1].skimmed_rows, (std::vector<int64_t>{3, 3}));

  ResolvedSource unlisted = Resolve(dir.path(), true);
  ExpectHas(ListFromIndex(index, &unlisted),
            "' records no file sizes (stoker.index.files; another tool wrote it)");

  // A data file modified after the summary was written makes it stale.
  fs::last_write_time(dir.path() / "part-1.parquet",
                      fs::last_write_time(dir.path() / kSummaryFileName) + std::chrono::seconds(5));
  source = Resolve(dir.path());
  ExpectHas(FootersFromIndex(index, source, IndexPolicy::kUse).status(),
            "part-1.parquet' was modified after the index was written");
}

TEST(DatasetIndexTest, MalformedIndexesAreErrorsNamingThem) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 6, 3);
  const std::string summary = (dir.path() / kSummaryFileName).string();
  std::ofstream(summary) << "not a parquet file at all";
  ExpectHas(ReadDatasetIndex(Resolve(dir.path()), nullptr).status(),
            "dataset index '" + summary + "' could not be read as Parquet");

  WriteForeignSummary(dir.path(), {"part-0.parquet"}, false);
  ExpectHas(ReadDatasetIndex(Resolve(dir.path()), nullptr).status(),
            "'" + summary + "': row group 0 names no file");

  WriteForeignSummary(dir.path(), {"part-0.parquet"}, true, {{kIndexFilesKey, "12 x\n"}});
  ExpectHas(ReadDatasetIndex(Resolve(dir.path()), nullptr).status(),
            "malformed stoker.index.files entry '12 x'");

  WriteForeignSummary(dir.path(), {"part-0.parquet"}, true,
                      {{kIndexChecksumsKey, "abc part-0.parquet\n"}});
  ExpectHas(ReadDatasetIndex(Resolve(dir.path()), nullptr).status(),
            "malformed stoker.index.checksums entry");

  // The file list lacks a file whose row groups the summary holds.
  const ResolvedSource listed = Resolve(dir.path());
  const std::string entry = std::to_string(listed.files[0].size) + " " +
                            std::to_string(listed.files[0].mtime_ns) + " part-0.parquet\n";
  WriteForeignSummary(dir.path(), {"part-0.parquet", "part-1.parquet"}, true,
                      {{kIndexFilesKey, entry}});
  ResolvedSource unlisted = Resolve(dir.path(), true);
  const DatasetIndex index = ReadDatasetIndex(unlisted, nullptr).ValueOrDie();
  EXPECT_TRUE(index.by_stoker);
  ExpectHas(ListFromIndex(index, &unlisted),
            "' has row groups of 'part-1.parquet', which its stoker.index.files list lacks");
}

}  // namespace
}  // namespace stoker
