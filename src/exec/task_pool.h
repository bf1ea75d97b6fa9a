// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_set>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// A fixed set of owned worker threads running tasks from two FIFO queues, urgent first.
/// Every task belongs to a group (TaskGroup): one pool may serve several epochs at once (a
/// mixture's sources share one budget of workers), and each closes its own group alone.
/// The queues are bounded by the callers (each BatchStream admits at most its prefetch and
/// window limits). Tasks never wait on other tasks. Shutdown() drops queued tasks and joins.
class TaskPool {
 public:
  /// Every pool thread's name (at most 15 characters, the kernel's limit).
  static constexpr const char* kThreadName = "stoker-worker";

  explicit TaskPool(int num_threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Queues a task of the pool's own group; Cancelled (and the task is dropped unrun) once
  /// Shutdown() has begun.
  arrow::Status Submit(std::function<void()> task, bool urgent) EXCLUDES(mutex_);
  /// Runs body(0), ..., body(n - 1) on the pool's workers (urgent, a share of the indices
  /// each) and returns when all have run; inline when the pool has no worker or is shut
  /// down. Not to be called from a task of this pool.
  void ParallelFor(int64_t n, const std::function<void(int64_t)>& body) EXCLUDES(mutex_);
  /// Drops queued tasks, lets running ones finish, joins the threads. Idempotent; not to be
  /// called from a task, nor from two threads at once.
  void Shutdown() EXCLUDES(mutex_);

  /// Lets only the first `limit` workers (1 .. the pool's threads) take tasks; the others
  /// finish the task they run and then sleep until the limit takes them in again. How the
  /// controller (exec/autotune.h) moves the worker count without starting or joining
  /// threads. Every worker takes tasks until the first call.
  void SetActiveLimit(int limit) EXCLUDES(mutex_);
  int active_limit() const EXCLUDES(mutex_);
  int num_threads() const { return static_cast<int>(threads_.size()); }
  /// Nanoseconds the workers have spent running tasks, summed over workers, since the start.
  int64_t busy_nanos() const { return busy_ns_.load(std::memory_order_relaxed); }

 private:
  friend class TaskGroup;
  struct Task {
    std::function<void()> run;
    uint64_t group;
  };
  /// The group the pool's own Submit() uses; open until Shutdown().
  static constexpr uint64_t kOwnGroup = 0;

  uint64_t OpenGroup() EXCLUDES(mutex_);
  /// Whether worker `worker` may take a task now.
  bool HasWork(size_t worker) const REQUIRES(mutex_);
  arrow::Status Submit(Task task, bool urgent) EXCLUDES(mutex_);
  /// Refuses the group's new tasks, drops its queued ones, waits for its running ones.
  void CloseGroup(uint64_t group) EXCLUDES(mutex_);
  void Work(size_t worker) EXCLUDES(mutex_);

  mutable Mutex mutex_;
  /// Workers within the active limit wait here for tasks; those past it wait on parked_.
  CondVar wake_;
  CondVar parked_;
  /// Signalled when a task finishes while a CloseGroup waits (closing_ > 0).
  CondVar finished_;
  std::deque<Task> urgent_ GUARDED_BY(mutex_);
  std::deque<Task> normal_ GUARDED_BY(mutex_);
  /// Groups that may submit: kOwnGroup and every TaskGroup not closed yet.
  std::unordered_set<uint64_t> open_ GUARDED_BY(mutex_);
  uint64_t next_group_ GUARDED_BY(mutex_) = kOwnGroup + 1;
  /// The group of the task each worker runs; kNone when idle.
  std::vector<uint64_t> running_ GUARDED_BY(mutex_);
  int closing_ GUARDED_BY(mutex_) = 0;
  bool stopping_ GUARDED_BY(mutex_) = false;
  /// Workers at or past this index take no task (SetActiveLimit).
  size_t active_ GUARDED_BY(mutex_) = 0;
  std::atomic<int64_t> busy_ns_{0};
  /// Written by the constructor, joined by Shutdown(); never touched by the workers.
  std::vector<std::thread> threads_;
};

/// One client's tasks on a TaskPool that may be shared (each source engine of a mixture
/// submits to the mixture's one pool): Close() refuses the group's new tasks, drops its
/// queued ones and waits for its running ones, while other groups' tasks go on. Holds the
/// pool alive.
class TaskGroup {
 public:
  explicit TaskGroup(std::shared_ptr<TaskPool> pool);
  ~TaskGroup() { Close(); }
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;

  /// Queues a task; Cancelled (and the task is dropped unrun) once Close() has begun or the
  /// pool is shut down.
  arrow::Status Submit(std::function<void()> task, bool urgent);
  /// Idempotent; not to be called from a task of this pool.
  void Close();

 private:
  const std::shared_ptr<TaskPool> pool_;
  const uint64_t id_;
};

}  // namespace stoker
