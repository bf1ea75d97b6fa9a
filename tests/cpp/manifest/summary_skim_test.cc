// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/summary_skim.h"

#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/util/key_value_metadata.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>

#include <numeric>

#include "manifest/footer_reader.h"

namespace stoker {
namespace {

constexpr char kDropped[] = "stoker.index.files";

// Footers of `files` small Parquet files (int, string and list columns, statistics on),
// row groups of 3 rows, each naming its file as a summary does.
std::vector<std::shared_ptr<parquet::FileMetaData>> FileFooters(int files) {
  std::vector<std::shared_ptr<parquet::FileMetaData>> out;
  for (int f = 0; f < files; ++f) {
    arrow::Int64Builder ints;
    arrow::StringBuilder strings;
    auto lists = std::make_shared<arrow::ListBuilder>(arrow::default_memory_pool(),
                                                      std::make_shared<arrow::Int32Builder>());
    auto* values = static_cast<arrow::Int32Builder*>(lists->value_builder());
    const int rows = 4 + 3 * f;  // uneven: the last row group is short
    for (int r = 0; r < rows; ++r) {
      EXPECT_TRUE(ints.Append(f * 100 + r).ok());
      EXPECT_TRUE(strings.Append("s" + std::to_string(r)).ok());
      EXPECT_TRUE(lists->Append().ok());
      EXPECT_TRUE(values->Append(r).ok());
    }
    auto table = arrow::Table::Make(
        arrow::schema({arrow::field("i", arrow::int64()), arrow::field("s", arrow::utf8()),
                       arrow::field("l", arrow::list(arrow::int32()))}),
        {ints.Finish().ValueOrDie(), strings.Finish().ValueOrDie(), lists->Finish().ValueOrDie()});
    auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
    // As pyarrow writes: the Arrow schema in the key-value metadata.
    EXPECT_TRUE(parquet::arrow::WriteTable(
                    *table, arrow::default_memory_pool(), sink, 3,
                    parquet::default_writer_properties(),
                    parquet::ArrowWriterProperties::Builder().store_schema()->build())
                    .ok());
    auto bytes = sink->Finish().ValueOrDie();
    auto footer = FooterBytes(std::string_view(*bytes)).ValueOrDie();
    auto metadata = DecodeFooter(std::string(footer)).ValueOrDie();
    metadata->set_file_path("day=" + std::to_string(f) + "/part-0.parquet");
    out.push_back(metadata);
  }
  return out;
}

// The summary of `footers` as WriteDatasetIndex builds it, with `extra` key-value entries.
std::shared_ptr<parquet::FileMetaData> Summary(
    const std::vector<std::shared_ptr<parquet::FileMetaData>>& footers,
    std::vector<std::pair<std::string, std::string>> extra) {
  auto kv = footers[0]->key_value_metadata()->Copy();
  for (const auto& [key, value] : extra) kv->Append(key, value);
  auto summary =
      parquet::FileMetaDataBuilder::Make(footers[0]->schema(), parquet::default_writer_properties())
          ->Finish(kv);
  for (const auto& footer : footers) summary->AppendRowGroups(*footer);
  return summary;
}

std::string SummaryFile(const parquet::FileMetaData& summary) {
  auto sink = arrow::io::BufferOutputStream::Create().ValueOrDie();
  EXPECT_TRUE(parquet::arrow::WriteMetaDataFile(summary, sink.get()).ok());
  return sink->Finish().ValueOrDie()->ToString();
}

TEST(SummarySkimTest, EachFilesCutIsTheSubsetParquetMakes) {
  auto footers = FileFooters(3);
  const std::string file = SummaryFile(*Summary(footers, {{kDropped, "1 2 day=0/part-0.parquet"}}));
  // What the cuts must equal: the summary without Stoker's entry, subset by Parquet C++.
  auto plain = Summary(footers, {});
  auto skim = SkimFileMetaData(FooterBytes(file).ValueOrDie()).ValueOrDie();
  ASSERT_EQ(static_cast<int>(skim.row_groups.size()), plain->num_row_groups());
  int first = 0;
  for (size_t f = 0; f < footers.size(); ++f) {
    std::vector<int> row_groups(footers[f]->num_row_groups());
    std::iota(row_groups.begin(), row_groups.end(), first);
    first += footers[f]->num_row_groups();
    for (int rg : row_groups) {
      EXPECT_EQ(skim.row_groups[rg].file_path, "day=" + std::to_string(f) + "/part-0.parquet");
      EXPECT_EQ(skim.row_groups[rg].num_rows, plain->RowGroup(rg)->num_rows());
      EXPECT_EQ(skim.row_groups[rg].num_columns, 3);
    }
    auto cut = DecodeFooter(CutFooter(skim, row_groups, kDropped)).ValueOrDie();
    auto expected = plain->Subset(row_groups);
    EXPECT_TRUE(cut->Equals(*expected)) << "file " << f;
    EXPECT_EQ(cut->num_rows(), footers[f]->num_rows());
    EXPECT_FALSE(cut->key_value_metadata()->Contains(kDropped));
    EXPECT_TRUE(cut->key_value_metadata()->Contains("ARROW:schema"));
  }
  // The head alone (no row group) gives the schema.
  auto head = DecodeFooter(CutFooter(skim, {}, kDropped)).ValueOrDie();
  EXPECT_EQ(head->num_row_groups(), 0);
  EXPECT_TRUE(head->schema()->Equals(*plain->schema()));
}

TEST(SummarySkimTest, CorruptBytesAreErrorsNeverCrashes) {
  const std::string file = SummaryFile(*Summary(FileFooters(2), {}));
  const std::string footer(FooterBytes(file).ValueOrDie());
  ASSERT_TRUE(SkimFileMetaData(footer).ok());
  // Every truncation, and every byte flipped: an error or a skim, never a crash or a hang.
  size_t refused = 0;
  for (size_t n = 0; n < footer.size(); ++n) {
    refused += !SkimFileMetaData(footer.substr(0, n)).ok();
    std::string flipped = footer;
    flipped[n] = static_cast<char>(flipped[n] ^ 0xff);
    auto skim = SkimFileMetaData(flipped);
    if (skim.ok()) (void)CutFooter(*skim, {}, kDropped);
  }
  EXPECT_EQ(refused, footer.size());  // a prefix never ends where the struct does
  EXPECT_FALSE(FooterBytes("PAR1").ok());
  EXPECT_FALSE(FooterBytes(file.substr(0, file.size() - 1)).ok());
  std::string encrypted = file;
  encrypted.replace(encrypted.size() - 4, 4, "PARE");
  EXPECT_TRUE(FooterBytes(encrypted).status().IsIOError());
}

}  // namespace
}  // namespace stoker
