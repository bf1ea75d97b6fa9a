// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/stats.h"

#include <algorithm>

namespace stoker {

namespace {

int64_t Nanos(Stats::Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

double Seconds(const std::atomic<int64_t>& ns) {
  return static_cast<double>(ns.load(std::memory_order_relaxed)) * 1e-9;
}

}  // namespace

void Stats::AddRead(int64_t bytes, Clock::duration elapsed) {
  units_read_.fetch_add(1, std::memory_order_relaxed);
  bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
  read_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddRequest(int64_t bytes) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  bytes_fetched_.fetch_add(bytes, std::memory_order_relaxed);
}

void Stats::AddMetadataRequest(int64_t bytes) {
  metadata_requests_.fetch_add(1, std::memory_order_relaxed);
  metadata_bytes_.fetch_add(bytes, std::memory_order_relaxed);
}

void Stats::AddMetadataTime(Clock::duration elapsed) {
  metadata_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddCacheHit(int64_t bytes) {
  cache_hits_.fetch_add(1, std::memory_order_relaxed);
  cache_bytes_read_.fetch_add(bytes, std::memory_order_relaxed);
}

void Stats::AddCacheWrite(int64_t bytes) {
  cache_bytes_written_.fetch_add(bytes, std::memory_order_relaxed);
}

void Stats::AddDecode(Clock::duration elapsed) {
  decode_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddAssemble(Clock::duration elapsed) {
  assemble_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddTransform(Clock::duration elapsed) {
  transform_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddUnitsInFlight(int64_t delta) {
  if (delta == 0) return;
  const auto now = Clock::now();
  int64_t count = 0;
  {
    MutexLock lock(flight_mutex_);
    if (in_flight_ > 0) {
      const double elapsed = std::chrono::duration<double>(now - flight_since_).count();
      in_flight_unit_seconds_ += static_cast<double>(in_flight_) * elapsed;
      in_flight_busy_seconds_ += elapsed;
    }
    flight_since_ = now;
    in_flight_ += delta;
    in_flight_peak_ = std::max(in_flight_peak_, in_flight_);
    count = in_flight_;
  }
  Trace(TraceStage::kInFlight, now, now, count);
}

void Stats::AddWait(Clock::duration elapsed) {
  wait_ns_.fetch_add(Nanos(elapsed), std::memory_order_relaxed);
}

void Stats::AddDelivered(int64_t rows, uint64_t rows_hash) {
  rows_.fetch_add(rows, std::memory_order_relaxed);
  batches_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(digest_mutex_);
  delivered_.Add(rows_hash);
  recent_[recent_next_] = {Clock::now(), rows};
  recent_next_ = (recent_next_ + 1) % kRecentDeliveries;
  recent_size_ = std::min(recent_size_ + 1, kRecentDeliveries);
}

double Stats::RecentRate() const {
  // The rows of the deliveries after the oldest one within the last 10 s, over the time
  // since that one.
  const auto now = Clock::now();
  const auto horizon = now - std::chrono::seconds(10);
  Clock::time_point first;
  int64_t rows = 0;
  int counted = 0;
  for (size_t k = 0; k < recent_size_; ++k) {
    const auto& d =
        recent_[(recent_next_ + kRecentDeliveries - recent_size_ + k) % kRecentDeliveries];
    if (d.time < horizon) continue;
    if (counted++ == 0) {
      first = d.time;
    } else {
      rows += d.rows;
    }
  }
  const double seconds = std::chrono::duration<double>(now - first).count();
  return counted < 2 || seconds <= 0 ? 0.0 : static_cast<double>(rows) / seconds;
}

bool Stats::RestoreDigest(const std::string& hex) {
  MutexLock lock(digest_mutex_);
  return Digest::FromHex(hex, &delivered_);
}

StatsSnapshot Stats::Snapshot() const {
  StatsSnapshot s;
  s.rows = rows_.load(std::memory_order_relaxed);
  s.batches = batches_.load(std::memory_order_relaxed);
  s.units_read = units_read_.load(std::memory_order_relaxed);
  s.bytes_read = bytes_read_.load(std::memory_order_relaxed);
  s.read_seconds = Seconds(read_ns_);
  s.decode_seconds = Seconds(decode_ns_);
  s.assemble_seconds = Seconds(assemble_ns_);
  s.wait_seconds = Seconds(wait_ns_);
  s.transform_seconds = Seconds(transform_ns_);
  s.row_groups_pruned = pruned_.load(std::memory_order_relaxed);
  s.rows_filtered = rows_filtered_.load(std::memory_order_relaxed);
  s.requests = requests_.load(std::memory_order_relaxed);
  s.bytes_fetched = bytes_fetched_.load(std::memory_order_relaxed);
  s.retries = retries_->load(std::memory_order_relaxed);
  s.metadata_requests = metadata_requests_.load(std::memory_order_relaxed);
  s.metadata_bytes = metadata_bytes_.load(std::memory_order_relaxed);
  s.metadata_seconds = Seconds(metadata_ns_);
  s.index_used = index_used_.load(std::memory_order_relaxed);
  s.index_stale = index_stale_.load(std::memory_order_relaxed);
  s.files_pruned = files_pruned_.load(std::memory_order_relaxed);
  s.files_opened = files_opened_.load(std::memory_order_relaxed);
  s.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  s.cache_misses = cache_misses_.load(std::memory_order_relaxed);
  s.cache_bytes_read = cache_bytes_read_.load(std::memory_order_relaxed);
  s.cache_bytes_written = cache_bytes_written_.load(std::memory_order_relaxed);
  s.cache_evictions = cache_evictions_.load(std::memory_order_relaxed);
  s.cache_corrupt = cache_corrupt_.load(std::memory_order_relaxed);
  s.skipped_rows = skipped_rows_.load(std::memory_order_relaxed);
  s.wait_per_batch = wait_per_batch_.Summary();
  {
    MutexLock lock(flight_mutex_);
    double unit_seconds = in_flight_unit_seconds_;
    double busy_seconds = in_flight_busy_seconds_;
    if (in_flight_ > 0) {  // the open stretch, up to now
      const double open = std::chrono::duration<double>(Clock::now() - flight_since_).count();
      unit_seconds += static_cast<double>(in_flight_) * open;
      busy_seconds += open;
    }
    s.units_in_flight_peak = in_flight_peak_;
    s.units_in_flight_mean = busy_seconds > 0 ? unit_seconds / busy_seconds : 0.0;
  }
  MutexLock lock(digest_mutex_);
  s.delivered_digest = delivered_.Hex();
  s.recent_rows_per_second = RecentRate();
  return s;
}

}  // namespace stoker
