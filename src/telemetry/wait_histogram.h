// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "stoker/stats.h"

namespace stoker {

/// How long the consumer waited for each batch, in log-spaced buckets: lock-free to record,
/// a few hundred bytes, and quantiles within 19% (a bucket's width) of the true value.
///
/// Bucket i holds waits in (bound(i-1), bound(i)], bound(i) = 1 µs × 2^(i/4); the first
/// bucket holds everything up to 1 µs, the last everything above bound(kBuckets - 2)
/// (about 134 s).
class WaitHistogram {
 public:
  static constexpr int kBucketsPerDoubling = 4;
  static constexpr int kBuckets = 27 * kBucketsPerDoubling + 2;

  /// Upper bound of bucket i in seconds (infinity for the last).
  static double Bound(int i);

  void Record(std::chrono::nanoseconds wait);
  /// Counts per bucket, the number recorded, their sum and maximum, and p50/p90/p99.
  WaitSummary Summary() const;

 private:
  std::array<std::atomic<int64_t>, kBuckets> counts_{};
  std::atomic<int64_t> max_ns_{0};
  std::atomic<int64_t> sum_ns_{0};
};

}  // namespace stoker
