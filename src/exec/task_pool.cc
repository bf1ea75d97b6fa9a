// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/task_pool.h"

namespace stoker {

TaskPool::TaskPool(int num_threads) {
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { Work(); });
}

TaskPool::~TaskPool() { Shutdown(); }

void TaskPool::Submit(std::function<void()> task, bool urgent) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    (urgent ? urgent_ : normal_).push_back(std::move(task));
  }
  wake_.notify_one();
}

void TaskPool::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    urgent_.clear();
    normal_.clear();
  }
  wake_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void TaskPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !urgent_.empty() || !normal_.empty(); });
      if (stopping_) return;
      auto& queue = urgent_.empty() ? normal_ : urgent_;
      task = std::move(queue.front());
      queue.pop_front();
    }
    task();
  }
}

}  // namespace stoker
