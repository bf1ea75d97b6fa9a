// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <parquet/metadata.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "manifest/footer_reader.h"
#include "util/thread_annotations.h"

namespace stoker {

/// The most recently decoded footers (the manifest keeps them Thrift-serialized, as in the
/// file: a few hundred bytes per row group, against kilobytes decoded), by file index, so that work
/// going through a file's row groups in order (statistics checks, filter counting, a window's units
/// of one file) decodes it once. Thread-safe; holds at most kCapacity footers.
class FooterCache {
 public:
  static constexpr size_t kCapacity = 64;

  /// File `file`'s footer, decoded from `footer` unless it is among the last kCapacity.
  arrow::Result<std::shared_ptr<parquet::FileMetaData>> Get(int32_t file,
                                                            const SerializedFooter& footer) const
      EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  // Most recent last; a linear scan of at most kCapacity entries.
  mutable std::vector<std::pair<int32_t, std::shared_ptr<parquet::FileMetaData>>> entries_
      GUARDED_BY(mutex_);
};

}  // namespace stoker
