// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/chunk_checksums.h"

// Header-only: libarrow does not export xxHash.
#define XXH_INLINE_ALL
#include <arrow/vendored/xxhash/xxhash.h>

#include <algorithm>
#include <cstdio>

namespace stoker {

ChunkRange ChunkRangeOf(const parquet::ColumnChunkMetaData& chunk) {
  int64_t start = chunk.data_page_offset();
  if (chunk.has_dictionary_page() && chunk.dictionary_page_offset() > 0) {
    start = std::min(start, chunk.dictionary_page_offset());
  }
  return {start, chunk.total_compressed_size()};
}

uint64_t ChunkChecksum(const uint8_t* data, int64_t size) {
  return XXH3_64bits(data, static_cast<size_t>(size));
}

std::string EncodeChecksums(const std::vector<uint64_t>& checksums) {
  std::string out(checksums.size() * 16, '0');
  for (size_t i = 0; i < checksums.size(); ++i) {
    char digits[17];
    std::snprintf(digits, sizeof(digits), "%016llx", static_cast<unsigned long long>(checksums[i]));
    out.replace(i * 16, 16, digits, 16);
  }
  return out;
}

arrow::Result<std::vector<uint64_t>> DecodeChecksums(std::string_view hex) {
  if (hex.size() % 16 != 0) {
    return arrow::Status::Invalid("checksums of ", hex.size(), " hex digits (16 per chunk)");
  }
  std::vector<uint64_t> out(hex.size() / 16);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t value = 0;
    for (char c : hex.substr(i * 16, 16)) {
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) return arrow::Status::Invalid("checksums: '", c, "' is not a hex digit");
      value = value << 4 | static_cast<uint64_t>(digit);
    }
    out[i] = value;
  }
  return out;
}

void ReadLog::Add(int64_t position, std::shared_ptr<arrow::Buffer> bytes) {
  MutexLock lock(mutex_);
  auto& kept = reads_[position];
  // Of two reads from one position, the longer covers more.
  if (kept == nullptr || kept->size() < bytes->size()) kept = std::move(bytes);
}

arrow::Result<uint64_t> ReadLog::Checksum(const ChunkRange& range) const {
  MutexLock lock(mutex_);
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  int64_t at = range.start;
  const int64_t end = range.start + range.length;
  while (at < end) {
    // The read that starts at or before `at` and reaches furthest past it.
    const arrow::Buffer* covering = nullptr;
    int64_t covering_start = 0;
    for (auto it = reads_.begin(); it != reads_.end() && it->first <= at; ++it) {
      if (it->first + it->second->size() > at &&
          (covering == nullptr ||
           it->first + it->second->size() > covering_start + covering->size())) {
        covering = it->second.get();
        covering_start = it->first;
      }
    }
    if (covering == nullptr) {
      return arrow::Status::Invalid("bytes ", at, "..", end, " were not read");
    }
    const int64_t take = std::min(end, covering_start + covering->size()) - at;
    XXH3_64bits_update(&state, covering->data() + (at - covering_start), static_cast<size_t>(take));
    at += take;
  }
  return static_cast<uint64_t>(XXH3_64bits_digest(&state));
}

}  // namespace stoker
