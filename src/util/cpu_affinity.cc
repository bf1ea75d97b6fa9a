// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "util/cpu_affinity.h"

#include <arrow/util/thread_pool.h>
#include <sched.h>

#include <chrono>
#include <cstring>
#include <sstream>

#include "util/thread_annotations.h"

namespace stoker {

namespace {

cpu_set_t CurrentMask() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) CPU_ZERO(&set);
  return set;
}

}  // namespace

std::string CurrentCpuList() {
  const cpu_set_t set = CurrentMask();
  std::ostringstream out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (out.tellp() > 0) out << ',';
    out << cpu;
    if (last > cpu) out << '-' << last;
    cpu = last;
  }
  return out.str();
}

arrow::Status CheckEngineCpus(const std::vector<int>& cpus) {
  const cpu_set_t set = CurrentMask();
  for (const int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) {
      return arrow::Status::Invalid("engine_cpus: CPU ", cpu,
                                    " is not in this thread's affinity mask (", CurrentCpuList(),
                                    "; taskset, cpusets): the engine's threads may only run "
                                    "where the process may");
    }
  }
  return arrow::Status::OK();
}

arrow::Status PinThread(pthread_t thread, const std::vector<int>& cpus) {
  if (cpus.empty()) return arrow::Status::OK();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  if (const int error = pthread_setaffinity_np(thread, sizeof(set), &set); error != 0) {
    return arrow::Status::IOError("engine_cpus: could not pin an engine thread: ",
                                  std::strerror(error));
  }
  return arrow::Status::OK();
}

void StartAllThreads(arrow::internal::ThreadPool* pool, int threads) {
  // Each task waits until all have begun, so that none is taken by an idle thread and each
  // makes the pool start one more.
  Mutex mutex;
  CondVar all_started;
  int started = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (int i = 0; i < threads; ++i) {
    auto spawned = pool->Spawn([&] {
      MutexLock lock(mutex);
      if (++started == threads) all_started.NotifyAll();
      while (started < threads && all_started.WaitUntil(mutex, deadline)) {
      }
    });
    if (!spawned.ok()) break;
  }
  pool->WaitForIdle();
}

}  // namespace stoker
