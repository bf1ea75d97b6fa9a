// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/manifest.h"

#include <arrow/compute/expression.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "manifest/dataset_index.h"

namespace stoker {
namespace {

namespace cp = arrow::compute;
namespace fs = std::filesystem;

// A one-column table `name` of int64 `json`.
std::shared_ptr<arrow::Table> Ints(const std::string& name, const std::string& json,
                                   const std::shared_ptr<arrow::DataType>& type = arrow::int64()) {
  auto array = arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
  return arrow::Table::Make(arrow::schema({arrow::field(name, type)}), {array});
}

void ExpectHas(const arrow::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(ManifestTest, UnitsAreTheRowGroupsInDatasetOrderWithTheirRowsAndBytes) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 4);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  testing::ExpectDatasetSchema(*manifest->schema());
  EXPECT_EQ(manifest->partition_schema()->num_fields(), 0);
  ASSERT_EQ(manifest->files().size(), 2u);
  EXPECT_EQ(manifest->files()[1].source.path, (dir.path() / "part-1.parquet").string());
  EXPECT_EQ(manifest->files()[0].leaf_columns, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(manifest->files()[0].column_leaves[2], (std::vector<int>{2}));
  EXPECT_EQ(manifest->files()[0].trusted_index, nullptr);
  EXPECT_EQ(manifest->num_rows(), 20);
  ASSERT_EQ(manifest->units().size(), 6u);
  const int64_t rows[] = {4, 4, 2, 4, 4, 2};
  int64_t first_row = 0;
  for (size_t u = 0; u < 6; ++u) {
    const Unit& unit = manifest->units()[u];
    EXPECT_EQ(unit.file, static_cast<int32_t>(u / 3));
    EXPECT_EQ(unit.row_group, static_cast<int32_t>(u % 3));
    EXPECT_EQ(unit.num_rows, rows[u]);
    EXPECT_EQ(unit.first_row, first_row);
    EXPECT_EQ(unit.first_row_in_file, (u % 3) * 4);
    auto metadata = manifest->FileMetadata(unit.file).ValueOrDie();
    int64_t bytes = 0;
    for (int leaf = 0; leaf < 5; ++leaf) {
      bytes += metadata->RowGroup(unit.row_group)->ColumnChunk(leaf)->total_compressed_size();
    }
    EXPECT_EQ(unit.bytes, bytes);
    first_row += rows[u];
  }
  EXPECT_TRUE(manifest->VerifyFile(0, nullptr, nullptr).is_finished());
  EXPECT_GT(manifest->HeldBytes(), 0);
}

TEST(ManifestTest, ProjectedColumnsAreInTheOrderAskedAndCountOnlyTheirBytes) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 1, 10, 10);
  auto manifest = Manifest::Make({dir.path().string()}, {"name", "row_id"}).ValueOrDie();
  EXPECT_EQ(manifest->schema()->ToString(), "name: string\nrow_id: int64");
  EXPECT_EQ(manifest->files()[0].leaf_columns, (std::vector<int>{3, 0}));
  auto row_group = manifest->FileMetadata(0).ValueOrDie()->RowGroup(0);
  EXPECT_EQ(manifest->units()[0].bytes, row_group->ColumnChunk(3)->total_compressed_size() +
                                            row_group->ColumnChunk(0)->total_compressed_size());
  EXPECT_EQ(manifest->PartitionValue(0, 0), nullptr);
}

TEST(ManifestTest, EmptyRowGroupsAreNoUnits) {
  testing::TempDir dir;
  testing::WriteTable(dir.path() / "a.parquet", *Ints("x", "[]"), 10);
  testing::WriteTable(dir.path() / "b.parquet", *Ints("x", "[1, 2, 3]"), 2);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  ASSERT_EQ(manifest->files().size(), 2u);
  EXPECT_EQ(manifest->num_rows(), 3);
  ASSERT_EQ(manifest->units().size(), 2u);
  EXPECT_EQ(manifest->units()[0].file, 1);
  EXPECT_EQ(manifest->units()[0].first_row, 0);
  EXPECT_EQ(manifest->units()[1].first_row, 2);
  EXPECT_EQ(manifest->units()[1].first_row_in_file, 2);
}

TEST(ManifestTest, TheFingerprintIsTheSameFromTheIndexAndChangesWithTheFiles) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 4);
  const std::string source = dir.path().string();
  Stats read_stats;
  auto read =
      Manifest::Make({source}, {}, {}, nullptr, IndexPolicy::kUse, &read_stats).ValueOrDie();
  EXPECT_EQ(read_stats.Snapshot().files_opened, 2);
  EXPECT_EQ(read_stats.Snapshot().index_used, 0);
  EXPECT_EQ(read->fingerprint().size(), 32u);
  EXPECT_EQ(Manifest::Make({source}, {}).ValueOrDie()->fingerprint(), read->fingerprint());

  ASSERT_TRUE(WriteDatasetIndex(source, {}, false).ok());
  Stats index_stats;
  auto indexed =
      Manifest::Make({source}, {}, {}, nullptr, IndexPolicy::kUse, &index_stats).ValueOrDie();
  EXPECT_EQ(index_stats.Snapshot().index_used, 1);
  EXPECT_EQ(index_stats.Snapshot().files_opened, 0);
  EXPECT_NE(indexed->files()[0].footer.summary(), nullptr);
  EXPECT_EQ(indexed->fingerprint(), read->fingerprint());
  ASSERT_EQ(indexed->units().size(), read->units().size());
  for (size_t u = 0; u < read->units().size(); ++u) {
    EXPECT_EQ(indexed->units()[u].bytes, read->units()[u].bytes);
    EXPECT_EQ(indexed->units()[u].first_row, read->units()[u].first_row);
  }
  EXPECT_EQ(Manifest::Make({source}, {}, {}, nullptr, IndexPolicy::kIgnore)
                .ValueOrDie()
                ->files()[0]
                .footer.summary(),
            nullptr);

  testing::WriteDataset(dir.path(), 2, 11, 4);  // rewritten: the index is stale
  ExpectHas(Manifest::Make({source}, {}).status(), "is stale");
  Stats fallback_stats;
  auto rewritten =
      Manifest::Make({source}, {}, {}, nullptr, IndexPolicy::kFallback, &fallback_stats)
          .ValueOrDie();
  EXPECT_EQ(fallback_stats.Snapshot().index_stale, 1);
  EXPECT_EQ(rewritten->num_rows(), 22);
  EXPECT_NE(rewritten->fingerprint(), read->fingerprint());
}

TEST(ManifestTest, FilesThatDisagreeAreNamedWithTheirColumns) {
  testing::TempDir dir;
  ExpectHas(Manifest::Make({}, {}).status(), "source: no file, directory or glob was given");
  testing::WriteTable(dir.path() / "a.parquet", *Ints("x", "[1]"), 10);
  const std::string a = (dir.path() / "a.parquet").string();
  const std::string b = (dir.path() / "b.parquet").string();

  const auto missing = Manifest::Make({a}, {"x", "nope"}).status();
  EXPECT_TRUE(missing.IsKeyError());
  EXPECT_EQ(missing.message(), "column 'nope' not found in '" + a + "'; available columns: x");

  testing::WriteTable(b, *Ints("x", "[1.5]", arrow::float64()), 10);
  EXPECT_EQ(Manifest::Make({a, b}, {}).status().message(),
            "files disagree on column 'x': it is int64 in '" + a + "' but double in '" + b + "'");

  auto two = arrow::Table::Make(
      arrow::schema({arrow::field("x", arrow::int64()), arrow::field("y", arrow::int64())}),
      {Ints("x", "[2]")->column(0), Ints("y", "[3]")->column(0)});
  testing::WriteTable(b, *two, 10);
  EXPECT_EQ(Manifest::Make({a, b}, {}).status().message(),
            "files disagree on their columns: '" + a + "' has 1 (x) but '" + b + "' has 2 (x, y)");
  // Naming the columns, a file may hold more.
  EXPECT_EQ(Manifest::Make({a, b}, {"x"}).ValueOrDie()->num_rows(), 2);

  testing::WriteTable(b, *Ints("y", "[3]"), 10);
  const auto lacking = Manifest::Make({a, b}, {"x"}).status();
  EXPECT_TRUE(lacking.IsKeyError());
  EXPECT_EQ(lacking.message(), "files disagree on their columns: '" + a +
                                   "' has column 'x': column 'x' not found in '" + b +
                                   "'; available columns: y");
}

class ManifestPartitionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int day = 1; day <= 3; ++day) {
      const fs::path sub = dir_.path() / ("day=" + std::to_string(day));
      fs::create_directories(sub);
      testing::WriteTable(sub / "part-0.parquet",
                          *Ints("x", "[" + std::to_string(day * 10) + ", 0]"), 10);
    }
    hive_.hive = true;
  }

  testing::TempDir dir_;
  PartitionOptions hive_;
};

TEST_F(ManifestPartitionsTest, PartitionColumnsFollowTheFileColumnsAsConstantsOfEachFile) {
  auto manifest =
      Manifest::Make({dir_.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, nullptr, hive_)
          .ValueOrDie();
  EXPECT_EQ(manifest->schema()->ToString(), "x: int64\nday: int32");
  EXPECT_EQ(manifest->partition_schema()->ToString(), "day: int32");
  EXPECT_EQ(manifest->PartitionValue(2, 1)->ToString(), "3");
  EXPECT_EQ(manifest->PartitionValue(2, 0), nullptr);
  EXPECT_TRUE(manifest->files()[0].column_leaves[1].empty());
  EXPECT_EQ(manifest->files()[0].leaf_columns, (std::vector<int>{0}));
  EXPECT_FALSE(manifest->null_counts()[1].proven_none);  // no statistics for a constant
  // Named first, a partition column comes first.
  auto named = Manifest::Make({dir_.path().string()}, {"day", "x"}, {}, nullptr, IndexPolicy::kUse,
                              nullptr, hive_)
                   .ValueOrDie();
  EXPECT_EQ(named->schema()->ToString(), "day: int32\nx: int64");
  EXPECT_EQ(named->PartitionValue(0, 0)->ToString(), "1");
  // The values are part of the fingerprint.
  EXPECT_NE(named->fingerprint(),
            Manifest::Make({dir_.path().string()}, {"x"}).ValueOrDie()->fingerprint());
  ExpectHas(Manifest::Make({dir_.path().string()}, {"nope"}, {}, nullptr, IndexPolicy::kUse,
                           nullptr, hive_)
                .status(),
            "partition columns: day: column 'nope' not found in");
}

TEST_F(ManifestPartitionsTest, AFilterOnPartitionsRulesFilesOutButKeepsOneForTheSchema) {
  Stats stats;
  auto kept = Manifest::Make({dir_.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, &stats,
                             hive_, cp::greater_equal(cp::field_ref("day"), cp::literal(2)))
                  .ValueOrDie();
  ASSERT_EQ(kept->files().size(), 2u);
  EXPECT_EQ(kept->PartitionValue(0, 1)->ToString(), "2");
  EXPECT_EQ(kept->num_rows(), 4);
  EXPECT_EQ(kept->units()[0].file, 0);
  EXPECT_EQ(stats.Snapshot().files_pruned, 1);
  EXPECT_EQ(stats.Snapshot().files_opened, 2);

  Stats none_stats;
  auto none = Manifest::Make({dir_.path().string()}, {}, {}, nullptr, IndexPolicy::kUse,
                             &none_stats, hive_, cp::equal(cp::field_ref("day"), cp::literal(9)))
                  .ValueOrDie();
  ASSERT_EQ(none->files().size(), 1u);
  EXPECT_EQ(none->PartitionValue(0, 1)->ToString(), "1");
  EXPECT_EQ(none_stats.Snapshot().files_pruned, 2);
}

TEST_F(ManifestPartitionsTest, APartitionKeyThatIsAlsoAFileColumnIsAnError) {
  testing::WriteTable(dir_.path() / "day=1" / "part-0.parquet", *Ints("day", "[5]"), 10);
  testing::WriteTable(dir_.path() / "day=2" / "part-0.parquet", *Ints("day", "[5]"), 10);
  testing::WriteTable(dir_.path() / "day=3" / "part-0.parquet", *Ints("day", "[5]"), 10);
  ExpectHas(
      Manifest::Make({dir_.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, nullptr, hive_)
          .status(),
      "partition key 'day' (from the directory names or the table's partition values) is "
      "also a column of '" +
          (dir_.path() / "day=1" / "part-0.parquet").string() + "'");
  // Stored in the files, the key only prunes: the file's own column is read.
  hive_.stored_in_files = true;
  auto stored =
      Manifest::Make({dir_.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, nullptr, hive_)
          .ValueOrDie();
  EXPECT_EQ(stored->schema()->ToString(), "day: int64");
  EXPECT_EQ(stored->PartitionValue(0, 0), nullptr);
}

TEST(ManifestTrustTest, AnIndexAloneNamesTheFilesAndEachIsCheckedAtItsFirstRead) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 6, 3);
  ASSERT_TRUE(WriteDatasetIndex(dir.path().string(), {}, false, true).ok());
  auto manifest =
      Manifest::Make({dir.path().string()}, {}, {}, nullptr, IndexPolicy::kTrust).ValueOrDie();
  ASSERT_EQ(manifest->files().size(), 2u);
  const std::string summary = (dir.path() / kSummaryFileName).string();
  ASSERT_NE(manifest->files()[1].trusted_index, nullptr);
  EXPECT_EQ(*manifest->files()[1].trusted_index, summary);
  // Checksums for two row groups of five leaves.
  EXPECT_EQ(manifest->files()[1].checksums.size(), 10u);
  // Listed, the index's checksums are not taken: the listing identifies the files.
  auto listed = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  EXPECT_NE(listed->files()[0].footer.summary(), nullptr);
  EXPECT_TRUE(listed->files()[0].checksums.empty());
  EXPECT_EQ(listed->files()[0].trusted_index, nullptr);
  auto* executor = arrow::internal::GetCpuThreadPool();
  EXPECT_TRUE(manifest->VerifyFile(1, executor, nullptr).status().ok());
  testing::WriteDataset(dir.path(), 2, 7, 3);
  EXPECT_TRUE(manifest->VerifyFile(1, executor, nullptr).status().ok());  // checked once
  ExpectHas(manifest->VerifyFile(0, executor, nullptr).status(),
            "part-0.parquet' was rewritten after the dataset index '" + summary + "' was written");
}

TEST(ManifestTest, UnreadableFilesAreLeftOutAndListedOnlyWhenAskedTo) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 3, 10, 4);  // part-0 .. part-2, 3 row groups each
  const auto sound = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  {
    std::ofstream out(dir.path() / "part-1.parquet", std::ios::trunc);
    out << "not parquet";
  }
  ExpectHas(Manifest::Make({dir.path().string()}, {}).status(),
            "part-1.parquet' could not be read as Parquet");
  auto skipped = Manifest::Make({dir.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, nullptr,
                                {}, std::nullopt, /*skip_unreadable=*/true)
                     .ValueOrDie();
  ASSERT_EQ(skipped->unreadable_files().size(), 1u);
  EXPECT_EQ(fs::path(skipped->unreadable_files()[0].path).filename(), "part-1.parquet");
  ExpectHas(skipped->unreadable_files()[0].error, "could not be read as Parquet");
  ASSERT_EQ(skipped->files().size(), 2u);
  EXPECT_EQ(fs::path(skipped->files()[1].source.display).filename(), "part-2.parquet");
  // The units are the two readable files', numbered as if the bad one never was.
  ASSERT_EQ(skipped->units().size(), 6u);
  EXPECT_EQ(skipped->num_rows(), 20);
  for (size_t u = 0; u < skipped->units().size(); ++u) {
    EXPECT_EQ(skipped->units()[u].file, static_cast<int32_t>(u / 3));
    EXPECT_EQ(skipped->units()[u].first_row, sound->units()[u % 3].first_row + 10 * (u / 3));
  }
  EXPECT_NE(skipped->fingerprint(), sound->fingerprint());
  // Without the bad file at all, the same manifest.
  fs::remove(dir.path() / "part-1.parquet");
  EXPECT_EQ(Manifest::Make({dir.path().string()}, {}).ValueOrDie()->fingerprint(),
            skipped->fingerprint());
}

TEST(ManifestTest, NoReadableFileIsAnErrorEvenWhenSkipping) {
  testing::TempDir dir;
  {
    std::ofstream out(dir.path() / "a.parquet");
    out << "not parquet";
  }
  ExpectHas(Manifest::Make({dir.path().string()}, {}, {}, nullptr, IndexPolicy::kUse, nullptr, {},
                           std::nullopt, /*skip_unreadable=*/true)
                .status(),
            "a.parquet' could not be read as Parquet");
}

}  // namespace
}  // namespace stoker
