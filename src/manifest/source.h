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

/// Resolves files, directories (recursive *.parquet), globs (* ? [..] within one path
/// component) and URIs (s3://bucket/prefix/, s3://bucket/path/*.parquet, ...) to files:
/// each source's files in sorted path order, sources in the order given. A missing path, an empty
/// directory, a glob that matches nothing, or a file named twice is an error that names it.
arrow::Result<std::vector<SourceFile>> ResolveSources(const std::vector<std::string>& sources,
                                                      const StorageOptions& storage = {},
                                                      const RetryCounter& retries = nullptr);

}  // namespace stoker
