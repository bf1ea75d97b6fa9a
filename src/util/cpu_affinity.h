// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The CPUs the engine's own threads run on (LoaderOptions::engine_cpus): checked against the
// affinity mask, applied to one thread at a time. Never applied to a caller's thread.
#pragma once

#include <arrow/status.h>
#include <pthread.h>

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace arrow::internal {
class ThreadPool;
}  // namespace arrow::internal

namespace stoker {

/// OK when every CPU of `cpus` is in the calling thread's affinity mask (what the CPU budget
/// reads: taskset, cpusets); otherwise an error naming engine_cpus, the CPU and the mask.
arrow::Status CheckEngineCpus(const std::vector<int>& cpus);

/// Sets `thread`'s affinity to `cpus` (pthread_setaffinity_np); nothing when `cpus` is empty.
/// For the engine's own threads only: the pool's workers, the I/O executor's helper.
arrow::Status PinThread(pthread_t thread, const std::vector<int>& cpus);

/// The calling thread's affinity mask as a list like "0-3,6".
std::string CurrentCpuList();

/// The name of the thread OnEngineCpus starts, and of the threads it starts that keep the
/// name they inherit (Arrow's I/O executor's).
inline constexpr char kEngineThreadName[] = "stoker-engine";

/// Runs `fn` on a thread of its own pinned to `cpus` and waits for it, so that every thread
/// `fn` starts (a worker pool, an Arrow executor) inherits the mask: a Linux thread starts
/// with its creator's affinity. The calling thread's mask is not touched. With `cpus` empty,
/// `fn` runs on the calling thread. `fn` returns an arrow::Status or arrow::Result.
template <typename Fn>
auto OnEngineCpus(const std::vector<int>& cpus, Fn&& fn) -> decltype(fn()) {
  if (cpus.empty()) return fn();
  arrow::Status pinned;
  std::optional<decltype(fn())> out;
  std::thread helper([&] {
    pthread_setname_np(pthread_self(), kEngineThreadName);
    pinned = PinThread(pthread_self(), cpus);
    if (pinned.ok()) out.emplace(fn());
  });
  helper.join();
  if (!pinned.ok()) return pinned;
  return std::move(*out);
}

/// Starts every thread of `pool` (`threads` of them) now, on the calling thread: Arrow's
/// pool starts a thread only when a task finds none idle, from the thread that submits it,
/// which would give it that thread's mask. Bounded: gives up after a second if the pool
/// starts fewer.
void StartAllThreads(arrow::internal::ThreadPool* pool, int threads);

}  // namespace stoker
