// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "stoker/fields.h"
#include "util/thread_annotations.h"

namespace stoker {

/// How hard a FaultProbe probes.
struct FaultProbeOptions {
  /// Fresh anonymous pages mapped, touched once each and unmapped per round. Default 8.
  int pages_per_round = 8;
  /// Pause between rounds. Default 1 ms: with 8 pages, about 8,000 faults a second, a few
  /// percent of one core.
  std::chrono::microseconds interval{1000};
  /// Touch and map timings kept for the quantiles (4 bytes each; default 2^20, 4 MiB at most
  /// per kind); later ones still count in the tallies and the maximum. At least 1.
  int64_t max_samples = int64_t{1} << 20;

  arrow::Status Validate() const;
};

/// Timings of one kind of probed operation (a page's first touch, or an mmap + munmap pair).
struct ProbeTimings {
  int64_t count = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  /// Operations slower than FaultProbe::kSlow, and those of them during which the thread
  /// slept (a voluntary context switch: it waited for a lock or for I/O) rather than only
  /// lost its CPU to another thread (involuntary switches: run-queue delay).
  int64_t slow = 0, slow_blocked = 0;
};

/// ProbeTimings' fields by the names the doctor's probe reports them under (stoker/fields.h).
constexpr auto FieldsOf(const ProbeTimings&) {
  using T = ProbeTimings;
  return std::tuple{Field{"count", &T::count},   Field{"p50_us", &T::p50_us},
                    Field{"p99_us", &T::p99_us}, Field{"max_us", &T::max_us},
                    Field{"over_1ms", &T::slow}, Field{"over_1ms_blocked", &T::slow_blocked}};
}

/// What a FaultProbe measured.
struct FaultProbeSummary {
  ProbeTimings touches;  // first touch of a fresh page: one minor page fault each
  ProbeTimings maps;     // an mmap of a round's pages plus its munmap (both take the
                         // memory-map lock for writing)
  double seconds = 0;    // from Start to Stop
};

/// FaultProbeSummary's fields by name (stoker/fields.h).
constexpr auto FieldsOf(const FaultProbeSummary&) {
  using S = FaultProbeSummary;
  return std::tuple{Field{"touches", &S::touches}, Field{"maps", &S::maps},
                    Field{"seconds", &S::seconds}};
}

/// A thread that maps fresh anonymous pages, times the first touch of each (a page fault) and
/// the mmap/munmap calls, and tells slow ones apart by whether the thread slept. A page fault
/// costs about a microsecond; one that takes milliseconds and sleeps waited for this
/// process's memory-map lock, held for example by another process reading /proc/PID/smaps or
/// queued behind an mmap waiting for such a reader (`stoker doctor`, docs/observability.md).
class FaultProbe {
 public:
  /// A touch or map slower than this counts as slow.
  static constexpr std::chrono::milliseconds kSlow{1};
  static constexpr const char* kThreadName = "stoker-probe";

  /// Starts the probe thread.
  static arrow::Result<std::unique_ptr<FaultProbe>> Start(const FaultProbeOptions& options);
  /// Stops and joins the thread.
  ~FaultProbe();
  FaultProbe(const FaultProbe&) = delete;
  FaultProbe& operator=(const FaultProbe&) = delete;

  /// Stops and joins the thread (the first call; later ones, from any thread, return the same
  /// figures) and summarizes what it measured.
  FaultProbeSummary Stop() EXCLUDES(stop_mutex_, mutex_);

 private:
  // One kind's raw timings, written by the probe thread only, read after it is joined.
  struct Tally {
    std::vector<uint32_t> samples_ns;  // bound: max_samples
    int64_t count = 0, max_ns = 0, slow = 0, slow_blocked = 0;
    void Add(int64_t ns, bool slept, int64_t max_samples);
    ProbeTimings Summary() const;
  };

  explicit FaultProbe(const FaultProbeOptions& options);
  void Run() EXCLUDES(mutex_);
  // One round: map, touch each page, unmap. False when mmap fails (the probe then stops).
  bool Round();

  const FaultProbeOptions options_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Mutex mutex_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mutex_) = false;
  Tally touches_, maps_;  // the probe thread's until it is joined
  std::thread thread_;
  // Serializes Stop: one caller joins, the others get its summary.
  Mutex stop_mutex_;  // taken before mutex_
  std::unique_ptr<FaultProbeSummary> summary_ GUARDED_BY(stop_mutex_);
};

}  // namespace stoker
