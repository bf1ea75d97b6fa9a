// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/buffer.h>
#include <arrow/result.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "manifest/chunk_checksums.h"
#include "manifest/footer_reader.h"
#include "manifest/source.h"
#include "manifest/summary_skim.h"
#include "stoker/fields.h"
#include "stoker/options.h"
#include "telemetry/stats.h"

namespace stoker {

/// Key of the key-value metadata entry `stoker index` adds to `_metadata`: one line per data
/// file, "<size> <mtime_ns> <path relative to the directory>", which the standard summary
/// cannot hold and the stale check compares with the listing.
inline constexpr char kIndexFilesKey[] = "stoker.index.files";
/// What the key-value entries `stoker index` adds start with (kIndexFilesKey,
/// kIndexChecksumsKey): a data file's own footer has none of them.
inline constexpr char kIndexKeyPrefix[] = "stoker.index.";

/// A data file as a summary records it: its size and modification time when `stoker index`
/// wrote the summary (-1 otherwise), and its row groups' indices in the summary.
struct IndexedFile {
  int64_t size = -1;
  int64_t mtime_ns = -1;
  std::vector<int> row_groups;
  /// Its column chunks' checksums when `stoker index --checksums` wrote the summary
  /// (kIndexChecksumsKey); empty otherwise.
  std::vector<uint64_t> checksums;
};

/// A directory's summary file, skimmed (not decoded): every data file's footer in one
/// FileMetaData, and the files it describes by path relative to the directory.
struct DatasetIndex {
  /// The summary file's bytes, which `skim` points into.
  std::shared_ptr<arrow::Buffer> bytes;
  SummarySkim skim;
  std::map<std::string, IndexedFile> files;
  /// Whether `stoker index` wrote it (sizes and modification times recorded).
  bool by_stoker = false;
};

/// Reads `source.summary` in one request (counted in `stats`) and skims it.
arrow::Result<DatasetIndex> ReadDatasetIndex(const ResolvedSource& source, Stats* stats);

/// Fills the files of a source that was not listed (`listed` false) from its index's file
/// list, as a listing would have given them (sorted paths, sizes, mtimes). An index that
/// `stoker index` did not write records no sizes: an error saying so.
arrow::Status ListFromIndex(const DatasetIndex& index, ResolvedSource* source);

/// The footers `index` gives the data files of `source`, in the order of `source.files`.
/// For a listed source, first checks that the index still matches the listing: every
/// listed file in it and nothing else, each with the size and modification time `stoker
/// index` recorded (another tool's summary: no file modified after it). A stale index is an
/// error naming the file (IndexPolicy::kUse) or nullopt (kFallback: read the footers).
arrow::Result<std::optional<std::vector<Footer>>> FootersFromIndex(DatasetIndex index,
                                                                   const ResolvedSource& source,
                                                                   IndexPolicy policy);

/// What WriteDatasetIndex wrote.
struct IndexReport {
  /// Where the summary file went (scheme://path for remote stores).
  std::string path;
  int64_t files = 0;
  int64_t row_groups = 0;
  int64_t bytes = 0;
  /// Bytes of column chunks read for the checksums (0 without them).
  int64_t bytes_checksummed = 0;
};

/// IndexReport's fields by name: write_index's dict in Python (stoker/fields.h).
constexpr auto FieldsOf(const IndexReport&) {
  using R = IndexReport;
  return std::tuple{Field{"path", &R::path}, Field{"files", &R::files},
                    Field{"row_groups", &R::row_groups}, Field{"bytes", &R::bytes},
                    Field{"bytes_checksummed", &R::bytes_checksummed}};
}

/// Writes `<directory>/_metadata` for the directory `source` (local or a URI): every data
/// file's footer (read `storage.metadata_threads` at a time) with its column chunks naming
/// the file, and kIndexFilesKey; with `checksums`, also kIndexChecksumsKey, for which every
/// column chunk is read once (`storage.metadata_threads` files at a time). Fails, naming
/// it, when a file's Parquet schema differs from the first file's (one summary holds one
/// schema), or when the summary exists and `overwrite` is false.
arrow::Result<IndexReport> WriteDatasetIndex(const std::string& source,
                                             const StorageOptions& storage, bool overwrite,
                                             bool checksums = false);

}  // namespace stoker
