// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "assemble/assembler.h"
#include "exec/task_pool.h"
#include "exec/unit_reader.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "stoker/batch_stream.h"
#include "stoker/options.h"
#include "telemetry/stats.h"

namespace stoker {

/// Runs one epoch's plan: the row groups of windows are fetched on the I/O executor (many
/// requests in flight) and decoded, filtered and transformed by worker threads, assembly tasks
/// gather batches from loaded windows, and a reorder buffer hands batches out in plan order,
/// whatever order the threads finish in.
///
/// Bounds: at most `prefetch` batches assembled or being assembled ahead of the consumer;
/// resident windows are those the next batches need plus `lookahead` more (1 window with
/// shuffle, num_threads single-unit windows without). Scheduling is event driven (Pump runs
/// when a unit finishes or the consumer takes a batch), so no task ever waits on another.
class EpochPipeline final : public BatchStream {
 public:
  /// Delivers `batches` (indices into the plan's batches, increasing) in that order.
  EpochPipeline(std::shared_ptr<const UnitSource> source, EpochPlan plan,
                std::vector<int64_t> batches, const LoaderOptions& options,
                std::shared_ptr<Stats> stats);
  ~EpochPipeline() override;

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override;
  bool WaitReady(std::chrono::milliseconds timeout) override;
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }

 private:
  struct WindowSlot {
    std::shared_ptr<LoadedWindow> data;
    int64_t pending_units = 0;
  };

  // All of these require mutex_ to be held.
  void Pump();
  /// Starts reading the units of the window at `position` in schedule_.
  void ScheduleWindow(int64_t position);
  /// Positions in schedule_ of the first and last window the k-th batch reads.
  std::pair<int64_t, int64_t> Range(int64_t k) const;
  /// Fetches, decodes and finishes one unit (caching it when there is a cache). Never locks
  /// mutex_ on the calling thread.
  void StartUnit(int64_t scheduled, int64_t unit_in_window, const Unit& unit);
  bool Deliverable() const;

  /// A finished unit as the assembler reads it: staged row-major when batches are shuffled.
  /// Runs in the worker that finished the unit.
  arrow::Result<StagedUnit> Prepare(std::shared_ptr<arrow::RecordBatch> unit);
  void OnUnitRead(int64_t scheduled, int64_t unit_in_window, arrow::Result<StagedUnit> result);
  void OnBatchAssembled(int64_t batch, arrow::Result<AssembledBatch> result);

  const std::shared_ptr<const UnitSource> source_;
  const EpochPlan plan_;
  const Assembler assembler_;
  /// The plan's batches this stream delivers, in order; windows_, next_assemble_ and
  /// next_deliver_ count in positions of it.
  const std::vector<int64_t> batches_;
  /// The plan.window_schedule() indices those batches read, increasing.
  std::vector<int64_t> schedule_;
  const int64_t prefetch_;
  const int64_t lookahead_;
  /// How units are staged row-major for the gather; null when they stay columnar.
  const std::shared_ptr<const RowLayout> row_layout_;
  /// Where staged units' records live, recycled from window to window.
  const std::shared_ptr<ChunkPool> record_chunks_;
  const std::shared_ptr<Stats> stats_;

  std::mutex mutex_;
  std::condition_variable ready_cv_;
  /// Windows scheduled and still needed, keyed by position in schedule_.
  std::map<int64_t, WindowSlot> windows_;
  int64_t next_window_ = 0;   // next position in schedule_ to start reading
  int64_t last_window_ = -1;  // last position in schedule_
  int64_t next_assemble_ = 0;
  int64_t next_deliver_ = 0;
  /// Reorder buffer: assembled batches not yet delivered (at most prefetch_).
  std::map<int64_t, AssembledBatch> ready_;
  arrow::Status error_;
  bool cancelled_ = false;

  /// Fetches whose completion callback has not run yet (it refers to this object).
  std::atomic<int64_t> fetches_in_flight_{0};
  std::mutex fetch_mutex_;
  std::condition_variable fetches_done_;

  TaskPool workers_;
};

}  // namespace stoker
