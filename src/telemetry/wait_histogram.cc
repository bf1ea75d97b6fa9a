// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/wait_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace stoker {

double WaitHistogram::Bound(int i) {
  if (i >= kBuckets - 1) return std::numeric_limits<double>::infinity();
  return 1e-6 * std::exp2(static_cast<double>(i) / kBucketsPerDoubling);
}

void WaitHistogram::Record(std::chrono::nanoseconds wait) {
  const int64_t ns = std::max<int64_t>(wait.count(), 0);
  // The smallest i with ns <= 1000 * 2^(i/4): i = ceil(4 * log2(ns / 1000)).
  int i = 0;
  if (ns > 1000) {
    i = static_cast<int>(std::ceil(kBucketsPerDoubling * std::log2(static_cast<double>(ns) / 1e3)));
    i = std::min(i, kBuckets - 1);
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  int64_t seen = max_ns_.load(std::memory_order_relaxed);
  while (ns > seen && !max_ns_.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
}

WaitSummary WaitHistogram::Summary() const {
  WaitSummary s;
  s.counts.reserve(kBuckets);
  s.bounds.reserve(kBuckets);
  for (int i = 0; i < kBuckets; ++i) {
    s.counts.push_back(counts_[i].load(std::memory_order_relaxed));
    s.bounds.push_back(Bound(i));
    s.count += s.counts.back();
  }
  s.max_seconds = static_cast<double>(max_ns_.load(std::memory_order_relaxed)) * 1e-9;
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9;
  // A quantile is reported as the upper bound of the bucket it falls in, never above the max.
  auto quantile = [&](double q) {
    if (s.count == 0) return 0.0;
    const auto rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(s.count)));
    int64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
      seen += s.counts[i];
      if (seen >= rank) return std::min(Bound(i), s.max_seconds);
    }
    return s.max_seconds;
  };
  s.p50_seconds = quantile(0.50);
  s.p90_seconds = quantile(0.90);
  s.p99_seconds = quantile(0.99);
  return s;
}

}  // namespace stoker
