// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/util/future.h>
#include <arrow/util/thread_pool.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "manifest/source.h"
#include "telemetry/stats.h"
#include "util/thread_annotations.h"

namespace stoker {

/// Checks, once per file and without blocking, that the files a dataset index listed
/// (IndexPolicy::kTrust: no listing was compared with it) still have the size and
/// modification time the index recorded: one metadata request per file, at its first read,
/// shared by every later read. Thread-safe; holds one future per file.
class IdentityCheck {
 public:
  explicit IdentityCheck(size_t num_files) : checks_(num_files) {}

  /// Completes OK when the store still has `file` (number `index` of the manifest) as the
  /// dataset index `index_display` recorded it, with an error naming both when it was
  /// rewritten or removed. The first call for
  /// a file issues the request on `executor` (counted in `stats` as a metadata request);
  /// later calls share its outcome.
  arrow::Future<> Verify(int32_t index, const SourceFile& file, const std::string& index_display,
                         arrow::internal::Executor* executor, Stats* stats) EXCLUDES(mutex_);

 private:
  Mutex mutex_;
  /// Per file: its check, once issued (an invalid future before).
  std::vector<arrow::Future<>> checks_ GUARDED_BY(mutex_);
};

}  // namespace stoker
