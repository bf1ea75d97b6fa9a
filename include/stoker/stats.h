// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "stoker/digest.h"

namespace stoker {

/// A point-in-time copy of a loader's counters, cumulative over its life.
struct StatsSnapshot {
  /// Rows and batches delivered to the consumer.
  int64_t rows = 0;
  int64_t batches = 0;
  /// Row groups read, and the compressed bytes of the column chunks they needed.
  int64_t units_read = 0;
  int64_t bytes_read = 0;
  /// Read requests made to the store (after coalescing adjacent ranges), the bytes they
  /// fetched (holes between coalesced ranges included), and the retries of failed requests.
  int64_t requests = 0;
  int64_t bytes_fetched = 0;
  int64_t retries = 0;
  /// Thread-seconds (summed over workers) fetching bytes, decoding them, assembling batches.
  double read_seconds = 0;
  double decode_seconds = 0;
  double assemble_seconds = 0;
  /// Thread-seconds filtering and transforming decoded row groups.
  double transform_seconds = 0;
  /// Row groups skipped unread because their statistics prove no row matches the filter.
  int64_t row_groups_pruned = 0;
  /// Wall seconds the consumer spent blocked waiting for its next batch (the data stall).
  double wait_seconds = 0;
  /// The disk cache: lookups that found a sound entry or not, bytes read from and written
  /// to it, entries evicted, and damaged entries found (deleted and rebuilt).
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t cache_bytes_read = 0;
  int64_t cache_bytes_written = 0;
  int64_t cache_evictions = 0;
  int64_t cache_corrupt = 0;
  /// Running digest of the rows delivered, in order (each row named by its index in dataset
  /// order): two runs that delivered the same rows in the same order have the same digest.
  std::string delivered_digest;
};

/// Lock-free counters shared by the workers and the consumer.
class Stats {
 public:
  using Clock = std::chrono::steady_clock;

  void AddRead(int64_t bytes, Clock::duration elapsed);
  void AddRequest(int64_t bytes);
  void AddCacheHit(int64_t bytes);
  void AddCacheMiss() { cache_misses_.fetch_add(1, std::memory_order_relaxed); }
  void AddCacheWrite(int64_t bytes);
  void AddCacheEviction() { cache_evictions_.fetch_add(1, std::memory_order_relaxed); }
  void AddCacheCorrupt() { cache_corrupt_.fetch_add(1, std::memory_order_relaxed); }
  /// The counter the storage layer bumps on every retry.
  const std::shared_ptr<std::atomic<int64_t>>& retry_counter() const { return retries_; }
  void AddDecode(Clock::duration elapsed);
  void AddAssemble(Clock::duration elapsed);
  void AddTransform(Clock::duration elapsed);
  void SetPruned(int64_t row_groups) { pruned_.store(row_groups, std::memory_order_relaxed); }
  void AddWait(Clock::duration elapsed);
  /// Counts a delivered batch and folds its rows' hash into the running digest.
  void AddDelivered(int64_t rows, uint64_t rows_hash);
  /// Continues the running digest from a saved one (resume); false if `hex` is malformed.
  bool RestoreDigest(const std::string& hex);
  StatsSnapshot Snapshot() const;

 private:
  std::atomic<int64_t> rows_{0}, batches_{0}, units_read_{0}, bytes_read_{0};
  std::atomic<int64_t> read_ns_{0}, decode_ns_{0}, assemble_ns_{0}, wait_ns_{0}, transform_ns_{0};
  std::atomic<int64_t> pruned_{0};
  std::atomic<int64_t> requests_{0}, bytes_fetched_{0};
  std::atomic<int64_t> cache_hits_{0}, cache_misses_{0}, cache_bytes_read_{0},
      cache_bytes_written_{0}, cache_evictions_{0}, cache_corrupt_{0};
  std::shared_ptr<std::atomic<int64_t>> retries_ = std::make_shared<std::atomic<int64_t>>(0);
  mutable std::mutex digest_mutex_;
  Digest delivered_;
};

}  // namespace stoker
