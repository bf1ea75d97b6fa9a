// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/filesystem/filesystem.h>
#include <arrow/result.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "stoker/storage_options.h"

namespace stoker {

/// Counts the retries the storage layer makes (shared with the loader's stats).
using RetryCounter = std::shared_ptr<std::atomic<int64_t>>;

/// The filesystem that holds `location` and the path within it: s3:// URIs use Arrow's S3
/// filesystem configured by `storage`; other URIs (gs://, hdfs://, file://, ...) Arrow's
/// filesystem registry; plain paths the local filesystem.
arrow::Result<std::shared_ptr<arrow::fs::FileSystem>> OpenFileSystem(const std::string& location,
                                                                     const StorageOptions& storage,
                                                                     const RetryCounter& retries,
                                                                     std::string* path);

/// Rewrites a storage error so it says what to fix (bad credentials, denied access) and
/// names `location`.
arrow::Status ExplainStorageError(const arrow::Status& status, const std::string& location);

}  // namespace stoker
