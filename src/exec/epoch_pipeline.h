// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <atomic>
#include <map>
#include <memory>

#include "assemble/assembler.h"
#include "exec/autotune.h"
#include "exec/task_pool.h"
#include "exec/unit_reader.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "stoker/batch_stream.h"
#include "stoker/options.h"
#include "telemetry/stats.h"
#include "util/thread_annotations.h"

namespace stoker {

/// Runs one epoch's plan: the row groups of windows are fetched on the I/O executor (many
/// requests in flight) and decoded, filtered and transformed by worker threads, assembly tasks
/// gather batches from loaded windows, and a reorder buffer hands batches out in plan order,
/// whatever order the threads finish in.
///
/// Bounds: at most `prefetch` batches assembled or being assembled ahead of the consumer;
/// resident windows are those the next batch needs plus the read-ahead: the following
/// windows, in plan order, until they hold at least num_threads units (and at least one
/// window), so decode concurrency does not depend on how many units a window holds.
/// Scheduling is event driven (Pump runs when a unit finishes or the consumer takes a batch),
/// so no task ever waits on another.
class EpochPipeline final : public BatchStream {
 public:
  /// Delivers `batches` (indices into the plan's batches, increasing) in that order; its
  /// tasks run on `workers` (its own pool, or one other pipelines share); each batch is
  /// written where `targets` says (null: into buffers of its own). With `tune`, the
  /// pipeline owns `workers` alone and the loader's controller (TuneState) moves its active
  /// workers, read-ahead and prefetch from the consumer's waits, from its current setting.
  EpochPipeline(std::shared_ptr<const UnitSource> source, EpochPlan plan,
                std::vector<int64_t> batches, const LoaderOptions& options,
                std::shared_ptr<Stats> stats, std::shared_ptr<TaskPool> workers,
                std::shared_ptr<const BatchTargets> targets = nullptr,
                std::shared_ptr<TuneState> tune = nullptr);
  ~EpochPipeline() override;

  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Next() override EXCLUDES(mutex_);
  bool WaitReady(std::chrono::milliseconds timeout) override EXCLUDES(mutex_);
  int64_t num_batches() const override { return static_cast<int64_t>(batches_.size()); }
  int64_t planned_rows_delivered() const override EXCLUDES(mutex_);
  StreamWork work() const override;

  /// The most batches that were ever assembled or being assembled ahead of the consumer at
  /// once; never more than `prefetch` (a test of that bound reads it), or under the
  /// controller than its largest prefetch.
  int64_t PeakAhead() const EXCLUDES(mutex_);

 private:
  struct WindowSlot {
    std::shared_ptr<LoadedWindow> data;
    int64_t pending_units = 0;
  };

  /// Starts the window reads and assembly tasks the bounds allow, after any state change.
  void Pump() REQUIRES(mutex_);
  /// Starts reading the units of the window at `position` in schedule_.
  void ScheduleWindow(int64_t position) REQUIRES(mutex_);
  /// Positions in schedule_ of the first and last window the k-th batch reads.
  std::pair<int64_t, int64_t> Range(int64_t k) const;
  /// Units of the window at `position` in schedule_.
  int64_t UnitsOf(int64_t position) const;
  /// Fetches, decodes and finishes one unit (caching it when there is a cache). Called with
  /// mutex_ held (ScheduleWindow) or not (a cache miss in a worker); never locks it on the
  /// calling thread.
  void StartUnit(int64_t scheduled, int64_t unit_in_window, const Unit& unit);
  /// Queues `task` on a worker once the unit's file is verified (Manifest::VerifyFile),
  /// passing it the outcome. Never locks mutex_ on the calling thread.
  void WhenVerified(const Unit& unit, std::function<void(const arrow::Status&)> task);
  /// Queues a worker task. The pool refuses tasks only once the destructor has shut it down,
  /// when nothing waits for their results any more.
  void RunOnWorker(std::function<void()> task, bool urgent);
  bool Deliverable() const REQUIRES(mutex_);
  /// Puts the controller's setting in force: active workers, read-ahead, prefetch.
  void Apply(const TuneSetting& setting) REQUIRES(mutex_);

  /// A finished unit as the assembler reads it: staged row-major when batches are shuffled.
  /// Runs in the worker that finished the unit.
  arrow::Result<StagedUnit> Prepare(const Unit& unit, std::shared_ptr<arrow::RecordBatch> batch);
  void OnUnitRead(int64_t scheduled, int64_t unit_in_window, arrow::Result<StagedUnit> result)
      EXCLUDES(mutex_);
  /// Under on_error="skip", counts a unit that failed with `error` against the budget: true
  /// when it is to be skipped, false when the epoch fails (error_ is then the budget's error
  /// if it ran out; the caller sets the unit's own error otherwise).
  bool SkipUnit(std::map<int64_t, WindowSlot>::iterator window, int64_t unit_in_window,
                const arrow::Status& error) REQUIRES(mutex_);
  void OnBatchAssembled(int64_t batch, arrow::Result<AssembledBatch> result) EXCLUDES(mutex_);

  const std::shared_ptr<const UnitSource> source_;
  const EpochPlan plan_;
  const Assembler assembler_;
  /// The plan's batches this stream delivers, in order; windows_, next_assemble_ and
  /// next_deliver_ count in positions of it.
  const std::vector<int64_t> batches_;
  /// The plan.window_schedule() indices those batches read, increasing. Filled by the
  /// constructor, read-only after.
  std::vector<int64_t> schedule_;
  /// The most prefetch_ may be (the controller's bound, or the fixed prefetch).
  const int64_t prefetch_cap_;
  /// How units are staged row-major for the gather; null when they stay columnar.
  const std::shared_ptr<const RowLayout> row_layout_;
  /// Where staged units' records live, recycled from window to window.
  const std::shared_ptr<ChunkPool> record_chunks_;
  const std::shared_ptr<Stats> stats_;
  const std::shared_ptr<const BatchTargets> targets_;
  /// The pool the tasks run on (the controller sets its active limit).
  const std::shared_ptr<TaskPool> pool_;

  mutable Mutex mutex_;
  int64_t prefetch_ GUARDED_BY(mutex_);
  /// Units read ahead of the windows the next batch needs (see the class comment).
  int64_t lookahead_units_ GUARDED_BY(mutex_);
  /// The loader's controller, driven from Next(); null when the settings are fixed.
  const std::shared_ptr<TuneState> tune_;
  /// The setting in force here; whether a batch was delivered yet; the pool's busy time at
  /// the last delivery.
  TuneSetting applied_ GUARDED_BY(mutex_);
  bool delivered_any_ GUARDED_BY(mutex_) = false;
  int64_t busy_seen_ GUARDED_BY(mutex_) = 0;
  /// Signalled when Deliverable() may have become true.
  CondVar ready_cv_;
  /// Windows scheduled and still needed, keyed by position in schedule_.
  std::map<int64_t, WindowSlot> windows_ GUARDED_BY(mutex_);
  // The consumer's wait for the batch it is waiting for, over WaitReady slices and Next.
  Stats::Clock::duration batch_wait_ GUARDED_BY(mutex_) = Stats::Clock::duration::zero();
  int64_t next_window_ GUARDED_BY(mutex_) = 0;   // next position in schedule_ to start reading
  int64_t last_window_ GUARDED_BY(mutex_) = -1;  // last position in schedule_
  int64_t next_assemble_ GUARDED_BY(mutex_) = 0;
  int64_t next_deliver_ GUARDED_BY(mutex_) = 0;
  int64_t peak_ahead_ GUARDED_BY(mutex_) = 0;  // see PeakAhead()
  /// Units scheduled and not finished (fetching, queued or decoding).
  int64_t units_in_flight_ GUARDED_BY(mutex_) = 0;
  int64_t planned_rows_delivered_ GUARDED_BY(mutex_) = 0;
  /// Reorder buffer: assembled batches not yet delivered (at most prefetch_).
  std::map<int64_t, AssembledBatch> ready_ GUARDED_BY(mutex_);
  arrow::Status error_ GUARDED_BY(mutex_);
  bool cancelled_ GUARDED_BY(mutex_) = false;

  /// Taken after mutex_ when both are held (StartUnit under ScheduleWindow).
  Mutex fetch_mutex_;
  /// Fetches whose completion callback has not run yet (it refers to this object).
  int64_t fetches_in_flight_ GUARDED_BY(fetch_mutex_) = 0;
  /// What work() reports: units decoded and taken from the cache, and the thread CPU
  /// nanoseconds of the tasks that made units ready.
  std::atomic<int64_t> units_decoded_{0}, units_cached_{0}, unit_cpu_ns_{0};
  /// Signalled when fetches_in_flight_ drops.
  CondVar fetches_done_;

  /// This pipeline's tasks on the pool; closed (its tasks dropped or finished) first thing
  /// in the destructor.
  TaskGroup workers_;
};

}  // namespace stoker
