// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// A fixed set of owned worker threads running tasks from two FIFO queues, urgent first.
/// The queues are bounded by the caller (BatchStream admits at most its prefetch and window
/// limits). Tasks never wait on other tasks. Shutdown() drops queued tasks and joins.
class TaskPool {
 public:
  /// Every pool thread's name (at most 15 characters, the kernel's limit).
  static constexpr const char* kThreadName = "stoker-worker";

  explicit TaskPool(int num_threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Queues a task; Cancelled (and the task is dropped unrun) once Shutdown() has begun.
  arrow::Status Submit(std::function<void()> task, bool urgent) EXCLUDES(mutex_);
  /// Drops queued tasks, lets running ones finish, joins the threads. Idempotent; not to be
  /// called from a task, nor from two threads at once.
  void Shutdown() EXCLUDES(mutex_);

 private:
  void Work() EXCLUDES(mutex_);

  Mutex mutex_;
  CondVar wake_;
  std::deque<std::function<void()>> urgent_ GUARDED_BY(mutex_);
  std::deque<std::function<void()>> normal_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  /// Written by the constructor, joined by Shutdown(); never touched by the workers.
  std::vector<std::thread> threads_;
};

}  // namespace stoker
