// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stoker {

/// A fixed set of owned worker threads running tasks from two FIFO queues, urgent first.
/// The queues are bounded by the caller (BatchStream admits at most its prefetch and window
/// limits). Tasks never wait on other tasks. Shutdown() drops queued tasks and joins.
class TaskPool {
 public:
  explicit TaskPool(int num_threads);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  /// Queues a task; ignored once Shutdown() has begun.
  void Submit(std::function<void()> task, bool urgent);
  /// Drops queued tasks, lets running ones finish, joins the threads. Idempotent.
  void Shutdown();

 private:
  void Work();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> urgent_;
  std::deque<std::function<void()>> normal_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace stoker
