// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "telemetry/fault_probe.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

namespace stoker {

namespace {

using Clock = std::chrono::steady_clock;

// Context switches of the calling thread so far: {voluntary (it slept), involuntary}.
std::pair<int64_t, int64_t> ContextSwitches() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return {usage.ru_nvcsw, usage.ru_nivcsw};
}

// Times `op` and says whether the thread slept (a voluntary switch) while it ran.
template <typename Op>
std::pair<int64_t, bool> Timed(Op&& op) {
  const int64_t slept_before = ContextSwitches().first;
  const auto start = Clock::now();
  op();
  const auto end = Clock::now();
  const bool slept = ContextSwitches().first != slept_before;
  return {std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count(), slept};
}

double Quantile(const std::vector<uint32_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[i] / 1e3;
}

}  // namespace

arrow::Status FaultProbeOptions::Validate() const {
  if (pages_per_round < 1) {
    return arrow::Status::Invalid("FaultProbeOptions.pages_per_round must be >= 1, got ",
                                  pages_per_round);
  }
  if (interval.count() < 0) {
    return arrow::Status::Invalid("FaultProbeOptions.interval must be >= 0 µs, got ",
                                  interval.count());
  }
  if (max_samples < 1) {
    return arrow::Status::Invalid("FaultProbeOptions.max_samples must be >= 1, got ", max_samples);
  }
  return arrow::Status::OK();
}

void FaultProbe::Tally::Add(int64_t ns, bool slept, int64_t max_samples) {
  ++count;
  max_ns = std::max(max_ns, ns);
  if (ns > std::chrono::nanoseconds(kSlow).count()) {
    ++slow;
    if (slept) ++slow_blocked;
  }
  if (static_cast<int64_t>(samples_ns.size()) < max_samples) {
    samples_ns.push_back(
        static_cast<uint32_t>(std::min<int64_t>(ns, std::numeric_limits<uint32_t>::max())));
  }
}

ProbeTimings FaultProbe::Tally::Summary() const {
  std::vector<uint32_t> sorted = samples_ns;
  std::sort(sorted.begin(), sorted.end());
  return {count, Quantile(sorted, 0.5), Quantile(sorted, 0.99), max_ns / 1e3, slow, slow_blocked};
}

arrow::Result<std::unique_ptr<FaultProbe>> FaultProbe::Start(const FaultProbeOptions& options) {
  ARROW_RETURN_NOT_OK(options.Validate());
  std::unique_ptr<FaultProbe> probe(new FaultProbe(options));
  probe->thread_ = std::thread([raw = probe.get()] {
    pthread_setname_np(pthread_self(), kThreadName);
    raw->Run();
  });
  return probe;
}

FaultProbe::FaultProbe(const FaultProbeOptions& options) : options_(options) {}

FaultProbe::~FaultProbe() { Stop(); }

FaultProbeSummary FaultProbe::Stop() {
  MutexLock stop_lock(stop_mutex_);
  if (summary_ == nullptr) {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.NotifyAll();
    if (thread_.joinable()) thread_.join();
    summary_ = std::make_unique<FaultProbeSummary>();
    summary_->touches = touches_.Summary();
    summary_->maps = maps_.Summary();
    summary_->seconds = std::chrono::duration<double>(Clock::now() - started_).count();
  }
  return *summary_;
}

void FaultProbe::Run() {
  for (;;) {
    {
      MutexLock lock(mutex_);
      const auto deadline = Clock::now() + options_.interval;
      while (!stopping_ && wake_.WaitUntil(mutex_, deadline)) {
      }
      if (stopping_) return;
    }
    if (!Round()) return;
  }
}

bool FaultProbe::Round() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = page * static_cast<size_t>(options_.pages_per_round);
  void* mapped = MAP_FAILED;
  const auto [map_ns, map_slept] = Timed([&] {
    mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  });
  if (mapped == MAP_FAILED) return false;
  // Small pages, whatever the transparent huge page mode: one fault per page, comparable
  // across hosts.
  madvise(mapped, bytes, MADV_NOHUGEPAGE);
  auto* bytes_at = static_cast<volatile char*>(mapped);
  for (size_t offset = 0; offset < bytes; offset += page) {
    const auto [ns, slept] = Timed([&] { bytes_at[offset] = 1; });
    touches_.Add(ns, slept, options_.max_samples);
  }
  const auto [unmap_ns, unmap_slept] = Timed([&] { munmap(mapped, bytes); });
  maps_.Add(map_ns + unmap_ns, map_slept || unmap_slept, options_.max_samples);
  return true;
}

}  // namespace stoker
