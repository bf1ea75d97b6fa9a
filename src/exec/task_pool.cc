// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/task_pool.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

namespace stoker {

namespace {

// running_'s mark of an idle worker (no group has this id).
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// Moves the tasks of `group` (every group when kNone) from `queue` to `out`.
template <typename Queue>
void TakeGroup(Queue* queue, uint64_t group, Queue* out) {
  auto keep = std::stable_partition(queue->begin(), queue->end(), [group](const auto& task) {
    return group != kNone && task.group != group;
  });
  std::move(keep, queue->end(), std::back_inserter(*out));
  queue->erase(keep, queue->end());
}

}  // namespace

TaskPool::TaskPool(int num_threads) {
  {
    MutexLock lock(mutex_);
    open_.insert(kOwnGroup);
    running_.assign(static_cast<size_t>(std::max(num_threads, 0)), kNone);
    active_ = running_.size();
  }
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, i] {
      // The name tools show (top -H, /proc/PID/task/*/comm, gdb), and tests count by.
      pthread_setname_np(pthread_self(), kThreadName);
      Work(static_cast<size_t>(i));
    });
  }
}

TaskPool::~TaskPool() { Shutdown(); }

arrow::Status TaskPool::Submit(std::function<void()> task, bool urgent) {
  return Submit(Task{std::move(task), kOwnGroup}, urgent);
}

void TaskPool::ParallelFor(int64_t n, const std::function<void(int64_t)>& body) {
  const auto shares = std::min<int64_t>(n, static_cast<int64_t>(threads_.size()));
  Mutex mutex;
  CondVar done;
  int64_t left = shares;  // guarded by `mutex`
  for (int64_t share = 0; share < shares; ++share) {
    auto run = [&, share] {
      for (int64_t i = share; i < n; i += shares) body(i);
      MutexLock lock(mutex);
      if (--left == 0) done.NotifyAll();
    };
    if (!Submit(run, /*urgent=*/true).ok()) run();
  }
  for (int64_t i = 0; shares == 0 && i < n; ++i) body(i);
  MutexLock lock(mutex);
  while (left > 0) done.Wait(mutex);
}

arrow::Status TaskPool::Submit(Task task, bool urgent) {
  {
    MutexLock lock(mutex_);
    if (stopping_ || open_.count(task.group) == 0) {
      return arrow::Status::Cancelled("the task pool is shut down");
    }
    // Not `(urgent ? urgent_ : normal_)`: the analysis does not see through the conditional.
    if (urgent) {
      urgent_.push_back(std::move(task));
    } else {
      normal_.push_back(std::move(task));
    }
  }
  wake_.NotifyOne();  // only workers within the active limit wait on wake_
  return arrow::Status::OK();
}

uint64_t TaskPool::OpenGroup() {
  MutexLock lock(mutex_);
  const uint64_t group = next_group_++;
  open_.insert(group);
  return group;
}

void TaskPool::CloseGroup(uint64_t group) {
  // The dropped tasks are destroyed after the lock is released: their captures' destructors
  // (buffers, readers) run no code under it.
  std::deque<Task> dropped;
  MutexLock lock(mutex_);
  open_.erase(group);
  TakeGroup(&urgent_, group, &dropped);
  TakeGroup(&normal_, group, &dropped);
  ++closing_;
  while (std::find(running_.begin(), running_.end(), group) != running_.end()) {
    finished_.Wait(mutex_);
  }
  --closing_;
}

void TaskPool::Shutdown() {
  std::deque<Task> dropped_urgent, dropped_normal;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    TakeGroup(&urgent_, kNone, &dropped_urgent);
    TakeGroup(&normal_, kNone, &dropped_normal);
  }
  wake_.NotifyAll();
  parked_.NotifyAll();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void TaskPool::SetActiveLimit(int limit) {
  {
    MutexLock lock(mutex_);
    active_ = std::clamp<size_t>(static_cast<size_t>(std::max(limit, 1)), 1, running_.size());
  }
  // Each worker re-checks which side of the limit it is on and sleeps on that side's
  // condition: wake_ (within, woken by Submit) or parked_ (past it).
  wake_.NotifyAll();
  parked_.NotifyAll();
}

int TaskPool::active_limit() const {
  MutexLock lock(mutex_);
  return static_cast<int>(active_);
}

bool TaskPool::HasWork(size_t worker) const {
  return worker < active_ && !(urgent_.empty() && normal_.empty());
}

void TaskPool::Work(size_t worker) {
  for (;;) {
    Task task;
    {
      MutexLock lock(mutex_);
      running_[worker] = kNone;
      if (closing_ > 0) finished_.NotifyAll();
      while (!stopping_ && !HasWork(worker)) {
        if (worker < active_) {
          wake_.Wait(mutex_);
        } else {
          parked_.Wait(mutex_);
        }
      }
      if (stopping_) return;
      auto& queue = urgent_.empty() ? normal_ : urgent_;
      task = std::move(queue.front());
      queue.pop_front();
      running_[worker] = task.group;
    }
    const auto start = std::chrono::steady_clock::now();
    task.run();
    // Its captures go before the worker is marked idle: a closed group's pipeline may be
    // destroyed as soon as none of its tasks runs.
    task.run = nullptr;
    busy_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count(),
                       std::memory_order_relaxed);
  }
}

TaskGroup::TaskGroup(std::shared_ptr<TaskPool> pool)
    : pool_(std::move(pool)), id_(pool_->OpenGroup()) {}

arrow::Status TaskGroup::Submit(std::function<void()> task, bool urgent) {
  return pool_->Submit(TaskPool::Task{std::move(task), id_}, urgent);
}

void TaskGroup::Close() { pool_->CloseGroup(id_); }

}  // namespace stoker
