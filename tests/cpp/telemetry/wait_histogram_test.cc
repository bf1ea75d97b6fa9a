// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/wait_histogram.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

namespace stoker {
namespace {

using std::chrono::microseconds;
using std::chrono::nanoseconds;

TEST(WaitHistogramTest, EmptyIsAllZero) {
  const auto s = WaitHistogram().Summary();
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.p50_seconds, 0);
  EXPECT_EQ(s.max_seconds, 0);
  EXPECT_EQ(s.counts.size(), static_cast<size_t>(WaitHistogram::kBuckets));
  EXPECT_TRUE(std::isinf(s.bounds.back()));
}

TEST(WaitHistogramTest, EachWaitLandsInTheBucketWhoseBoundsHoldIt) {
  for (int64_t ns : {0L, 999L, 1000L, 1001L, 1500L, 123456L, 7000000L, 999000000000L}) {
    WaitHistogram h;
    h.Record(nanoseconds(ns));
    const auto s = h.Summary();
    int bucket = -1;
    for (int i = 0; i < WaitHistogram::kBuckets; ++i) {
      if (s.counts[i] == 1) bucket = i;
    }
    ASSERT_GE(bucket, 0);
    const double seconds = static_cast<double>(ns) * 1e-9;
    EXPECT_LE(seconds, s.bounds[bucket] * (1 + 1e-12)) << ns;
    if (bucket > 0) EXPECT_GT(seconds, s.bounds[bucket - 1] * (1 - 1e-12)) << ns;
    EXPECT_DOUBLE_EQ(s.max_seconds, seconds);
    EXPECT_DOUBLE_EQ(s.sum_seconds, seconds);
  }
}

// Quantiles come within a bucket's width (2^(1/4), 19%) above the exact order statistic.
TEST(WaitHistogramTest, QuantilesWithinABucketOfTheExactValues) {
  WaitHistogram h;
  for (int i = 1; i <= 1000; ++i) h.Record(microseconds(i * 10));  // 10 µs .. 10 ms
  const auto s = h.Summary();
  EXPECT_EQ(s.count, 1000);
  for (const auto& [got, exact] :
       {std::pair{s.p50_seconds, 500 * 10e-6}, std::pair{s.p90_seconds, 900 * 10e-6},
        std::pair{s.p99_seconds, 990 * 10e-6}}) {
    EXPECT_GE(got, exact * (1 - 1e-9));
    EXPECT_LE(got, exact * std::exp2(0.25));
  }
  EXPECT_DOUBLE_EQ(s.max_seconds, 0.01);
  EXPECT_NEAR(s.sum_seconds, 10e-6 * 1000 * 1001 / 2, 1e-9);
}

}  // namespace
}  // namespace stoker
