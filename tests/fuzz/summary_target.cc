// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The bytes as a summary file's footer (Thrift compact FileMetaData) through the skimmer that
// cuts each file's footer out of a dataset index without decoding it whole
// (manifest/summary_skim.h), checked against Parquet's own decoder: whenever Parquet decodes
// the bytes and the skimmer walks them, the footer cut with every row group decodes to the
// same row groups with the same rows, and cutting them file by file loses none.
#include <numeric>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "fuzz_targets.h"
#include "manifest/footer_reader.h"
#include "manifest/summary_skim.h"
#include "stoker/error.h"

namespace stoker::fuzz {

namespace {

// Row counts of every row group, or an error where Parquet's lazy decoding throws.
arrow::Result<std::vector<int64_t>> RowCounts(const parquet::FileMetaData& metadata) {
  std::vector<int64_t> rows;
  auto status = CatchAll([&]() -> arrow::Status {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    for (int rg = 0; rg < metadata.num_row_groups(); ++rg) {
      rows.push_back(metadata.RowGroup(rg)->num_rows());
    }
    END_PARQUET_CATCH_EXCEPTIONS
    return arrow::Status::OK();
  });
  ARROW_RETURN_NOT_OK(status);
  return rows;
}

}  // namespace

int SummaryInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto skim = SkimFileMetaData(bytes);
  if (!skim.ok()) return 0;
  std::vector<int> all(skim->row_groups.size());
  std::iota(all.begin(), all.end(), 0);
  // A cut is decoded whatever Parquet makes of the original: any error, never a crash.
  auto cut = DecodeFooter(CutFooter(*skim, all, "stoker.index.files"));
  auto decoded = DecodeFooter(bytes);
  if (!decoded.ok()) return 0;
  auto expected = RowCounts(**decoded);
  if (!expected.ok()) return 0;
  if (!cut.ok()) {
    Violation("Parquet decodes the footer but not its cut: " + cut.status().ToString());
  }
  auto got = RowCounts(**cut);
  if (!got.ok() || *got != *expected) Violation("the cut footer's row groups differ");
  int64_t total = 0;
  for (size_t rg = 0; rg < expected->size(); ++rg) {
    if (skim->row_groups[rg].num_rows != (*expected)[rg]) {
      Violation("the skimmer read row group " + std::to_string(rg) + "'s rows wrong");
    }
    total += (*expected)[rg];
  }
  if ((*cut)->num_rows() != total) Violation("the cut footer's num_rows is not its row groups'");
  // Cut one row group at a time, as files are cut out of a summary: each decodes alone.
  for (int rg : all) {
    auto one = DecodeFooter(CutFooter(*skim, {rg}, "stoker.index.files"));
    if (!one.ok() || (*one)->num_row_groups() != 1) {
      Violation("row group " + std::to_string(rg) + " cut alone does not decode");
    }
  }
  return 0;
}

}  // namespace stoker::fuzz
