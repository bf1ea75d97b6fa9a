// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented by src/exec/epoch_pipeline.cc and src/mixture/ (mixture_stream, padded_stream).
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <tuple>

#include "stoker/fields.h"

namespace stoker {

/// What one stream's own work has cost so far (a server lists it per stream: ServeStats).
struct StreamWork {
  /// Units (row groups) the stream decoded from storage, and those it took from the local
  /// cache instead.
  int64_t units_decoded = 0;
  int64_t units_cached = 0;
  /// Thread CPU-seconds its workers spent turning units into what the gather reads: decode
  /// and value checks, filter and transforms, staging (not the fetch, not the gather).
  double unit_cpu_seconds = 0;
};

/// StreamWork's fields by name (stoker/fields.h).
constexpr auto FieldsOf(const StreamWork&) {
  using W = StreamWork;
  return std::tuple{Field{"units_decoded", &W::units_decoded},
                    Field{"units_cached", &W::units_cached},
                    Field{"unit_cpu_seconds", &W::unit_cpu_seconds}};
}

/// One epoch of batches for one rank, in plan order. Made by Loader::StartEpoch; work starts
/// at once in the loader's worker threads. Destroying it cancels the work and joins the
/// threads. Not thread-safe: one consumer.
class BatchStream {
 public:
  virtual ~BatchStream() = default;

  /// The next batch in plan order; nullptr after the last one. Blocks until it is ready.
  virtual arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() = 0;

  /// Waits at most `timeout` until Next() would not block; true if it would not. Lets a
  /// caller wait in slices (to notice Ctrl-C).
  virtual bool WaitReady(std::chrono::milliseconds timeout) = 0;

  /// Batches this stream delivers in all.
  virtual int64_t num_batches() const = 0;

  /// Rows of the plan the batches delivered so far stand for: their rows, plus the rows of
  /// units skipped under on_error="skip" (what a resume state counts as consumed).
  virtual int64_t planned_rows_delivered() const = 0;

  /// What this stream's work has cost so far; zeros from a stream that does not count it.
  virtual StreamWork work() const { return {}; }
};

}  // namespace stoker
