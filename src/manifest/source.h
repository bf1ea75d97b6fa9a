// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/filesystem/filesystem.h>
#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "manifest/storage.h"

namespace stoker {

/// One Parquet file a source resolved to, with the identity that fingerprints it.
struct SourceFile {
  /// The filesystem that holds it (local, or whatever an URI names).
  std::shared_ptr<arrow::fs::FileSystem> filesystem;
  /// Path within that filesystem.
  std::string path;
  /// How messages name it: the path for local files, scheme://path otherwise.
  std::string display;
  /// Size in bytes.
  int64_t size = 0;
  /// Modification time in nanoseconds since the epoch (0 when the filesystem has none).
  int64_t mtime_ns = 0;
};

/// Name of the Parquet summary file (every data file's footer in one, each row group's
/// column chunks naming their file) that pyarrow, Dask and Spark write beside a dataset.
inline constexpr char kSummaryFileName[] = "_metadata";

/// What one source resolved to: its data files and, for a directory holding one, its
/// summary file.
struct ResolvedSource {
  /// The data files, in sorted path order.
  std::vector<SourceFile> files;
  /// The directory's kSummaryFileName when the source is a directory that has one; its
  /// `path` is empty otherwise.
  SourceFile summary;
  /// The directory (in its filesystem's terms, no trailing slash) when the source is one
  /// (the summary's file paths are relative to it); empty for files and globs.
  std::string root;
  /// False when the directory was not listed (ResolveSourceList's `by_summary`): `files` is
  /// empty until the summary's file list fills it.
  bool listed = true;
};

/// The SourceFile `fs` describes with `info` (its display name, size and mtime in ns).
SourceFile ToSourceFile(const std::shared_ptr<arrow::fs::FileSystem>& fs,
                        const arrow::fs::FileInfo& info);

/// `path` relative to the directory `dir` (both in one filesystem's terms); `path` itself
/// when it is not below `dir`.
std::string RelativeTo(const std::string& dir, const std::string& path);

/// True for a path (relative to the directory or glob base that listed it) no dataset
/// reader treats as data: a component starting with '_' or '.' (`_metadata`,
/// `_common_metadata`, `_SUCCESS`, `_temporary/`, `.part-0.parquet.crc`, hidden files).
bool IsHiddenPath(const std::string& relative_path);

/// Resolves files, directories (recursive *.parquet), globs (* ? [..] within one path
/// component) and URIs (s3://bucket/prefix/, s3://bucket/path/*.parquet, ...) to files:
/// each source's files in sorted path order, sources in the order given. Directories and
/// globs skip hidden paths (IsHiddenPath); a file named explicitly is taken as it is. A
/// missing path, an empty directory, a glob that matches nothing, or a file named twice is
/// an error that names it. With `by_summary`, a directory holding a summary file is not
/// listed: its source has the summary, `listed` false and no files yet (one metadata request
/// instead of a listing; IndexPolicy::kTrust).
arrow::Result<std::vector<ResolvedSource>> ResolveSourceList(
    const std::vector<std::string>& sources, const StorageOptions& storage = {},
    const RetryCounter& retries = nullptr, bool by_summary = false);

/// An error naming the first file two of `sources` share (its rows would be read twice).
/// ResolveSourceList checks the files it lists; files taken from an index later are checked
/// by the caller.
arrow::Status CheckNoFileTwice(const std::vector<ResolvedSource>& sources);

/// ResolveSourceList's data files, all sources together.
arrow::Result<std::vector<SourceFile>> ResolveSources(const std::vector<std::string>& sources,
                                                      const StorageOptions& storage = {},
                                                      const RetryCounter& retries = nullptr);

}  // namespace stoker
