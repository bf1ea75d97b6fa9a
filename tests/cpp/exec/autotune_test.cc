// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/autotune.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>

namespace stoker {
namespace {

using namespace std::chrono_literals;

constexpr double kTarget = 0.01;

std::shared_ptr<TuneState> State(TuneBounds bounds, TuneSetting start, uint64_t random_moves = 0) {
  AutotuneOptions options;
  options.target_stall = kTarget;
  options.window_batches = 4;
  options.window_seconds = 0;
  SetRandomMoves(&options, random_moves);
  return std::make_shared<TuneState>(options, bounds, start);
}

TuneBounds Bounds(int max_threads, int max_prefetch, bool threads = true, bool prefetch = true) {
  TuneBounds bounds;
  bounds.max_threads = max_threads;
  bounds.max_prefetch = max_prefetch;
  bounds.tune_threads = threads;
  bounds.tune_prefetch = prefetch;
  return bounds;
}

// Feeds `windows` windows of the same figures; returns the decisions made.
std::vector<TuneDecision> Feed(Autotuner* tuner, int windows, double stall, double busy) {
  std::vector<TuneDecision> made;
  for (int i = 0; i < windows; ++i) {
    if (auto decision = tuner->Decide(stall, busy)) made.push_back(*decision);
  }
  return made;
}

TEST(AutotunerTest, ShrinksWorkersThenPrefetchWhileTheStallStaysLow) {
  auto tuner_state = State(Bounds(8, 16), {8, 16});
  Autotuner& tuner = tuner_state->tuner();
  // Two low windows move nothing; the third takes workers down by a quarter.
  EXPECT_TRUE(Feed(&tuner, 2, 0.0, 0.2).empty());
  auto moved = tuner.Decide(0.0, 0.2);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "threads down");
  EXPECT_EQ(moved->from, (TuneSetting{8, 16}));
  EXPECT_EQ(moved->to, (TuneSetting{6, 16}));
  // Kept low long enough, the setting ends at the floor: one worker, one batch ahead.
  Feed(&tuner, 200, 0.0, 0.2);
  EXPECT_EQ(tuner.setting(), (TuneSetting{1, 1}));
}

TEST(AutotunerTest, GrowsWorkersWhenTheyAreBusyAndPrefetchWhenTheyAreNot) {
  auto busy_state = State(Bounds(8, 16), {2, 2});
  Autotuner& busy = busy_state->tuner();
  double stall = 0.2;
  auto moved = busy.Decide(stall, 0.95);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "threads up");
  EXPECT_EQ(moved->to, (TuneSetting{3, 2}));
  // Each move cuts the stall: it stands, and the next window moves again, up to the bound.
  for (int window = 0; window < 6; ++window) busy.Decide(stall *= 0.85, 0.95);
  EXPECT_EQ(busy.setting().threads, 8);

  auto idle_state = State(Bounds(8, 16), {2, 2});
  Autotuner& idle = idle_state->tuner();
  moved = idle.Decide(0.2, 0.3);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "prefetch up");
  EXPECT_EQ(moved->to, (TuneSetting{2, 3}));
}

// Workers idle while the consumer waits, and more batches ahead did not help: the reads are
// what is waited for, so more row groups are read ahead (up to the I/O executor's reads);
// when all is quiet again the read-ahead comes down last, to none beyond the workers.
TEST(AutotunerTest, ReadsAheadWhenIdleWorkersWaitAndPrefetchDidNotHelp) {
  TuneBounds bounds = Bounds(2, 4);
  bounds.tune_read_ahead = true;
  bounds.max_read_ahead = 16;
  auto tuner_state = State(bounds, {2, 2, 0});
  Autotuner& tuner = tuner_state->tuner();
  auto moved = tuner.Decide(0.3, 0.2);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "prefetch up");
  moved = tuner.Decide(0.3, 0.2);  // not cut by a tenth: undone, prefetch held
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "undo prefetch up");
  moved = tuner.Decide(0.3, 0.2);
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->action, "read-ahead up");
  EXPECT_EQ(moved->to, (TuneSetting{2, 2, 1}));
  double stall = 0.3;
  for (int window = 0; window < 20; ++window) tuner.Decide(stall *= 0.85, 0.2);
  EXPECT_GT(tuner.setting().read_ahead, 1);
  EXPECT_LE(tuner.setting().read_ahead, 16);
  Feed(&tuner, 600, 0.0, 0.1);
  EXPECT_EQ(tuner.setting(), (TuneSetting{1, 1, 0}));
}

TEST(AutotunerTest, AtTheBoundsNothingMoves) {
  auto tuner_state = State(Bounds(4, 8), {4, 8});
  Autotuner& tuner = tuner_state->tuner();
  EXPECT_TRUE(Feed(&tuner, 20, 0.5, 1.0).empty());
  EXPECT_EQ(tuner.setting(), (TuneSetting{4, 8}));
}

TEST(AutotunerTest, AFixedKnobNeverMoves) {
  auto tuner_state = State(Bounds(8, 16, /*threads=*/false), {8, 16});
  Autotuner& tuner = tuner_state->tuner();
  for (const auto& d : Feed(&tuner, 100, 0.0, 0.1)) EXPECT_EQ(d.to.threads, 8) << d.action;
  EXPECT_EQ(tuner.setting(), (TuneSetting{8, 1}));
  auto fixed_prefetch_state = State(Bounds(8, 16, true, /*prefetch=*/false), {2, 16});
  Autotuner& fixed_prefetch = fixed_prefetch_state->tuner();
  for (const auto& d : Feed(&fixed_prefetch, 50, 0.3, 0.2)) {
    EXPECT_EQ(d.to.prefetch, 16) << d.action;
  }
}

TEST(AutotunerTest, AnUpMoveThatDoesNotCutTheStallIsUndoneAndHeld) {
  auto tuner_state = State(Bounds(8, 16), {2, 4});
  Autotuner& tuner = tuner_state->tuner();
  auto up = tuner.Decide(0.10, 0.9);
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(up->action, "threads up");
  // The stall did not fall by a tenth: back to 2 workers.
  auto undo = tuner.Decide(0.095, 0.9);
  ASSERT_TRUE(undo.has_value());
  EXPECT_EQ(undo->action, "undo threads up");
  EXPECT_EQ(tuner.setting(), (TuneSetting{2, 4}));
  // While held, a stall with busy workers moves prefetch instead of workers.
  auto next = tuner.Decide(0.10, 0.9);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->action, "prefetch up");
}

TEST(AutotunerTest, ADownMoveThatRaisesTheStallIsUndone) {
  auto tuner_state = State(Bounds(4, 8), {4, 8});
  Autotuner& tuner = tuner_state->tuner();
  Feed(&tuner, 3, 0.0, 0.3);
  ASSERT_EQ(tuner.setting(), (TuneSetting{3, 8}));
  auto undo = tuner.Decide(0.05, 0.9);
  ASSERT_TRUE(undo.has_value());
  EXPECT_EQ(undo->action, "undo threads down");
  EXPECT_EQ(tuner.setting(), (TuneSetting{4, 8}));
}

// A stall that sits exactly where one worker fewer is too few: each down-move is undone, and
// each hold is twice as long as the last, so the moves thin out instead of swinging.
TEST(AutotunerTest, DoesNotSwingBetweenTwoSettings) {
  auto tuner_state = State(Bounds(2, 4, true, false), {2, 4});
  Autotuner& tuner = tuner_state->tuner();
  int moves = 0;
  for (int window = 0; window < 2000; ++window) {
    const double stall = tuner.setting().threads == 2 ? 0.0 : 0.05;
    if (tuner.Decide(stall, 0.5).has_value()) ++moves;
  }
  // Holds of 4, 8, ... 256 windows: about 2 moves per doubling, then one pair per 256.
  EXPECT_LE(moves, 40);
  EXPECT_GE(moves, 10);  // it does keep trying: the stall might have changed
}

TEST(AutotunerTest, RandomMovesStayWithinTheBoundsAndAreRecorded) {
  auto state = State(Bounds(6, 12), {6, 12}, /*random_moves=*/42);
  auto now = TuneState::Clock::now();
  int moved = 0;
  for (int b = 0; b < 500; ++b) {
    if (auto setting = state->OnBatch(3, b == 0, now, 0ms, 0)) {
      ++moved;
      EXPECT_GE(setting->threads, 1);
      EXPECT_LE(setting->threads, 6);
      EXPECT_GE(setting->prefetch, 1);
      EXPECT_LE(setting->prefetch, 12);
    }
  }
  EXPECT_GT(moved, 400);  // a repeat of the same setting is the only non-move (1 in 72)
  EXPECT_EQ(state->decisions(), moved);
  EXPECT_EQ(state->recent().size(), TuneState::kKeptDecisions);
  EXPECT_EQ(state->recent().back().epoch, 3);
  EXPECT_EQ(state->current(), state->tuner().setting());
}

TEST(AutotunerTest, WindowsCountBatchesAndTimeAndSkipTheFirstBatch) {
  AutotuneOptions options;
  options.window_batches = 10;
  options.window_seconds = 1.0;
  auto state = std::make_shared<TuneState>(options, Bounds(4, 8), TuneSetting{4, 8});
  auto t = TuneState::Clock::now();
  // The first batch's long wait (the pipeline filling) is not counted.
  state->OnBatch(0, true, t, 5s, 0);
  for (int b = 0; b < 30; ++b) {
    t += 10ms;
    state->OnBatch(0, false, t, 0ms, 0);
  }
  EXPECT_EQ(state->windows(), 0);  // 30 batches but 0.3 s: no window closed yet
  // The next epoch's stream: a pause of 10 s between the streams, and its first batch, do
  // not count; the window goes on over the streams.
  t += 10s;
  state->OnBatch(1, true, t, 1s, 0);
  for (int b = 0; b < 69; ++b) {
    t += 10ms;
    state->OnBatch(1, false, t, 0ms, 0);
  }
  EXPECT_EQ(state->windows(), 0);  // 0.99 s of the window's 1 s
  t += 10ms;
  state->OnBatch(1, false, t, 0ms, 0);
  EXPECT_EQ(state->windows(), 1);
}

}  // namespace
}  // namespace stoker
