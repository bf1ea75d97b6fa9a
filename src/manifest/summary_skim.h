// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <parquet/metadata.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "manifest/thrift_compact.h"

namespace stoker {

/// A summary file's footer (Parquet's FileMetaData, Thrift compact) walked, not decoded:
/// where each row group's bytes are, its row count and file, and the other fields as bytes.
/// Decoding a summary whole takes about ten times its size in objects (kilobytes per row
/// group); cutting each file's row groups out as bytes (CutFooter) keeps the peak near the
/// bytes themselves. Views point into the bytes skimmed, which must outlive it.
struct SummarySkim {
  /// A top-level field other than num_rows (3), row_groups (4) and key_value_metadata (5):
  /// its id, type and value bytes.
  struct Field {
    int16_t id;
    thrift::Type type;
    std::string_view value;
  };
  struct RowGroup {
    /// The RowGroup struct's bytes.
    std::string_view bytes;
    int64_t num_rows = 0;
    int32_t num_columns = 0;
    /// Its first column chunk's file_path (empty when it has none).
    std::string_view file_path;
  };
  struct KeyValue {
    std::string_view key;
    std::string_view value;
    /// The KeyValue struct's bytes.
    std::string_view bytes;
  };
  std::vector<Field> fields;
  std::vector<RowGroup> row_groups;
  std::vector<KeyValue> key_values;
};

/// Walks a FileMetaData's Thrift compact bytes. An error says what is malformed, and that
/// encrypted metadata is not supported.
arrow::Result<SummarySkim> SkimFileMetaData(std::string_view thrift);

/// The Thrift-compact FileMetaData of one file of the summary: the summary's fields, the
/// row groups `row_groups` (indices into skim.row_groups) with num_rows their sum, and the
/// key-value entries but those whose key starts with `drop_prefix`. Parquet C++ reads it as
/// it reads the file's own.
std::string CutFooter(const SummarySkim& skim, const std::vector<int>& row_groups,
                      std::string_view drop_prefix);

/// OK when `decoded` (a CutFooter decoded by Parquet) has the row groups the skimmer cut,
/// with the row counts it read (`skimmed_rows`); otherwise an error saying that the index's
/// bytes do not read the same way whole and cut (malformed Thrift that Parquet's decoder
/// and the skimmer walk differently), so that such an index is refused, never half-used.
arrow::Status CheckCut(const parquet::FileMetaData& decoded,
                       const std::vector<int64_t>& skimmed_rows);

/// The FileMetaData bytes of a Parquet file's bytes (`PAR1` ... footer, length, `PAR1`).
arrow::Result<std::string_view> FooterBytes(std::string_view file);

}  // namespace stoker
