// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// What a traced span did (docs/observability.md, "Timeline").
enum class TraceStage : uint8_t {
  kFetch,      // a unit's column chunks read from storage (the I/O executor's wait)
  kDecode,     // a unit decoded
  kTransform,  // a unit filtered and transformed
  kStage,      // a unit staged row-major for the shuffled gather
  kAssemble,   // a batch gathered
  kWait,       // the consumer waiting for a batch
  kReceive,    // a batch received from a server (RemoteLoader)
  kConvert,    // a received batch converted to arrays or tensors (RemoteLoader)
  kInFlight,   // not a span: the count of units in flight changed to `a` (a counter track)
  kTune,       // not a span: the controller set `a` active workers and prefetch `b` (a counter)
};

/// The stage of a span by its name in the JSON ("fetch", ..., "convert"); false if none.
bool ParseTraceStage(const std::string& name, TraceStage* stage);

/// The last `capacity` spans of a loader's work, per thread, in a ring: bounded memory
/// (48 bytes a span), so tracing can stay on in production. Written as Chrome trace JSON,
/// which ui.perfetto.dev and chrome://tracing open.
class TraceRing {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TraceRing(size_t capacity);

  /// A unit's span (`a` = file index, `b` = row group) or a batch's (`a` = batch index; for
  /// kReceive, `b` = the server's index).
  void Record(TraceStage stage, Clock::time_point start, Clock::time_point end, int64_t a,
              int64_t b = -1) EXCLUDES(mutex_);
  /// The spans kept, oldest first, as Chrome trace JSON (times in µs since the ring was made;
  /// one row per thread, named as the thread is).
  arrow::Status WriteJson(const std::string& path) const EXCLUDES(mutex_);
  /// Spans recorded in all, and how many of them the ring still holds.
  int64_t recorded() const EXCLUDES(mutex_);
  size_t capacity() const { return capacity_; }

 private:
  struct Span {
    Clock::time_point start;
    int64_t duration_ns;
    int64_t a, b;
    int32_t thread;
    TraceStage stage;
  };

  int32_t ThreadIndex() REQUIRES(mutex_);

  const size_t capacity_;
  const Clock::time_point origin_ = Clock::now();
  mutable Mutex mutex_;
  std::vector<Span> spans_ GUARDED_BY(mutex_);
  size_t next_ GUARDED_BY(mutex_) = 0;
  int64_t recorded_ GUARDED_BY(mutex_) = 0;
  // Threads seen, by their system id: index and name.
  std::map<uint64_t, std::pair<int32_t, std::string>> threads_ GUARDED_BY(mutex_);
};

}  // namespace stoker
