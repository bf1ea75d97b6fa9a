// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/buffer.h>
#include <arrow/result.h>
#include <parquet/metadata.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// Key of the key-value metadata entry `stoker index --checksums` adds to `_metadata`: one
/// line per data file, "<checksums> <path relative to the directory>", the checksums being
/// 16 hex digits per column chunk, row group by row group, leaf by leaf.
inline constexpr char kIndexChecksumsKey[] = "stoker.index.checksums";

/// Where a column chunk's bytes are in its file: from the dictionary page when it has one.
struct ChunkRange {
  int64_t start = 0;
  int64_t length = 0;
};
ChunkRange ChunkRangeOf(const parquet::ColumnChunkMetaData& chunk);

/// The checksum the index records for a column chunk's bytes (XXH3-64).
uint64_t ChunkChecksum(const uint8_t* data, int64_t size);

/// A file's checksums as its line in kIndexChecksumsKey holds them, and back; the latter
/// fails on anything but whole groups of 16 hex digits.
std::string EncodeChecksums(const std::vector<uint64_t>& checksums);
arrow::Result<std::vector<uint64_t>> DecodeChecksums(std::string_view hex);

/// The bytes a file's reads returned, by position, so that the column chunks a fetch read
/// can be checked against the index once they are in (CountingFile keeps them here).
class ReadLog {
 public:
  void Add(int64_t position, std::shared_ptr<arrow::Buffer> bytes);
  /// The checksum of bytes [range.start, range.start + range.length) as the reads returned
  /// them; an error when the reads did not cover them all.
  arrow::Result<uint64_t> Checksum(const ChunkRange& range) const;

 private:
  mutable Mutex mutex_;
  std::map<int64_t, std::shared_ptr<arrow::Buffer>> reads_ GUARDED_BY(mutex_);
};

}  // namespace stoker
