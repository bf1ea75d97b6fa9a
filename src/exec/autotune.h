// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The controller that sizes a loader from its own stall telemetry (docs/autotune.md): how many
// of the pool's workers take tasks, and how many batches are assembled ahead of the consumer.
// Neither decides a batch (the plan is a function of the dataset, seed, epoch and shares), so
// whatever it does, the batches are the same.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "exec/node_share.h"
#include "stoker/options.h"
#include "util/thread_annotations.h"

namespace stoker {

/// What the controller moves.
struct TuneSetting {
  /// Workers of the pool that take tasks; the read-ahead follows it (units decoded ahead).
  int threads = 1;
  /// Batches assembled or being assembled ahead of the consumer.
  int prefetch = 1;
  /// Row groups read and decoded ahead beyond the workers' count: the read-ahead is
  /// threads + read_ahead row groups past the window the next batch needs, so more reads
  /// are in flight for a source whose reads wait on the network (0: as many as workers).
  int read_ahead = 0;

  bool operator==(const TuneSetting&) const = default;
};

/// Which knobs move and how far: a knob the user set is fixed at its value.
struct TuneBounds {
  int max_threads = 1;
  int max_prefetch = 1;
  /// The reads in flight never exceed StorageOptions::io_threads: neither does read_ahead.
  int max_read_ahead = 0;
  bool tune_threads = false;
  bool tune_prefetch = false;
  bool tune_read_ahead = false;
};

/// One move, with the window's figures that made it.
struct TuneDecision {
  /// Seconds since the loader's controller state was made.
  double at_seconds = 0;
  /// The epoch and the stream's delivered batches when it was made.
  int64_t epoch = 0;
  int64_t batch = 0;
  TuneSetting from, to;
  /// "threads up", "prefetch down", "undo threads up", "random", ...
  std::string action;
  /// Why, in words with the figures ("stall 4.1% > target 1.0%, workers 93% busy").
  std::string reason;
  /// The window's stall share and the active workers' busy share (NaN for random moves).
  double stall = 0;
  double busy = 0;
};

/// What only tests set on the controller (AutotuneOptions::test_hooks).
struct AutotuneTestHooks {
  /// Non-zero: instead of deciding from windows, move every tuned knob to a random value
  /// within its bounds after every batch, from this seed. For tests that the batches do
  /// not depend on the setting (Python: autotune={"random_moves": seed}).
  uint64_t random_moves = 0;
};

/// The random moves' seed `options` set; 0 (none) without test hooks.
inline uint64_t RandomMoves(const AutotuneOptions& options) {
  return options.test_hooks == nullptr ? 0 : options.test_hooks->random_moves;
}

/// Sets the random moves' seed of `options` (0: none).
inline void SetRandomMoves(AutotuneOptions* options, uint64_t seed) {
  options->test_hooks =
      seed == 0 ? nullptr : std::make_shared<const AutotuneTestHooks>(AutotuneTestHooks{seed});
}

class Autotuner;

/// A loader's controller across its epochs and streams: the options, the bounds, the setting
/// in force (each new stream starts there), the last decisions, and the one Autotuner every
/// stream's consumer drives, so windows run on across short epochs. Thread-safe: streams of
/// one loader may run at once (a server's), and their batches then count in the same windows.
class TuneState {
 public:
  using Clock = std::chrono::steady_clock;
  /// Decisions kept (the last ones); `decisions()` counts all.
  static constexpr size_t kKeptDecisions = 64;

  /// With `node`, the workers at work may grow past `share` (this rank's equal share of the
  /// node) into CPUs the node's other ranks leave unused (NodeShare), up to bounds.max_threads.
  TuneState(AutotuneOptions options, TuneBounds bounds, TuneSetting start,
            std::shared_ptr<NodeShare> node = nullptr, int share = 0);
  ~TuneState();
  TuneState(const TuneState&) = delete;
  TuneState& operator=(const TuneState&) = delete;

  const AutotuneOptions& options() const { return options_; }
  const TuneBounds& bounds() const { return bounds_; }
  const std::shared_ptr<NodeShare>& node() const { return node_; }
  int share() const { return share_; }
  Clock::time_point origin() const { return origin_; }

  /// Counts one batch a stream of `epoch` delivered after waiting `wait` for it (`first`:
  /// the stream's first batch, whose wait is the pipeline filling and is not counted, nor
  /// the time since the last stream's last batch), while the stream's pool spent
  /// `busy_nanos` running tasks since its previous batch. Returns the setting when it moved.
  std::optional<TuneSetting> OnBatch(int64_t epoch, bool first, Clock::time_point now,
                                     Clock::duration wait, int64_t busy_nanos)
      EXCLUDES(tuner_mutex_);

  TuneSetting current() const EXCLUDES(mutex_);
  /// Records a decision and makes its setting the current one.
  void Record(TuneDecision decision) EXCLUDES(mutex_);
  /// The kept decisions, oldest first, and how many were made in all.
  std::vector<TuneDecision> recent() const EXCLUDES(mutex_);
  int64_t decisions() const EXCLUDES(mutex_);
  /// Windows evaluated in all (a window that moves nothing counts too).
  int64_t windows() const EXCLUDES(mutex_);
  void CountWindow() EXCLUDES(mutex_);

  /// The controller itself, for tests that drive Decide() directly (not thread-safe).
  Autotuner& tuner() NO_THREAD_SAFETY_ANALYSIS { return *tuner_; }

 private:
  const AutotuneOptions options_;
  const TuneBounds bounds_;
  const std::shared_ptr<NodeShare> node_;
  const int share_;
  const Clock::time_point origin_ = Clock::now();
  /// Taken before mutex_ (OnBatch records decisions).
  Mutex tuner_mutex_;
  std::unique_ptr<Autotuner> tuner_ GUARDED_BY(tuner_mutex_);
  mutable Mutex mutex_;
  TuneSetting current_ GUARDED_BY(mutex_);
  std::deque<TuneDecision> recent_ GUARDED_BY(mutex_);
  int64_t decisions_ GUARDED_BY(mutex_) = 0;
  int64_t windows_ GUARDED_BY(mutex_) = 0;
};

/// The controller, driven by the consumers of a loader's streams through TuneState::OnBatch:
/// at the end of a window (AutotuneOptions: batches and seconds) it compares the window's
/// stall share (the waits over the wall time) with the target and may move one knob by one
/// step:
///
/// - stall above target: up, workers when the active ones were busy (>= 75% of the window),
///   else prefetch (the waits are bursts the queue ahead absorbs), else the read-ahead (the
///   workers wait for reads: more of them in flight), else workers;
/// - stall below a quarter of the target for 3 windows in a row: down, workers first (they
///   are what costs CPU), then prefetch, then the read-ahead (memory);
/// - steps are x1.5 up and x0.75 down, at least one, within the bounds;
/// - the window after a move judges it: an up-move that did not cut the stall by a tenth,
///   or a down-move after which the stall went over the target, is undone, and that knob's
///   move in that direction is held for a number of windows that doubles each time
///   (4, 8, 16, ... 256); an up-move that worked holds that knob's down-moves the same way,
///   so the controller does not swing between two settings;
/// - with a NodeShare, each window publishes the CPUs the workers used, and workers above
///   what the node's other ranks leave (never below the equal share) come down first.
class Autotuner {
 public:
  using Clock = TuneState::Clock;

  /// `state` owns this controller and outlives it.
  explicit Autotuner(TuneState* state);

  const TuneSetting& setting() const { return setting_; }
  /// See TuneState::OnBatch.
  std::optional<TuneSetting> OnBatch(int64_t epoch, bool first, Clock::time_point now,
                                     Clock::duration wait, int64_t busy_nanos);

  /// The decision for a finished window, as a pure function of the controller's memory and
  /// the window's figures (tested on its own). Empty: no move. `thread_cap`: the most
  /// workers the node's other ranks leave this one now (NodeShare::Allowance); a setting
  /// above it comes down to it first.
  std::optional<TuneDecision> Decide(double stall, double busy, int thread_cap = kNoCap);
  static constexpr int kNoCap = 1 << 30;

 private:
  enum Knob { kThreads = 0, kPrefetch = 1, kReadAhead = 2 };
  static constexpr int kKnobs = 3;
  struct Pending {
    Knob knob;
    bool up;
    TuneSetting before;
    double stall_before;
  };

  std::optional<TuneDecision> Move(Knob knob, bool up, double stall, double busy,
                                   const std::string& reason);
  /// A decision made now, from the setting in force: its epoch, batch, `from`, figures and
  /// words; the caller moves setting_ and sets `to`.
  TuneDecision Begin(std::string action, std::string reason, double stall, double busy) const;
  /// Stamps `decision` with `now`, records it in the state and returns the new setting.
  std::optional<TuneSetting> Made(TuneDecision decision, Clock::time_point now);
  int& Value(TuneSetting* setting, Knob knob) const;
  int Max(Knob knob) const;
  /// The least a knob goes down to: one worker, one batch, no row group beyond the workers.
  static int Min(Knob knob) { return knob == kReadAhead ? 0 : 1; }
  bool Tuned(Knob knob) const;
  std::optional<TuneDecision> RandomMove();

  TuneState* const state_;
  TuneSetting setting_;
  int64_t epoch_ = 0;
  int64_t batches_ = 0;  // delivered, over all streams
  // The window under way.
  bool started_ = false;
  Clock::time_point window_start_;
  Clock::time_point last_batch_;
  Clock::duration window_wait_ = Clock::duration::zero();
  int64_t window_batches_ = 0;
  int64_t window_busy_ = 0;
  // Windows in a row with a stall below a quarter of the target.
  int low_windows_ = 0;
  std::optional<Pending> pending_;
  // The node's allowance at the last window (kNoCap without a NodeShare).
  int thread_cap_ = kNoCap;
  // Windows left during which a knob may not move up / down; and the next hold's length.
  int hold_up_[kKnobs] = {0, 0, 0};
  int hold_down_[kKnobs] = {0, 0, 0};
  int next_hold_[kKnobs] = {4, 4, 4};
  std::mt19937_64 random_;
};

}  // namespace stoker
