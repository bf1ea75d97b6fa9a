// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/autotune.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace stoker {

namespace {

constexpr double kBusyForThreads = 0.75;  // active workers this busy: the stall is theirs
constexpr double kUpMustCut = 0.9;        // an up-move must bring the stall under this × before
constexpr int kLowWindowsToShrink = 3;
constexpr int kMaxHold = 256;

std::string Percent(double share) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", share * 100);
  return text;
}

const char* KnobName(int knob) {
  return knob == 0 ? "threads" : knob == 1 ? "prefetch" : "read-ahead";
}

}  // namespace

TuneState::TuneState(AutotuneOptions options, TuneBounds bounds, TuneSetting start,
                     std::shared_ptr<NodeShare> node, int share)
    : options_(options), bounds_(bounds), node_(std::move(node)), share_(share) {
  {
    MutexLock lock(mutex_);
    current_ = start;
  }
  MutexLock lock(tuner_mutex_);
  tuner_ = std::make_unique<Autotuner>(this);
}

TuneState::~TuneState() = default;

std::optional<TuneSetting> TuneState::OnBatch(int64_t epoch, bool first, Clock::time_point now,
                                              Clock::duration wait, int64_t busy_nanos) {
  MutexLock lock(tuner_mutex_);
  return tuner_->OnBatch(epoch, first, now, wait, busy_nanos);
}

TuneSetting TuneState::current() const {
  MutexLock lock(mutex_);
  return current_;
}

void TuneState::Record(TuneDecision decision) {
  MutexLock lock(mutex_);
  current_ = decision.to;
  ++decisions_;
  recent_.push_back(std::move(decision));
  if (recent_.size() > kKeptDecisions) recent_.pop_front();
}

std::vector<TuneDecision> TuneState::recent() const {
  MutexLock lock(mutex_);
  return {recent_.begin(), recent_.end()};
}

int64_t TuneState::decisions() const {
  MutexLock lock(mutex_);
  return decisions_;
}

int64_t TuneState::windows() const {
  MutexLock lock(mutex_);
  return windows_;
}

void TuneState::CountWindow() {
  MutexLock lock(mutex_);
  ++windows_;
}

Autotuner::Autotuner(TuneState* state)
    : state_(state), setting_(state_->current()), random_(RandomMoves(state_->options())) {}

int& Autotuner::Value(TuneSetting* setting, Knob knob) const {
  switch (knob) {
    case kThreads:
      return setting->threads;
    case kPrefetch:
      return setting->prefetch;
    case kReadAhead:
      break;
  }
  return setting->read_ahead;
}

int Autotuner::Max(Knob knob) const {
  const TuneBounds& bounds = state_->bounds();
  switch (knob) {
    case kThreads:
      return std::min(bounds.max_threads, thread_cap_);
    case kPrefetch:
      return bounds.max_prefetch;
    case kReadAhead:
      break;
  }
  return bounds.max_read_ahead;
}

bool Autotuner::Tuned(Knob knob) const {
  const TuneBounds& bounds = state_->bounds();
  switch (knob) {
    case kThreads:
      return bounds.tune_threads;
    case kPrefetch:
      return bounds.tune_prefetch;
    case kReadAhead:
      break;
  }
  return bounds.tune_read_ahead;
}

std::optional<TuneSetting> Autotuner::OnBatch(int64_t epoch, bool first, Clock::time_point now,
                                              Clock::duration wait, int64_t busy_nanos) {
  ++batches_;
  epoch_ = epoch;
  if (RandomMoves(state_->options()) != 0) {
    auto decision = RandomMove();
    if (!decision.has_value()) return std::nullopt;
    return Made(std::move(*decision), now);
  }
  if (first) {
    // A stream's first batch: its wait is the pipeline filling, not a stall, and the time
    // since the last stream's last batch (the caller's work between epochs) is no window's.
    if (!started_) {
      started_ = true;
      window_start_ = now;
    } else {
      window_start_ += now - last_batch_;
    }
    last_batch_ = now;
    return std::nullopt;
  }
  last_batch_ = now;
  window_wait_ += wait;
  window_busy_ += busy_nanos;
  ++window_batches_;
  const double elapsed = std::chrono::duration<double>(now - window_start_).count();
  if (window_batches_ < state_->options().window_batches ||
      elapsed < state_->options().window_seconds || elapsed <= 0) {
    return std::nullopt;
  }
  const double stall = std::chrono::duration<double>(window_wait_).count() / elapsed;
  const double busy =
      static_cast<double>(window_busy_) / 1e9 / (elapsed * std::max(setting_.threads, 1));
  window_start_ = now;
  window_wait_ = Clock::duration::zero();
  window_batches_ = 0;
  window_busy_ = 0;
  state_->CountWindow();
  int cap = kNoCap;
  if (const auto& node = state_->node()) {
    node->Publish(setting_.threads, std::min(busy, 1.0) * setting_.threads);
    cap = node->Allowance(state_->share());
  }
  auto decision = Decide(stall, std::min(busy, 1.0), cap);
  if (!decision.has_value()) return std::nullopt;
  return Made(std::move(*decision), now);
}

std::optional<TuneSetting> Autotuner::Made(TuneDecision decision, Clock::time_point now) {
  decision.at_seconds = std::chrono::duration<double>(now - state_->origin()).count();
  state_->Record(std::move(decision));
  return setting_;
}

TuneDecision Autotuner::Begin(std::string action, std::string reason, double stall,
                              double busy) const {
  TuneDecision decision;
  decision.epoch = epoch_;
  decision.batch = batches_;
  decision.from = setting_;
  decision.action = std::move(action);
  decision.reason = std::move(reason);
  decision.stall = stall;
  decision.busy = busy;
  return decision;
}

std::optional<TuneDecision> Autotuner::Decide(double stall, double busy, int thread_cap) {
  const double target = state_->options().target_stall;
  for (int knob = 0; knob < kKnobs; ++knob) {
    hold_up_[knob] = std::max(hold_up_[knob] - 1, 0);
    hold_down_[knob] = std::max(hold_down_[knob] - 1, 0);
  }
  thread_cap_ = std::max(thread_cap, 1);
  // The node's other ranks need CPUs this one holds: give them back before anything else.
  if (Tuned(kThreads) && setting_.threads > Max(kThreads)) {
    pending_.reset();
    auto decision =
        Begin("threads down",
              "the node's other ranks need their CPUs: " + std::to_string(Max(kThreads)) +
                  " workers is this rank's allowance",
              stall, busy);
    setting_.threads = Max(kThreads);
    decision.to = setting_;
    return decision;
  }
  // The window after a move judges it.
  if (pending_.has_value()) {
    const Pending moved = *pending_;
    pending_.reset();
    const bool failed = moved.up ? stall >= moved.stall_before * kUpMustCut : stall > target;
    if (failed) {
      int* hold = moved.up ? hold_up_ : hold_down_;
      hold[moved.knob] = next_hold_[moved.knob];
      next_hold_[moved.knob] = std::min(next_hold_[moved.knob] * 2, kMaxHold);
      const std::string why =
          moved.up
              ? "stall " + Percent(stall) + " after the move, " + Percent(moved.stall_before) +
                    " before: not cut by a tenth"
              : "stall " + Percent(stall) + " after the move, over the target " + Percent(target);
      auto decision =
          Begin(std::string("undo ") + KnobName(moved.knob) + (moved.up ? " up" : " down"),
                why + "; held for " + std::to_string(hold[moved.knob]) + " windows", stall, busy);
      setting_ = moved.before;
      decision.to = setting_;
      low_windows_ = 0;
      return decision;
    }
    if (moved.up) {
      // The setting below was too small: do not go back down to it soon (each time longer).
      hold_down_[moved.knob] = next_hold_[moved.knob];
      next_hold_[moved.knob] = std::min(next_hold_[moved.knob] * 2, kMaxHold);
    }
  }
  if (stall > target) {
    low_windows_ = 0;
    auto can_up = [&](Knob knob) {
      return Tuned(knob) && Value(&setting_, knob) < Max(knob) && hold_up_[knob] == 0;
    };
    const std::string why = "stall " + Percent(stall) + " > target " + Percent(target) +
                            ", workers " + Percent(busy) + " busy";
    if (busy >= kBusyForThreads && can_up(kThreads)) return Move(kThreads, true, stall, busy, why);
    if (can_up(kPrefetch)) return Move(kPrefetch, true, stall, busy, why);
    if (can_up(kReadAhead)) return Move(kReadAhead, true, stall, busy, why);
    if (can_up(kThreads)) return Move(kThreads, true, stall, busy, why);
    return std::nullopt;  // at the bounds (or held): nothing left to give
  }
  if (stall < target / 4) {
    if (++low_windows_ < kLowWindowsToShrink) return std::nullopt;
    low_windows_ = 0;
    auto can_down = [&](Knob knob) {
      return Tuned(knob) && Value(&setting_, knob) > Min(knob) && hold_down_[knob] == 0;
    };
    const std::string why = "stall " + Percent(stall) + " < " + Percent(target / 4) + " for " +
                            std::to_string(kLowWindowsToShrink) + " windows";
    if (can_down(kThreads)) return Move(kThreads, false, stall, busy, why);
    if (can_down(kPrefetch)) return Move(kPrefetch, false, stall, busy, why);
    if (can_down(kReadAhead)) return Move(kReadAhead, false, stall, busy, why);
    return std::nullopt;
  }
  low_windows_ = 0;
  return std::nullopt;
}

std::optional<TuneDecision> Autotuner::Move(Knob knob, bool up, double stall, double busy,
                                            const std::string& reason) {
  auto decision = Begin(std::string(KnobName(knob)) + (up ? " up" : " down"), reason, stall, busy);
  int& value = Value(&setting_, knob);
  const int stepped = up ? std::max(value + 1, static_cast<int>(std::ceil(value * 1.5)))
                         : std::min(value - 1, static_cast<int>(std::floor(value * 0.75)));
  value = std::clamp(stepped, Min(knob), std::max(Max(knob), Min(knob)));
  decision.to = setting_;
  pending_ = Pending{knob, up, decision.from, stall};
  return decision;
}

std::optional<TuneDecision> Autotuner::RandomMove() {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();  // no window made it
  auto decision = Begin("random", "random_moves", kNone, kNone);
  for (Knob knob : {kThreads, kPrefetch, kReadAhead}) {
    if (!Tuned(knob)) continue;
    Value(&setting_, knob) =
        std::uniform_int_distribution<int>(Min(knob), std::max(Max(knob), Min(knob)))(random_);
  }
  if (setting_ == decision.from) return std::nullopt;
  decision.to = setting_;
  return decision;
}

}  // namespace stoker
