// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "cache/cache_ledger.h"
#include "stoker/options.h"
#include "telemetry/stats.h"
#include "util/thread_annotations.h"

namespace stoker {

/// A local-disk cache of finished units (row groups after projection, filter and transforms),
/// shared safely by the processes of one host.
///
/// Layout: DIR/<k0k1>/<k2k3>/<key>.stkc, where key is 32 hex digits; each entry is a 64-byte
/// header (magic, format version, payload length, XXH3-64 checksum of the payload) followed by
/// an Arrow IPC file (64-byte-aligned buffers), read back by memory mapping with no copy.
/// Entries are written under DIR/tmp/ and renamed into place when complete, so a reader sees
/// a whole entry or none. A damaged entry (bad checksum, truncated) is counted, deleted and
/// reported as a miss. With a limit, processes sharing the directory take the ledger's lock
/// (cache_ledger.h) to evict and add entries, and keep its byte count, so together they stay
/// under the limit; an entry evicted while another process has it mapped stays readable there. Any
/// write failure (full disk, read-only or vanished directory, permissions) turns writing off for
/// this cache with one warning; reads go on.
class DiskCache {
 public:
  /// Bumped whenever the entry format, what keys cover, or the values a transform computes
  /// change: old entries then miss. 2: log1p computed by Stoker's own code (portable_math.h),
  /// which differs from the glibc log1p of version 1 by an ULP in some values.
  static constexpr uint32_t kFormatVersion = 2;

  /// Opens (creating if needed) a cache in `dir` holding at most `limit_bytes` (0: no
  /// limit). Never fails on a bad directory: it starts with writes off and a warning.
  static std::shared_ptr<DiskCache> Open(const std::string& dir, int64_t limit_bytes,
                                         CachePolicy policy, std::shared_ptr<Stats> stats);

  /// The cached batch for `key`, or nullptr on a miss. Never fails: unreadable or damaged
  /// entries are misses (damaged ones are counted and deleted).
  std::shared_ptr<arrow::RecordBatch> Get(const std::string& key) EXCLUDES(mutex_);

  /// Stores `batch` under `key` (unless writes are off, or the policy says the cache is full).
  void Put(const std::string& key, const arrow::RecordBatch& batch) EXCLUDES(mutex_);

  /// The warning to show the user once (empty when there is none or it was taken).
  std::string TakeWarning() EXCLUDES(mutex_);

  /// The entries on disk now: count and bytes (rescans the directory).
  std::pair<int64_t, int64_t> Usage() EXCLUDES(mutex_);

  const std::string& dir() const { return dir_; }

 private:
  struct Entry {
    int64_t bytes = 0;
    uint64_t last_use = 0;  // a logical clock; higher is more recent
  };

  DiskCache(std::string dir, int64_t limit_bytes, CachePolicy policy, std::shared_ptr<Stats> stats)
      : dir_(std::move(dir)), limit_(limit_bytes), policy_(policy), stats_(std::move(stats)) {}

  std::string PathOf(const std::string& key) const;
  void DisableWrites(const std::string& why) REQUIRES(mutex_);
  /// Rebuilds entries_ from the directory (other processes may share it).
  void Rescan() REQUIRES(mutex_);
  /// Removes least recently used entries until `incoming` more bytes fit under the limit.
  void EvictFor(int64_t incoming) REQUIRES(mutex_);
  /// Whether an entry of `bytes` may be written, after evicting for it under kLru.
  bool MakeRoom(int64_t bytes) REQUIRES(mutex_);
  /// Writes the entry's bytes to a new file under tmp/; its path.
  arrow::Result<std::string> WriteTemp(const std::string& key, const arrow::Buffer& payload) const;
  /// Renames a written temp file into place as `key`'s entry and records it; on failure
  /// turns writes off.
  void Commit(const std::string& temp, const std::string& key, int64_t bytes) REQUIRES(mutex_);

  const std::string dir_;
  const int64_t limit_;
  const CachePolicy policy_;
  const std::shared_ptr<Stats> stats_;

  Mutex mutex_;
  bool writes_enabled_ GUARDED_BY(mutex_) = true;
  std::string warning_ GUARDED_BY(mutex_);
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mutex_);  // by entry path
  /// Bytes of the entries on disk: this process's estimate, or with a limit the ledger's
  /// count, read at every write.
  int64_t total_bytes_ GUARDED_BY(mutex_) = 0;
  /// With a limit: the lock and byte count the processes sharing the directory agree on.
  std::unique_ptr<CacheLedger> ledger_;
  uint64_t clock_ GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
