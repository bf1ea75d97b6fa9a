// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "manifest/footer_reader.h"
#include "manifest/source.h"
#include "stoker/options.h"
#include "telemetry/stats.h"

namespace stoker {

/// Key of the key-value metadata entry `stoker index` adds to `_metadata`: one line per data
/// file, "<size> <mtime_ns> <path relative to the directory>", which the standard summary
/// cannot hold and the stale check compares with the listing.
inline constexpr char kIndexFilesKey[] = "stoker.index.files";

/// The footers a directory's summary file gives its data files, in the order of
/// `source.files`, after checking that the summary still matches the listing: every listed
/// file in it and nothing else, each with the size and modification time `stoker index`
/// recorded (a summary written by another tool: no file modified after it). A stale summary
/// is an error naming the file (IndexPolicy::kUse) or nullopt (kFallback: read the footers).
/// One read of the summary, counted in `stats`.
arrow::Result<std::optional<std::vector<Footer>>> ReadSummaryFooters(const ResolvedSource& source,
                                                                     IndexPolicy policy,
                                                                     Stats* stats);

/// What WriteDatasetIndex wrote.
struct IndexReport {
  /// Where the summary file went (scheme://path for remote stores).
  std::string path;
  int64_t files = 0;
  int64_t row_groups = 0;
  int64_t bytes = 0;
};

/// Writes `<directory>/_metadata` for the directory `source` (local or a URI): every data
/// file's footer (read `storage.metadata_threads` at a time) with its column chunks naming
/// the file, and kIndexFilesKey. Fails, naming it, when a file's Parquet schema differs from
/// the first file's (one summary holds one schema), or when the summary exists and
/// `overwrite` is false.
arrow::Result<IndexReport> WriteDatasetIndex(const std::string& source,
                                             const StorageOptions& storage, bool overwrite);

}  // namespace stoker
