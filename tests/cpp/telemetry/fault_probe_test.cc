// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/fault_probe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace stoker {
namespace {

// Threads of this process named `name` (/proc/self/task/*/comm).
int ThreadsNamed(const std::string& name) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++count;
  }
  return count;
}

// ThreadsNamed(name) once it is `want`, or what it is after 2 s: a joined thread leaves
// /proc/self/task a moment after pthread_join returns (the kernel wakes the joiner when the
// thread clears its id, before it reaps the task), which a loaded machine stretches.
int ThreadsNamedSettled(const std::string& name, int want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int count = ThreadsNamed(name);
  while (count != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    count = ThreadsNamed(name);
  }
  return count;
}

TEST(FaultProbeTest, TimesEveryTouchAndEveryRound) {
  FaultProbeOptions options;
  options.pages_per_round = 4;
  options.interval = std::chrono::microseconds(200);
  auto probe = FaultProbe::Start(options).ValueOrDie();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ThreadsNamed(FaultProbe::kThreadName), 1);
  const FaultProbeSummary summary = probe->Stop();
  EXPECT_EQ(ThreadsNamedSettled(FaultProbe::kThreadName, 0), 0);
  ASSERT_GT(summary.maps.count, 0);
  EXPECT_EQ(summary.touches.count, 4 * summary.maps.count);
  for (const ProbeTimings& t : {summary.touches, summary.maps}) {
    EXPECT_GT(t.p50_us, 0);
    EXPECT_LE(t.p50_us, t.p99_us);
    EXPECT_LE(t.p99_us, t.max_us);
    EXPECT_LE(t.slow_blocked, t.slow);
    EXPECT_LE(t.slow, t.count);
  }
  EXPECT_GE(summary.seconds, 0.1);
}

TEST(FaultProbeTest, StopTwiceGivesTheSameFigures) {
  auto probe = FaultProbe::Start(FaultProbeOptions{}).ValueOrDie();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const FaultProbeSummary first = probe->Stop();
  const FaultProbeSummary second = probe->Stop();
  EXPECT_EQ(first.touches.count, second.touches.count);
  EXPECT_EQ(first.maps.max_us, second.maps.max_us);
}

TEST(FaultProbeTest, KeepsAtMostMaxSamplesButCountsAll) {
  FaultProbeOptions options;
  options.interval = std::chrono::microseconds(0);
  options.max_samples = 3;
  auto probe = FaultProbe::Start(options).ValueOrDie();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const FaultProbeSummary summary = probe->Stop();
  EXPECT_GT(summary.touches.count, 3);
  EXPECT_LE(summary.touches.p99_us, summary.touches.max_us);
}

TEST(FaultProbeTest, RejectsOptionsOutOfRange) {
  FaultProbeOptions options;
  options.pages_per_round = 0;
  EXPECT_TRUE(FaultProbe::Start(options).status().IsInvalid());
  options = FaultProbeOptions{};
  options.max_samples = 0;
  const auto status = FaultProbe::Start(options).status();
  ASSERT_TRUE(status.IsInvalid());
  EXPECT_NE(status.message().find("max_samples"), std::string::npos);
}

}  // namespace
}  // namespace stoker
