// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/task_pool.h"

#include <pthread.h>

namespace stoker {

TaskPool::TaskPool(int num_threads) {
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this] {
      // The name tools show (top -H, /proc/PID/task/*/comm, gdb), and tests count by.
      pthread_setname_np(pthread_self(), kThreadName);
      Work();
    });
  }
}

TaskPool::~TaskPool() { Shutdown(); }

arrow::Status TaskPool::Submit(std::function<void()> task, bool urgent) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return arrow::Status::Cancelled("the task pool is shut down");
    // Not `(urgent ? urgent_ : normal_)`: the analysis does not see through the conditional.
    if (urgent) {
      urgent_.push_back(std::move(task));
    } else {
      normal_.push_back(std::move(task));
    }
  }
  wake_.NotifyOne();
  return arrow::Status::OK();
}

void TaskPool::Shutdown() {
  // The dropped tasks are destroyed after the lock is released: their captures' destructors
  // (buffers, readers) run no code under it.
  std::deque<std::function<void()>> dropped_urgent, dropped_normal;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    dropped_urgent.swap(urgent_);
    dropped_normal.swap(normal_);
  }
  wake_.NotifyAll();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void TaskPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      MutexLock lock(mutex_);
      while (!stopping_ && urgent_.empty() && normal_.empty()) wake_.Wait(mutex_);
      if (stopping_) return;
      auto& queue = urgent_.empty() ? normal_ : urgent_;
      task = std::move(queue.front());
      queue.pop_front();
    }
    task();
  }
}

}  // namespace stoker
