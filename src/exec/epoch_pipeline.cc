// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/epoch_pipeline.h"

#include <arrow/util/logging.h>

#include <algorithm>

#include "exec/unit_reader.h"

namespace stoker {

namespace {

// Shuffled batches gather rows from all over a window: stage units row-major for them.
// Unshuffled batches read each unit in order, which the columnar copy does at memory speed.
std::shared_ptr<const RowLayout> StagingLayout(const UnitSource& source,
                                               const LoaderOptions& options) {
  if (!options.shuffle) return nullptr;
  ARROW_DCHECK_EQ(source.non_null.size(), static_cast<size_t>(source.output_schema->num_fields()));
  auto layout =
      std::make_shared<const RowLayout>(RowLayout::For(*source.output_schema, source.non_null));
  if (layout->empty()) return nullptr;
  return layout;
}

}  // namespace

EpochPipeline::EpochPipeline(std::shared_ptr<const UnitSource> source, EpochPlan plan,
                             std::vector<int64_t> batches, const LoaderOptions& options,
                             std::shared_ptr<Stats> stats, std::shared_ptr<TaskPool> workers,
                             std::shared_ptr<const BatchTargets> targets,
                             std::shared_ptr<TuneState> tune)
    : source_(std::move(source)),
      plan_(std::move(plan)),
      assembler_(LayoutOf(source_)),
      batches_(std::move(batches)),
      prefetch_cap_(tune != nullptr ? std::max(tune->bounds().max_prefetch, 1)
                                    : options.ResolvedPrefetch()),
      row_layout_(StagingLayout(*source_, options)),
      record_chunks_(
          row_layout_ == nullptr
              ? nullptr
              : ChunkPool::Make(row_layout_->stride << row_layout_->chunk_shift, source_->pool)),
      stats_(std::move(stats)),
      targets_(std::move(targets)),
      pool_(workers),
      tune_(std::move(tune)),
      workers_(std::move(workers)) {
  MutexLock lock(mutex_);
  prefetch_ = options.ResolvedPrefetch();
  lookahead_units_ = options.ResolvedThreads();
  if (tune_ != nullptr) Apply(tune_->current());
  // The windows these batches read, in order (all of the rank's, or a server's share).
  for (int64_t batch : batches_) {
    const auto [first, last] = plan_.ScheduleRange(batch);
    for (int64_t w = first; w <= last; ++w) {
      if (schedule_.empty() || schedule_.back() < w) schedule_.push_back(w);
    }
  }
  last_window_ = static_cast<int64_t>(schedule_.size()) - 1;
  Pump();
}

EpochPipeline::~EpochPipeline() {
  {
    MutexLock lock(mutex_);
    cancelled_ = true;
  }
  ready_cv_.NotifyAll();
  // Workers first: a running cache lookup may still start a fetch, and only once this
  // pipeline's tasks are done can no new fetch begin. The fetches' callbacks then find the
  // group closed.
  workers_.Close();
  // Fetch callbacks refer to this pipeline: wait until none is outstanding.
  {
    MutexLock lock(fetch_mutex_);
    while (fetches_in_flight_ > 0) fetches_done_.Wait(fetch_mutex_);
  }
  // Units whose tasks were dropped never report: they are no longer in flight.
  MutexLock lock(mutex_);
  stats_->AddUnitsInFlight(-units_in_flight_);
  units_in_flight_ = 0;
}

void EpochPipeline::RunOnWorker(std::function<void()> task, bool urgent) {
  const arrow::Status status = workers_.Submit(std::move(task), urgent);
  // Refused only once the destructor has closed the group, when nothing waits for the
  // task's result any more: dropping it is then right.
  ARROW_DCHECK(status.ok() || status.IsCancelled()) << status.ToString();
}

std::pair<int64_t, int64_t> EpochPipeline::Range(int64_t k) const {
  ARROW_DCHECK(k >= 0 && k < static_cast<int64_t>(batches_.size())) << "batch " << k;
  const auto [first, last] = plan_.ScheduleRange(batches_[k]);
  auto position = [this](int64_t scheduled) {
    return static_cast<int64_t>(std::lower_bound(schedule_.begin(), schedule_.end(), scheduled) -
                                schedule_.begin());
  };
  return {position(first), position(last)};
}

void EpochPipeline::ScheduleWindow(int64_t position) {
  ARROW_DCHECK(position >= 0 && position <= last_window_) << "window position " << position;
  ARROW_DCHECK_EQ(windows_.count(position), 0u) << "window position " << position;
  const int64_t scheduled = position;
  const int64_t window = plan_.window_schedule()[schedule_[position]];
  const Window& w = plan_.windows()[window];
  WindowSlot& slot = windows_[scheduled];
  slot.data = std::make_shared<LoadedWindow>();
  slot.data->index = window;
  slot.data->units.resize(w.num_units);
  for (int64_t i = 0; i < w.num_units; ++i) {
    slot.data->unit_ids.push_back(plan_.unit_order()[w.first_unit + i]);
  }
  slot.pending_units = w.num_units;
  units_in_flight_ += w.num_units;
  stats_->AddUnitsInFlight(w.num_units);
  for (int64_t i = 0; i < w.num_units; ++i) {
    const Unit& unit = source_->units[slot.data->unit_ids[i]];
    if (source_->cache == nullptr) {
      StartUnit(scheduled, i, unit);
    } else {
      // Looking the cache up reads a file: do it in a worker, not under mutex_, once the
      // unit's file is known to be the one the cache entry was made from (index="trust").
      WhenVerified(unit, [this, scheduled, i, &unit](const arrow::Status& verified) {
        if (!verified.ok()) return OnUnitRead(scheduled, i, verified);
        auto cached = source_->cache->Get(CacheKey(*source_, unit));
        if (cached == nullptr) return StartUnit(scheduled, i, unit);
        units_cached_.fetch_add(1, std::memory_order_relaxed);
        const ThreadCpuTimer cpu(&unit_cpu_ns_);
        auto drawn = DrawUnit(*source_, unit, std::move(cached), plan_.config().seed,
                              plan_.config().epoch, stats_.get());
        if (!drawn.ok()) return OnUnitRead(scheduled, i, drawn.status());
        OnUnitRead(scheduled, i, Prepare(unit, std::move(*drawn)));
      });
    }
  }
}

void EpochPipeline::WhenVerified(const Unit& unit, std::function<void(const arrow::Status&)> task) {
  auto verified =
      source_->manifest->VerifyFile(unit.file, source_->io_executor.get(), stats_.get());
  if (verified.is_finished()) {
    RunOnWorker([task = std::move(task), verified] { task(verified.status()); }, /*urgent=*/false);
    return;
  }
  {
    MutexLock lock(fetch_mutex_);
    ++fetches_in_flight_;
  }
  verified.AddCallback([this, task = std::move(task)](const arrow::Status& status) {
    RunOnWorker([task, status] { task(status); }, /*urgent=*/false);
    MutexLock lock(fetch_mutex_);
    --fetches_in_flight_;
    fetches_done_.NotifyAll();
  });
}

void EpochPipeline::StartUnit(int64_t scheduled, int64_t i, const Unit& unit) {
  // The fetch runs on the I/O executor; when its bytes are in, a worker decodes it. The
  // callback may run right here (an already finished future), so nothing on this path may
  // lock mutex_ (ScheduleWindow holds it).
  auto fetch = StartFetch(*source_->manifest, unit, AllColumns(*source_), source_->io_context(),
                          stats_.get());
  auto decode = [this, scheduled, i, &unit, fetch] {
    const ThreadCpuTimer cpu(&unit_cpu_ns_);
    auto raw = fetch.ok() ? DecodeFetch(*source_->manifest, unit, fetch->get(), source_->pool,
                                        stats_.get())
                          : arrow::Result<std::shared_ptr<arrow::RecordBatch>>(fetch.status());
    if (!raw.ok()) return OnUnitRead(scheduled, i, raw.status());
    units_decoded_.fetch_add(1, std::memory_order_relaxed);
    auto finished = FinishUnit(*source_, unit, std::move(*raw), stats_.get());
    if (!finished.ok()) return OnUnitRead(scheduled, i, finished.status());
    // The cache keeps the unit as it is before any op that draws: those draw anew each epoch.
    auto drawn = DrawUnit(*source_, unit, *finished, plan_.config().seed, plan_.config().epoch,
                          stats_.get());
    if (!drawn.ok()) return OnUnitRead(scheduled, i, drawn.status());
    if (source_->cache != nullptr) source_->cache->Put(CacheKey(*source_, unit), **finished);
    OnUnitRead(scheduled, i, Prepare(unit, std::move(*drawn)));
  };
  if (!fetch.ok()) {
    RunOnWorker(std::move(decode), /*urgent=*/false);
    return;
  }
  {
    MutexLock lock(fetch_mutex_);
    ++fetches_in_flight_;
  }
  (*fetch)->ready.AddCallback(
      [this, decode = std::move(decode), arrived = *fetch](const arrow::Status&) {
        NoteArrived(*arrived, stats_.get());
        RunOnWorker(decode, /*urgent=*/false);
        MutexLock lock(fetch_mutex_);
        --fetches_in_flight_;
        fetches_done_.NotifyAll();
      });
}

void EpochPipeline::Pump() {
  if (cancelled_ || !error_.ok()) return;
  const auto count = static_cast<int64_t>(batches_.size());
  while (next_assemble_ < count && next_assemble_ - next_deliver_ < prefetch_) {
    const auto [first, last] = Range(next_assemble_);
    next_window_ = std::max(next_window_, first);
    while (next_window_ <= last) ScheduleWindow(next_window_++);
    std::vector<std::shared_ptr<const LoadedWindow>> needed;
    for (int64_t w = first; w <= last; ++w) {
      const WindowSlot& slot = windows_.at(w);
      if (slot.pending_units > 0) break;
      needed.push_back(slot.data);
    }
    if (static_cast<int64_t>(needed.size()) != last - first + 1) break;

    const int64_t batch = next_assemble_++;
    peak_ahead_ = std::max(peak_ahead_, next_assemble_ - next_deliver_);
    RunOnWorker(
        [this, batch, needed = std::move(needed)] {
          const auto start = Stats::Clock::now();
          const auto [begin, end] = plan_.BatchRange(batches_[batch]);
          arrow::Result<AssembledBatch> result;
          auto target = targets_ != nullptr ? targets_->For(batches_[batch]) : OutputTarget();
          if (target.ok()) {
            result = assembler_.Assemble(plan_, begin, end, needed, &*target);
          } else {
            result = target.status();
          }
          const auto done = Stats::Clock::now();
          stats_->AddAssemble(done - start);
          stats_->Trace(TraceStage::kAssemble, start, done, batches_[batch]);
          OnBatchAssembled(batch, std::move(result));
          // After the reorder buffer has it: whoever waits on the target finds it there.
          if (targets_ != nullptr) targets_->Done(batches_[batch]);
        },
        /*urgent=*/true);
    // Windows before the next batch's first are held only by the tasks that still use them.
    const int64_t keep_from =
        next_assemble_ < count ? Range(next_assemble_).first : last_window_ + 1;
    windows_.erase(windows_.begin(), windows_.lower_bound(keep_from));
  }
  if (next_assemble_ >= count) return;
  // Read ahead of the gather, in plan order: past the windows the next batch needs, at least
  // one window and at least lookahead_units_ units, so every worker has a unit to decode
  // however few units a window holds.
  const int64_t needed_last = Range(next_assemble_).second;
  int64_t ahead_units = 0;
  for (int64_t w = needed_last + 1; w < next_window_; ++w) ahead_units += UnitsOf(w);
  while (next_window_ <= last_window_ &&
         (next_window_ <= needed_last + 1 || ahead_units < lookahead_units_)) {
    if (next_window_ > needed_last) ahead_units += UnitsOf(next_window_);
    ScheduleWindow(next_window_++);
  }
}

int64_t EpochPipeline::UnitsOf(int64_t position) const {
  return plan_.windows()[plan_.window_schedule()[schedule_[position]]].num_units;
}

arrow::Result<StagedUnit> EpochPipeline::Prepare(const Unit& unit,
                                                 std::shared_ptr<arrow::RecordBatch> batch) {
  if (row_layout_ == nullptr) return StagedUnit(batch);
  const auto start = Stats::Clock::now();
  auto staged = Stage(row_layout_, batch, record_chunks_.get());
  const auto end = Stats::Clock::now();
  stats_->AddAssemble(end - start);
  stats_->Trace(TraceStage::kStage, start, end, unit.file, unit.row_group);
  return staged;
}

void EpochPipeline::OnUnitRead(int64_t window, int64_t unit_in_window,
                               arrow::Result<StagedUnit> result) {
  MutexLock lock(mutex_);
  --units_in_flight_;
  stats_->AddUnitsInFlight(-1);
  auto it = windows_.find(window);
  if (!result.ok() && !SkipUnit(it, unit_in_window, result.status())) {
    if (error_.ok()) error_ = result.status();
    ready_cv_.NotifyAll();
    return;
  }
  if (it == windows_.end()) return;  // cancelled or failed meanwhile
  WindowSlot& slot = it->second;
  ARROW_DCHECK(unit_in_window >= 0 &&
               unit_in_window < static_cast<int64_t>(slot.data->units.size()));
  ARROW_DCHECK(slot.data->units[unit_in_window].columns.empty()) << "unit read twice";
  ARROW_DCHECK_GT(slot.pending_units, 0);
  if (result.ok()) {
    slot.data->units[unit_in_window] = std::move(*result);
  } else {
    slot.data->units[unit_in_window].skipped = true;
  }
  if (--slot.pending_units == 0) Pump();
}

bool EpochPipeline::SkipUnit(std::map<int64_t, WindowSlot>::iterator window, int64_t unit_in_window,
                             const arrow::Status& error) {
  if (source_->error_budget == nullptr || window == windows_.end() || cancelled_) return false;
  const int32_t id = window->second.data->unit_ids[unit_in_window];
  const arrow::Status budget =
      source_->error_budget->Skip(id, *source_->manifest, source_->units[id], error);
  if (budget.ok()) return true;
  if (error_.ok()) error_ = budget;
  return false;
}

void EpochPipeline::OnBatchAssembled(int64_t batch, arrow::Result<AssembledBatch> result) {
  {
    MutexLock lock(mutex_);
    if (result.ok()) {
      // The reorder buffer holds batches the consumer has not taken, each assembled once.
      ARROW_DCHECK(batch >= next_deliver_ && batch < next_assemble_) << "batch " << batch;
      const bool inserted = ready_.emplace(batch, std::move(*result)).second;
      ARROW_DCHECK(inserted) << "batch " << batch << " assembled twice";
      ARROW_DCHECK_LE(static_cast<int64_t>(ready_.size()), prefetch_cap_);
    } else if (error_.ok()) {
      error_ = result.status();
    }
  }
  ready_cv_.NotifyAll();
}

StreamWork EpochPipeline::work() const {
  StreamWork work;
  work.units_decoded = units_decoded_.load(std::memory_order_relaxed);
  work.units_cached = units_cached_.load(std::memory_order_relaxed);
  work.unit_cpu_seconds = static_cast<double>(unit_cpu_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return work;
}

int64_t EpochPipeline::planned_rows_delivered() const {
  MutexLock lock(mutex_);
  return planned_rows_delivered_;
}

int64_t EpochPipeline::PeakAhead() const {
  MutexLock lock(mutex_);
  return peak_ahead_;
}

bool EpochPipeline::Deliverable() const {
  return next_deliver_ >= static_cast<int64_t>(batches_.size()) ||
         ready_.count(next_deliver_) > 0 || !error_.ok() || cancelled_;
}

bool EpochPipeline::WaitReady(std::chrono::milliseconds timeout) {
  const auto start = Stats::Clock::now();
  const auto deadline = start + timeout;
  MutexLock lock(mutex_);
  bool ready = Deliverable();
  while (!ready) {
    const bool notified = ready_cv_.WaitUntil(mutex_, deadline);
    ready = Deliverable();
    if (!notified) break;
  }
  const auto now = Stats::Clock::now();
  stats_->AddWait(now - start);
  batch_wait_ += now - start;
  if (next_deliver_ < static_cast<int64_t>(batches_.size())) {
    stats_->Trace(TraceStage::kWait, start, now, batches_[next_deliver_]);
  }
  return ready;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> EpochPipeline::Next() {
  const auto start = Stats::Clock::now();
  MutexLock lock(mutex_);
  while (!Deliverable()) ready_cv_.Wait(mutex_);
  const auto now = Stats::Clock::now();
  stats_->AddWait(now - start);
  batch_wait_ += now - start;
  if (next_deliver_ < static_cast<int64_t>(batches_.size())) {
    stats_->Trace(TraceStage::kWait, start, now, batches_[next_deliver_]);
  }
  if (next_deliver_ >= static_cast<int64_t>(batches_.size())) return nullptr;
  auto it = ready_.find(next_deliver_);
  if (it == ready_.end()) {
    if (cancelled_) return arrow::Status::Cancelled("the epoch was cancelled");
    return error_;
  }
  auto assembled = std::move(it->second);
  ready_.erase(it);
  auto& batch = assembled.batch;
  ++next_deliver_;
  planned_rows_delivered_ += assembled.planned_rows;
  stats_->AddDelivered(batch->num_rows(), assembled.rows_hash);
  stats_->AddBatchWait(batch_wait_);
  if (assembled.planned_rows > batch->num_rows()) {
    stats_->AddSkippedRows(assembled.planned_rows - batch->num_rows());
  }
  if (tune_ != nullptr) {
    const int64_t busy = pool_->busy_nanos();
    const auto moved = tune_->OnBatch(static_cast<int64_t>(plan_.config().epoch), !delivered_any_,
                                      now, batch_wait_, busy - busy_seen_);
    busy_seen_ = busy;
    delivered_any_ = true;
    // Another stream of the loader may have moved it too (a server's streams).
    const TuneSetting setting = moved.has_value() ? *moved : tune_->current();
    if (!(setting == applied_)) Apply(setting);
  }
  batch_wait_ = Stats::Clock::duration::zero();
  Pump();
  return batch;
}

void EpochPipeline::Apply(const TuneSetting& setting) {
  applied_ = setting;
  pool_->SetActiveLimit(setting.threads);
  lookahead_units_ = setting.threads + setting.read_ahead;
  prefetch_ = std::clamp<int64_t>(setting.prefetch, 1, prefetch_cap_);
  const auto now = Stats::Clock::now();
  stats_->Trace(TraceStage::kTune, now, now, setting.threads, setting.prefetch);
}

}  // namespace stoker
