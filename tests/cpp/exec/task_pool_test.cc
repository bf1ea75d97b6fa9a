// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/task_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace stoker {
namespace {

using namespace std::chrono_literals;

// A latch a task can wait on, opened by the test: holds a worker busy until the test is ready.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [this] { return open_; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// Counts finished tasks; Await() returns once `n` have finished (false after a generous
// deadline, so a lost task fails the test instead of hanging it).
class Counter {
 public:
  // Notifies under the lock: a waiter that returns may destroy the Counter at once, so the
  // notification must not come after the unlock (ThreadSanitizer reported that race).
  void Add() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    changed_.notify_all();
  }
  bool Await(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 30s, [&] { return count_ >= n; });
  }
  int count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int count_ = 0;
};

// Occupies a worker until `gate` opens; `started` counts it once it runs.
arrow::Status BlockTheWorker(TaskPool* pool, Gate* gate, Counter* started) {
  return pool->Submit(
      [gate, started] {
        started->Add();
        gate->Wait();
      },
      /*urgent=*/false);
}

TEST(TaskPoolTest, RunsEverythingSubmitted) {
  constexpr int kTasks = 1000;
  TaskPool pool(4);
  Counter done;
  std::vector<std::atomic<int>> runs(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(pool.Submit(
                        [&, i] {
                          runs[i].fetch_add(1);
                          done.Add();
                        },
                        /*urgent=*/i % 3 == 0)
                    .ok());
  }
  ASSERT_TRUE(done.Await(kTasks));
  pool.Shutdown();
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(runs[i].load(), 1) << "task " << i;
}

TEST(TaskPoolTest, ParallelForRunsEachIndexOnceOnTheWorkersAndWaits) {
  constexpr int64_t kIndices = 1001;
  TaskPool pool(3);
  std::vector<std::atomic<int>> runs(kIndices);
  std::atomic<int> on_caller{0};
  const auto caller = std::this_thread::get_id();
  pool.ParallelFor(kIndices, [&](int64_t i) {
    runs[i].fetch_add(1);
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
  });
  // Returned only once every index ran (no wait here), each once, none on the caller.
  for (int64_t i = 0; i < kIndices; ++i) EXPECT_EQ(runs[i].load(), 1) << "index " << i;
  EXPECT_EQ(on_caller.load(), 0);
  // A pool without workers, or shut down, runs them on the caller.
  for (const int workers : {0, 2}) {
    TaskPool other(workers);
    other.Shutdown();
    std::vector<int> inline_runs(10, 0);
    other.ParallelFor(10, [&](int64_t i) {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      ++inline_runs[i];
    });
    EXPECT_EQ(inline_runs, std::vector<int>(10, 1)) << workers << " workers";
  }
}

// The controller's lever: only the first `limit` workers take tasks, raised and lowered while
// tasks queue, with no task lost or stuck (a lost wakeup would hang Await).
TEST(TaskPoolTest, ActiveLimitBoundsTheWorkersAtWorkAndLosesNoTask) {
  TaskPool pool(4);
  std::atomic<int> running{0}, peak{0};
  std::atomic<int> limit{1};
  std::atomic<bool> over{false};
  Counter done;
  auto task = [&] {
    const int now = running.fetch_add(1) + 1;
    if (now > limit.load()) over = true;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(1ms);
    running.fetch_sub(1);
    done.Add();
  };
  pool.SetActiveLimit(1);
  EXPECT_EQ(pool.active_limit(), 1);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit(task, i % 2 == 0).ok());
  ASSERT_TRUE(done.Await(50));
  EXPECT_FALSE(over.load());
  EXPECT_EQ(peak.load(), 1);
  // Raised with tasks queued behind one busy worker: the others are let in and all run.
  Gate gate;
  Counter started;
  ASSERT_TRUE(BlockTheWorker(&pool, &gate, &started).ok());
  ASSERT_TRUE(started.Await(1));
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(pool.Submit(task, false).ok());
  limit = 4;
  pool.SetActiveLimit(4);
  ASSERT_TRUE(done.Await(100));  // the first worker is still held by the gate
  gate.Open();
  // Lowered again, past the pool's size and below one: clamped to 1 .. 4.
  pool.SetActiveLimit(0);
  EXPECT_EQ(pool.active_limit(), 1);
  pool.SetActiveLimit(99);
  EXPECT_EQ(pool.active_limit(), 4);
  EXPECT_FALSE(over.load());
  // Busy time is counted: 100 tasks of at least 1 ms each.
  EXPECT_GE(pool.busy_nanos(), 100'000'000);
  pool.Shutdown();
}

TEST(TaskPoolTest, UrgentTasksRunFirstEachQueueInOrder) {
  TaskPool pool(1);
  Gate gate;
  Counter started;
  ASSERT_TRUE(BlockTheWorker(&pool, &gate, &started).ok());
  ASSERT_TRUE(started.Await(1));  // the only worker is busy: everything below queues

  std::mutex order_mutex;
  std::vector<std::string> order;
  Counter done;
  auto record = [&](std::string name) {
    return [&, name] {
      {
        std::lock_guard<std::mutex> lock(order_mutex);
        order.push_back(name);
      }
      done.Add();
    };
  };
  ASSERT_TRUE(pool.Submit(record("normal 1"), /*urgent=*/false).ok());
  ASSERT_TRUE(pool.Submit(record("urgent 1"), /*urgent=*/true).ok());
  ASSERT_TRUE(pool.Submit(record("normal 2"), /*urgent=*/false).ok());
  ASSERT_TRUE(pool.Submit(record("urgent 2"), /*urgent=*/true).ok());
  gate.Open();
  ASSERT_TRUE(done.Await(4));
  EXPECT_EQ(order, (std::vector<std::string>{"urgent 1", "urgent 2", "normal 1", "normal 2"}));
}

TEST(TaskPoolTest, ShutdownJoinsRunningTasks) {
  TaskPool pool(2);
  Counter started;
  std::atomic<bool> finished{false};
  ASSERT_TRUE(pool.Submit(
                      [&] {
                        started.Add();
                        std::this_thread::sleep_for(200ms);
                        finished = true;
                      },
                      /*urgent=*/false)
                  .ok());
  ASSERT_TRUE(started.Await(1));
  pool.Shutdown();
  EXPECT_TRUE(finished.load()) << "Shutdown returned before a running task finished";
}

TEST(TaskPoolTest, ShutdownDropsQueuedTasks) {
  TaskPool pool(1);
  Gate gate;
  Counter started;
  ASSERT_TRUE(BlockTheWorker(&pool, &gate, &started).ok());
  ASSERT_TRUE(started.Await(1));
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(pool.Submit([&] { ran.fetch_add(1); }, /*urgent=*/i % 2 == 0).ok());
  }
  std::thread stopper([&] { pool.Shutdown(); });
  // Shutdown has dropped the queue once the pool refuses new tasks (one critical section).
  while (pool.Submit([] {}, /*urgent=*/false).ok()) std::this_thread::sleep_for(1ms);
  gate.Open();
  stopper.join();
  EXPECT_EQ(ran.load(), 0);
}

TEST(TaskPoolTest, SubmitAfterShutdownIsReported) {
  TaskPool pool(2);
  pool.Shutdown();
  pool.Shutdown();  // idempotent
  bool ran = false;
  const auto status = pool.Submit([&] { ran = true; }, /*urgent=*/true);
  EXPECT_TRUE(status.IsCancelled()) << status.ToString();
  EXPECT_TRUE(pool.Submit([&] { ran = true; }, /*urgent=*/false).IsCancelled());
  EXPECT_FALSE(ran);
}

TEST(TaskGroupTest, GroupsShareThePoolsWorkers) {
  auto pool = std::make_shared<TaskPool>(2);
  TaskGroup a(pool), b(pool);
  Counter done;
  std::atomic<int> ran_a{0}, ran_b{0};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(a.Submit(
                     [&] {
                       ran_a.fetch_add(1);
                       done.Add();
                     },
                     /*urgent=*/i % 2 == 0)
                    .ok());
    ASSERT_TRUE(b.Submit(
                     [&] {
                       ran_b.fetch_add(1);
                       done.Add();
                     },
                     /*urgent=*/false)
                    .ok());
  }
  ASSERT_TRUE(done.Await(200));
  EXPECT_EQ(ran_a.load(), 100);
  EXPECT_EQ(ran_b.load(), 100);
}

TEST(TaskGroupTest, CloseDropsItsQueuedTasksWaitsForItsRunningOneAndLeavesOthers) {
  auto pool = std::make_shared<TaskPool>(1);
  TaskGroup closed(pool), other(pool);
  Gate gate;
  Counter started;
  std::atomic<bool> running_finished{false};
  ASSERT_TRUE(closed
                  .Submit(
                      [&] {
                        started.Add();
                        gate.Wait();
                        std::this_thread::sleep_for(50ms);
                        running_finished = true;
                      },
                      /*urgent=*/false)
                  .ok());
  ASSERT_TRUE(started.Await(1));  // the only worker runs the closed group's task
  std::atomic<int> ran_closed{0};
  Counter ran_other;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(closed.Submit([&] { ran_closed.fetch_add(1); }, /*urgent=*/i % 2 == 0).ok());
    ASSERT_TRUE(other.Submit([&] { ran_other.Add(); }, /*urgent=*/i % 2 == 1).ok());
  }
  std::thread closer([&] { closed.Close(); });
  // Close has dropped the group's queue once the group refuses new tasks.
  while (closed.Submit([] {}, /*urgent=*/false).ok()) std::this_thread::sleep_for(1ms);
  gate.Open();
  closer.join();
  EXPECT_TRUE(running_finished.load()) << "Close returned before its running task finished";
  ASSERT_TRUE(ran_other.Await(5)) << "the other group's tasks did not run";
  EXPECT_EQ(ran_closed.load(), 0);
  EXPECT_TRUE(closed.Submit([] {}, /*urgent=*/true).IsCancelled());
  EXPECT_TRUE(other.Submit([] {}, /*urgent=*/true).ok());
}

TEST(TaskGroupTest, RefusesTasksOnceThePoolIsShutDown) {
  auto pool = std::make_shared<TaskPool>(1);
  TaskGroup group(pool);
  pool->Shutdown();
  EXPECT_TRUE(group.Submit([] {}, /*urgent=*/false).IsCancelled());
  group.Close();
  group.Close();  // idempotent
}

}  // namespace
}  // namespace stoker
