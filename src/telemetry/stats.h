// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>

#include "stoker/stats.h"
#include "telemetry/trace.h"
#include "telemetry/wait_histogram.h"
#include "util/digest.h"
#include "util/thread_annotations.h"

namespace stoker {

/// Lock-free counters shared by the workers and the consumer, and, under their own lock, the
/// digest of the rows delivered and the last deliveries' times (for the recent rate).
class Stats {
 public:
  using Clock = std::chrono::steady_clock;

  void AddRead(int64_t bytes, Clock::duration elapsed);
  void AddRequest(int64_t bytes);
  /// A request for metadata (a footer, the summary file) and the bytes it fetched.
  void AddMetadataRequest(int64_t bytes);
  /// Wall time the loader spent listing the sources and reading their metadata.
  void AddMetadataTime(Clock::duration elapsed);
  /// How the manifest was built: 1 from a summary file, 0 from every footer; and the summary
  /// files found stale and set aside (index="fallback").
  void SetIndexUse(int64_t used, int64_t stale) {
    index_used_.store(used, std::memory_order_relaxed);
    index_stale_.store(stale, std::memory_order_relaxed);
  }
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
  /// `delta` units more (or fewer) in flight: scheduled and not yet finished.
  void AddUnitsInFlight(int64_t delta) EXCLUDES(flight_mutex_);
  void SetPruned(int64_t row_groups) { pruned_.store(row_groups, std::memory_order_relaxed); }
  /// Rows of a decoded unit that the row filter dropped.
  void AddFiltered(int64_t rows) { rows_filtered_.fetch_add(rows, std::memory_order_relaxed); }
  /// Files the filter's conditions on partition columns ruled out before their footers were
  /// read, and files whose footers were read from the file itself.
  void SetFilesPruned(int64_t files) { files_pruned_.store(files, std::memory_order_relaxed); }
  void SetFilesOpened(int64_t files) { files_opened_.store(files, std::memory_order_relaxed); }
  void AddWait(Clock::duration elapsed);
  /// The whole wait for one delivered batch (its WaitReady slices and Next together).
  void AddBatchWait(Clock::duration elapsed) { wait_per_batch_.Record(elapsed); }
  /// Planned rows a batch left out because their units were skipped (on_error="skip").
  void AddSkippedRows(int64_t rows) { skipped_rows_.fetch_add(rows, std::memory_order_relaxed); }
  /// Counts a delivered batch and folds its rows' hash into the running digest.
  void AddDelivered(int64_t rows, uint64_t rows_hash) EXCLUDES(digest_mutex_);
  /// Continues the running digest from a saved one (resume); false if `hex` is malformed.
  bool RestoreDigest(const std::string& hex) EXCLUDES(digest_mutex_);
  StatsSnapshot Snapshot() const EXCLUDES(digest_mutex_);

  /// Keeps the last `capacity` spans of work in a TraceRing; call before any work starts.
  void EnableTrace(size_t capacity) { trace_ = std::make_unique<TraceRing>(capacity); }
  /// The ring, or nullptr when tracing is off.
  const TraceRing* trace() const { return trace_.get(); }
  /// Records a span when tracing is on (a unit's: a = file, b = row group; a batch's: a).
  void Trace(TraceStage stage, Clock::time_point start, Clock::time_point end, int64_t a,
             int64_t b = -1) {
    if (trace_ != nullptr) trace_->Record(stage, start, end, a, b);
  }

 private:
  double RecentRate() const REQUIRES(digest_mutex_);

  std::atomic<int64_t> rows_{0}, batches_{0}, units_read_{0}, bytes_read_{0};
  std::atomic<int64_t> read_ns_{0}, decode_ns_{0}, assemble_ns_{0}, wait_ns_{0}, transform_ns_{0};
  std::atomic<int64_t> pruned_{0}, skipped_rows_{0}, rows_filtered_{0};
  std::atomic<int64_t> requests_{0}, bytes_fetched_{0};
  std::atomic<int64_t> metadata_requests_{0}, metadata_bytes_{0}, metadata_ns_{0};
  std::atomic<int64_t> index_used_{0}, index_stale_{0};
  std::atomic<int64_t> files_pruned_{0}, files_opened_{0};
  std::atomic<int64_t> cache_hits_{0}, cache_misses_{0}, cache_bytes_read_{0},
      cache_bytes_written_{0}, cache_evictions_{0}, cache_corrupt_{0};
  std::shared_ptr<std::atomic<int64_t>> retries_ = std::make_shared<std::atomic<int64_t>>(0);
  WaitHistogram wait_per_batch_;
  // Units in flight now, the most at once, and their integral over the time any was (the
  // time-weighted mean's numerator and denominator), up to flight_since_.
  mutable Mutex flight_mutex_;
  int64_t in_flight_ GUARDED_BY(flight_mutex_) = 0;
  int64_t in_flight_peak_ GUARDED_BY(flight_mutex_) = 0;
  double in_flight_unit_seconds_ GUARDED_BY(flight_mutex_) = 0;
  double in_flight_busy_seconds_ GUARDED_BY(flight_mutex_) = 0;
  Clock::time_point flight_since_ GUARDED_BY(flight_mutex_);
  std::unique_ptr<TraceRing> trace_;
  mutable Mutex digest_mutex_;
  Digest delivered_ GUARDED_BY(digest_mutex_);
  // The last deliveries (time, rows), oldest first once full, for the recent rate.
  struct Delivery {
    Clock::time_point time;
    int64_t rows = 0;
  };
  static constexpr size_t kRecentDeliveries = 256;
  std::array<Delivery, kRecentDeliveries> recent_ GUARDED_BY(digest_mutex_){};
  size_t recent_next_ GUARDED_BY(digest_mutex_) = 0;
  size_t recent_size_ GUARDED_BY(digest_mutex_) = 0;
};

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) from construction to destruction,
/// added to `*ns`: what a stream's own work costs, whatever else shares the cores.
class ThreadCpuTimer {
 public:
  explicit ThreadCpuTimer(std::atomic<int64_t>* ns) : ns_(ns), start_(Now()) {}
  ~ThreadCpuTimer() { ns_->fetch_add(Now() - start_, std::memory_order_relaxed); }
  ThreadCpuTimer(const ThreadCpuTimer&) = delete;
  ThreadCpuTimer& operator=(const ThreadCpuTimer&) = delete;

 private:
  static int64_t Now() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
  }
  std::atomic<int64_t>* ns_;
  int64_t start_;
};

}  // namespace stoker
