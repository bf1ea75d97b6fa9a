// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The bytes as a summary file's footer (Thrift compact FileMetaData) through the skimmer that
// cuts each file's footer out of a dataset index without decoding it whole
// (manifest/summary_skim.h), checked against Parquet's own decoder: a cut Stoker accepts
// (it decodes, and CheckCut finds the row groups and rows the skimmer read) has the row
// counts Parquet reads from the whole footer, for every row group together and each alone.
// Malformed Thrift that the two walk differently (a list whose header names another element
// type than Parquet's schema: Parquet reads the schema's type, the skimmer the header's) is
// refused, never used.
#include <parquet/exception.h>

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
  std::vector<int64_t> skimmed;
  for (const auto& row_group : skim->row_groups) skimmed.push_back(row_group.num_rows);
  auto decoded = DecodeFooter(bytes);
  auto expected = decoded.ok() ? RowCounts(**decoded) : decoded.status();
  // What Stoker accepts (the cut decodes and agrees with the skim, CheckCut) must be what
  // Parquet reads from the whole footer; what it refuses is an error, never a crash.
  auto accepted = [&](const std::vector<int>& row_groups) -> arrow::Result<std::vector<int64_t>> {
    ARROW_ASSIGN_OR_RAISE(auto cut,
                          DecodeFooter(CutFooter(*skim, row_groups, "stoker.index.files")));
    std::vector<int64_t> rows;
    for (int rg : row_groups) rows.push_back(skimmed[rg]);
    auto checked = CatchAll([&]() -> arrow::Status {
      BEGIN_PARQUET_CATCH_EXCEPTIONS
      return CheckCut(*cut, rows);
      END_PARQUET_CATCH_EXCEPTIONS
    });
    ARROW_RETURN_NOT_OK(checked);
    if (cut->num_rows() != std::accumulate(rows.begin(), rows.end(), int64_t{0})) {
      Violation("a cut footer's num_rows is not the sum of its row groups'");
    }
    return rows;
  };
  // An index is used only when every file's cut is accepted: here the extremes, every row
  // group in one cut and each alone.
  bool all_accepted = accepted(all).ok();
  for (int rg : all) all_accepted = accepted({rg}).ok() && all_accepted;
  if (all_accepted && expected.ok() && *expected != skimmed) {
    Violation("Stoker accepts cuts whose row groups Parquet reads otherwise from the whole footer");
  }
  return 0;
}

}  // namespace stoker::fuzz
