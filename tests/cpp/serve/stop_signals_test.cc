// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "serve/stop_signals.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

namespace stoker {
namespace {

std::atomic<int> g_previous_calls{0};
extern "C" void CountingHandler(int) { g_previous_calls.fetch_add(1); }

// Waits up to 5 s for `value` to reach `want`.
bool WaitFor(const std::atomic<int>& value, int want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (value.load() != want) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(StopSignalsTest, ASignalCallsBackOnItsOwnThreadOnceAndTheOldHandlersComeBack) {
  struct sigaction counting {};
  counting.sa_handler = CountingHandler;
  sigemptyset(&counting.sa_mask);
  struct sigaction saved_term {
  }, saved_int{};
  ASSERT_EQ(sigaction(SIGTERM, &counting, &saved_term), 0);
  ASSERT_EQ(sigaction(SIGINT, &counting, &saved_int), 0);
  std::atomic<int> calls{0}, got{0};
  std::thread::id caller;
  {
    StopSignals signals;
    ASSERT_TRUE(signals
                    .Install([&](int signum) {
                      caller = std::this_thread::get_id();
                      got.store(signum);
                      calls.fetch_add(1);
                    })
                    .ok());
    // Another owner in the same process is refused by name; the first keeps the signals.
    StopSignals second;
    const arrow::Status refused = second.Install([](int) {});
    EXPECT_TRUE(refused.IsInvalid()) << refused.ToString();
    EXPECT_NE(refused.message().find("another server"), std::string::npos);

    ASSERT_EQ(raise(SIGTERM), 0);
    ASSERT_TRUE(WaitFor(calls, 1));
    EXPECT_EQ(got.load(), SIGTERM);
    EXPECT_NE(caller, std::this_thread::get_id());  // not in the handler, not the raiser
    ASSERT_EQ(raise(SIGINT), 0);  // after the first: the watcher has returned, no call
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(calls.load(), 1);
    EXPECT_EQ(g_previous_calls.load(), 0);
  }
  // Destroyed: the handlers from before are back.
  ASSERT_EQ(raise(SIGTERM), 0);
  ASSERT_EQ(raise(SIGINT), 0);
  EXPECT_TRUE(WaitFor(g_previous_calls, 2));
  EXPECT_EQ(calls.load(), 1);
  sigaction(SIGTERM, &saved_term, nullptr);
  sigaction(SIGINT, &saved_int, nullptr);
}

TEST(StopSignalsTest, DestroyedWithNoSignalItsWatcherEndsAndANewOneMayOwnThem) {
  std::atomic<int> calls{0};
  {
    StopSignals signals;
    ASSERT_TRUE(signals.Install([&](int) { calls.fetch_add(1); }).ok());
  }
  StopSignals next;
  EXPECT_TRUE(next.Install([&](int) { calls.fetch_add(1); }).ok());
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
}  // namespace stoker
