// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/plan.h"

#include <arrow/util/logging.h>

#include <algorithm>
#include <type_traits>

namespace stoker {

namespace {

int64_t Length(const std::vector<Segment>& sequence) {
  int64_t n = 0;
  for (const auto& segment : sequence) n += segment.end - segment.begin;
  return n;
}

arrow::Status CheckResumeRounds(const PlanConfig& config) {
  if (config.world_size > kMaxWorldSize) {
    return arrow::Status::Invalid("world_size ", config.world_size, " is above the limit of ",
                                  kMaxWorldSize);
  }
  if (config.resumed.size() > kMaxResumeRounds) {
    return arrow::Status::Invalid("a resume state with ", config.resumed.size(),
                                  " rounds is above the limit of ", kMaxResumeRounds,
                                  " (a round is added only when the world size changes)");
  }
  int64_t ranks = 0;
  for (const auto& round : config.resumed) {
    if (round.world_size < 1 || round.world_size > kMaxWorldSize || round.rows_per_rank < 0) {
      return arrow::Status::Invalid("invalid resume round (world_size ", round.world_size,
                                    ", rows ", round.rows_per_rank, ")");
    }
    ranks += round.world_size;
  }
  if (ranks > kMaxResumeRanks) {
    return arrow::Status::Invalid("resume rounds with ", ranks,
                                  " ranks in all are above the limit of ", kMaxResumeRanks);
  }
  return arrow::Status::OK();
}

// Reads ascending, disjoint position ranges of a sequence of segments in one forward pass.
class SequenceReader {
 public:
  explicit SequenceReader(const std::vector<Segment>& sequence) : sequence_(sequence) {}

  // Appends positions [from, to) to `out`; `from` must not be below an earlier call's `to`.
  void Take(int64_t from, int64_t to, std::vector<Segment>* out) {
    while (index_ < sequence_.size() && offset_ + Length(sequence_[index_]) <= from) {
      offset_ += Length(sequence_[index_++]);
    }
    int64_t offset = offset_;
    for (size_t i = index_; i < sequence_.size() && offset < to; ++i) {
      const Segment& segment = sequence_[i];
      const int64_t lo = std::max(from, offset);
      const int64_t hi = std::min(to, offset + Length(segment));
      if (lo < hi) out->push_back({segment.begin + (lo - offset), segment.begin + (hi - offset)});
      offset += Length(segment);
    }
  }

 private:
  static int64_t Length(const Segment& segment) { return segment.end - segment.begin; }

  const std::vector<Segment>& sequence_;
  size_t index_ = 0;
  int64_t offset_ = 0;
};

// What one round leaves of `remaining`: each of its ranks' shares past what the rank
// consumed, then the rows its split left over (they stay in play, so a round drops at most
// world_size - 1 rows in all; none with exactly_once, whose shares cover every row). One
// forward pass: linear in the segments and the round's world size.
std::vector<Segment> AfterRound(const std::vector<Segment>& remaining, const ResumeRound& round,
                                bool exactly_once) {
  const int64_t n = Length(remaining);
  std::vector<Segment> next;
  SequenceReader reader(remaining);
  int64_t shared = 0;  // end of the last share
  for (int r = 0; r < round.world_size; ++r) {
    const auto [first, last] = ShareRange(n, round.world_size, r, exactly_once);
    const int64_t consumed = std::min(round.rows_per_rank, last - first);
    reader.Take(first + consumed, last, &next);
    shared = last;
  }
  reader.Take(shared, n, &next);
  return next;
}

}  // namespace

arrow::Result<EpochPlan> EpochPlan::Make(const std::vector<int64_t>& unit_rows,
                                         const PlanConfig& config) {
  if (config.batch_size < 1 || config.world_size < 1 || config.rank < 0 ||
      config.rank >= config.world_size || config.window_rows < 1) {
    return arrow::Status::Invalid("invalid plan configuration");
  }
  if (config.plan_version < kFirstPlanVersion || config.plan_version > kLatestPlanVersion) {
    return arrow::Status::Invalid("plan_version must be ", kFirstPlanVersion, " to ",
                                  kLatestPlanVersion, ", got ", config.plan_version);
  }
  EpochPlan plan;
  plan.config_ = config;
  ARROW_RETURN_NOT_OK(plan.CutWindows(unit_rows));
  ARROW_RETURN_NOT_OK(CheckResumeRounds(config));
  plan.TakeRankSlice();
  ARROW_RETURN_NOT_OK(plan.CheckBatchEnds());
  return plan;
}

arrow::Status EpochPlan::CutWindows(const std::vector<int64_t>& unit_rows) {
  const auto num_units = static_cast<uint64_t>(unit_rows.size());
  const Permutation unit_perm(num_units, DeriveKey(config_.seed, config_.epoch, kUnitOrderLevel, 0),
                              !config_.shuffle, config_.plan_version);
  unit_order_.resize(num_units);
  unit_offset_.resize(num_units);
  int64_t position = 0;
  Window window;
  for (uint64_t i = 0; i < num_units; ++i) {
    const auto unit = static_cast<int32_t>(unit_perm(i));
    const int64_t rows = unit_rows[unit];
    if (rows <= 0) return arrow::Status::Invalid("unit ", unit, " has no rows");
    unit_order_[i] = unit;
    unit_offset_[i] = window.num_rows;
    window.num_units += 1;
    window.num_rows += rows;
    position += rows;
    if (window.num_rows >= config_.window_rows || i + 1 == num_units) {
      window.row_key = DeriveKey(config_.seed, config_.epoch, kWindowRowsLevel,
                                 static_cast<uint64_t>(windows_.size()));
      windows_.push_back(window);
      window = Window{};
      window.first_unit = static_cast<int64_t>(i + 1);
      window.first_row = position;
    }
  }
  total_rows_ = position;
  return arrow::Status::OK();
}

void EpochPlan::TakeRankSlice() {
  const std::vector<Segment> remaining =
      RemainingSegments(total_rows_, config_.resumed, config_.exactly_once);
  const int64_t n = Length(remaining);
  const auto [first, last] = ShareRange(n, config_.world_size, config_.rank, config_.exactly_once);
  segments_ = SliceSegments(remaining, first, last);
  for (const auto& segment : segments_) {
    segment_offset_.push_back(real_rows_);
    real_rows_ += segment.end - segment.begin;
    for (int64_t w = WindowOf(segment.begin); w <= WindowOf(segment.end - 1); ++w) {
      if (window_schedule_.empty() || window_schedule_.back() < w) window_schedule_.push_back(w);
    }
  }
  rank_rows_ = real_rows_;
  if (config_.pad_to_equal_steps && n > 0) TakePadding(remaining, last);
  num_batches_ = BatchesPerRank(rank_rows_, config_);
}

void EpochPlan::TakePadding(const std::vector<Segment>& remaining, int64_t share_end) {
  // Rank 0 holds the largest share; every rank delivers as many full batches as it needs.
  const auto [first0, last0] =
      ShareRange(Length(remaining), config_.world_size, 0, config_.exactly_once);
  const int64_t steps = (last0 - first0 + config_.batch_size - 1) / config_.batch_size;
  rank_rows_ = steps * config_.batch_size;
  // The share's last row, or for an empty share (only ranks after the first) the row before
  // it: a row of a window the rank reads last, so padding loads nothing earlier again.
  pad_position_ = SliceSegments(remaining, share_end - 1, share_end)[0].begin;
  const int64_t w = WindowOf(pad_position_);
  if (window_schedule_.empty() || window_schedule_.back() < w) window_schedule_.push_back(w);
}

int64_t BatchesPerRank(int64_t rows_per_rank, const PlanConfig& config) {
  return config.drop_last ? rows_per_rank / config.batch_size
                          : (rows_per_rank + config.batch_size - 1) / config.batch_size;
}

std::vector<Segment> SliceSegments(const std::vector<Segment>& sequence, int64_t from, int64_t to) {
  std::vector<Segment> out;
  int64_t offset = 0;
  for (const auto& segment : sequence) {
    const int64_t length = segment.end - segment.begin;
    const int64_t lo = std::max(from, offset);
    const int64_t hi = std::min(to, offset + length);
    if (lo < hi) {
      out.push_back({segment.begin + (lo - offset), segment.begin + (hi - offset)});
    }
    offset += length;
  }
  return out;
}

std::pair<int64_t, int64_t> ShareRange(int64_t n, int world_size, int rank, bool exactly_once) {
  const int64_t q = n / world_size;
  if (!exactly_once) return {rank * q, (rank + 1) * q};
  const int64_t extra = n % world_size;
  auto start = [&](int64_t r) { return r * q + std::min(r, extra); };
  return {start(rank), start(rank + 1)};
}

std::vector<Segment> RemainingSegments(int64_t total_rows, const std::vector<ResumeRound>& resumed,
                                       bool exactly_once) {
  std::vector<Segment> remaining;
  if (total_rows > 0) remaining.push_back({0, total_rows});
  for (const auto& round : resumed) remaining = AfterRound(remaining, round, exactly_once);
  return remaining;
}

std::vector<Segment> RankSegments(int64_t total_rows, const std::vector<ResumeRound>& resumed,
                                  int world_size, int rank, bool exactly_once) {
  const auto remaining = RemainingSegments(total_rows, resumed, exactly_once);
  const auto [first, last] = ShareRange(Length(remaining), world_size, rank, exactly_once);
  return SliceSegments(remaining, first, last);
}

arrow::Status EpochPlan::CheckBatchEnds() {
  const std::vector<int64_t>& ends = config_.batch_ends;
  if (ends.empty()) return arrow::Status::OK();
  int64_t last = 0;
  for (const int64_t end : ends) {
    if (end <= last) {
      return arrow::Status::Invalid("batch_ends must increase from above 0, got ", end, " after ",
                                    last);
    }
    last = end;
  }
  if (last != rank_rows_) {
    return arrow::Status::Invalid("batch_ends end at ", last, ", the rank has ", rank_rows_,
                                  " rows");
  }
  num_batches_ = static_cast<int64_t>(ends.size());
  return arrow::Status::OK();
}

std::pair<int64_t, int64_t> EpochPlan::BatchRange(int64_t b) const {
  ARROW_DCHECK(b >= 0 && b < num_batches_) << "batch " << b << " of " << num_batches_;
  const std::vector<int64_t>& ends = config_.batch_ends;
  if (!ends.empty()) return {b == 0 ? 0 : ends[b - 1], ends[b]};
  const int64_t first = b * config_.batch_size;
  return {first, std::min(first + config_.batch_size, rank_rows_)};
}

int64_t EpochPlan::Position(int64_t offset) const {
  ARROW_DCHECK(offset >= 0 && offset < rank_rows_) << "offset " << offset << " of " << rank_rows_;
  if (offset >= real_rows_) return pad_position_;
  const auto it = std::upper_bound(segment_offset_.begin(), segment_offset_.end(), offset) - 1;
  return segments_[it - segment_offset_.begin()].begin + (offset - *it);
}

std::pair<int64_t, int64_t> EpochPlan::ScheduleRange(int64_t b) const {
  const auto [first, last] = BatchRange(b);
  auto index = [this](int64_t pos) {
    const int64_t w = WindowOf(pos);
    return static_cast<int64_t>(
        std::lower_bound(window_schedule_.begin(), window_schedule_.end(), w) -
        window_schedule_.begin());
  };
  return {index(Position(first)), index(Position(last - 1))};
}

int64_t EpochPlan::WindowOf(int64_t pos) const {
  ARROW_DCHECK(pos >= 0 && pos < total_rows_) << "position " << pos << " of " << total_rows_;
  auto it = std::upper_bound(windows_.begin(), windows_.end(), pos,
                             [](int64_t p, const Window& w) { return p < w.first_row; });
  return static_cast<int64_t>(it - windows_.begin()) - 1;
}

std::vector<int64_t> EpochPlan::WindowChunkEnds(int64_t min_rows) const {
  std::vector<int64_t> ends;
  int64_t run_window = -1;  // the window of the run being walked
  int64_t chunk_rows = 0;   // rows of the open chunk before that run
  int64_t offset = 0;       // rank-local offset of the run's start
  // A run of `rows` rows of `window` at the current offset.
  auto add_run = [&](int64_t window, int64_t rows) {
    if (window != run_window && run_window >= 0 && chunk_rows >= min_rows) {
      ends.push_back(offset);
      chunk_rows = 0;
    }
    run_window = window;
    chunk_rows += rows;
    offset += rows;
  };
  for (const Segment& segment : segments_) {
    for (int64_t pos = segment.begin; pos < segment.end;) {
      const int64_t w = WindowOf(pos);
      const int64_t end = std::min(segment.end, windows_[w].first_row + windows_[w].num_rows);
      add_run(w, end - pos);
      pos = end;
    }
  }
  if (rank_rows_ > real_rows_) add_run(WindowOf(pad_position_), rank_rows_ - real_rows_);
  if (offset > 0) ends.push_back(offset);
  return ends;
}

Permutation EpochPlan::WindowRows(int64_t window) const {
  ARROW_DCHECK(window >= 0 && window < static_cast<int64_t>(windows_.size())) << window;
  const Window& w = windows_[window];
  return Permutation(static_cast<uint64_t>(w.num_rows), w.row_key, !config_.shuffle,
                     config_.plan_version);
}

RowSource EpochPlan::Locate(int64_t pos, int64_t window, const Permutation& rows) const {
  ARROW_DCHECK(window >= 0 && window < static_cast<int64_t>(windows_.size())) << window;
  const Window& w = windows_[window];
  ARROW_DCHECK(pos >= w.first_row && pos < w.first_row + w.num_rows)
      << "position " << pos << " is not in window " << window;
  ARROW_DCHECK_EQ(rows.size(), static_cast<uint64_t>(w.num_rows));
  const auto k = static_cast<int64_t>(rows(static_cast<uint64_t>(pos - w.first_row)));
  const auto begin = unit_offset_.begin() + w.first_unit;
  const auto end = begin + w.num_units;
  const auto it = std::upper_bound(begin, end, k) - 1;
  RowSource source;
  source.window = window;
  source.unit_in_window = it - begin;
  source.row = k - *it;
  return source;
}

void EpochPlan::LocateRange(int64_t begin, int64_t end, std::vector<RowSource>* out) const {
  out->resize(end - begin);
  const int64_t real_end = std::min(end, real_rows_);
  if (begin < real_end) LocateRealRange(begin, real_end, out->data());
  if (real_end < end) {
    // Padding: the one padded position, located once.
    const int64_t window = WindowOf(pad_position_);
    const RowSource pad = Locate(pad_position_, window, WindowRows(window));
    std::fill(out->begin() + (std::max(begin, real_end) - begin), out->end(), pad);
  }
}

void EpochPlan::LocateRealRange(int64_t begin, int64_t end, RowSource* out) const {
  auto segment =
      static_cast<size_t>(std::upper_bound(segment_offset_.begin(), segment_offset_.end(), begin) -
                          segment_offset_.begin() - 1);
  int64_t pos = segments_[segment].begin + (begin - segment_offset_[segment]);
  int64_t window = WindowOf(pos);
  Permutation rows = WindowRows(window);
  // Runs of positions within one segment and one window, their images computed together.
  constexpr int64_t kRun = 256;
  uint64_t images[kRun];
  for (int64_t offset = begin; offset < end;) {
    if (pos >= segments_[segment].end) {
      pos = segments_[++segment].begin;
    }
    const Window* w = &windows_[window];
    if (pos < w->first_row || pos >= w->first_row + w->num_rows) {
      window = WindowOf(pos);
      rows = WindowRows(window);
      w = &windows_[window];
    }
    const int64_t run = std::min(
        {end - offset, segments_[segment].end - pos, w->first_row + w->num_rows - pos, kRun});
    ARROW_DCHECK_GT(run, 0);
    rows.Map(static_cast<uint64_t>(pos - w->first_row), static_cast<size_t>(run), images);
    // The unit holding row k: the last offset <= k, by a binary search without branches
    // (the images are random, so a branch on each comparison would be mispredicted half the
    // time; a window of DLRM's 6,144-row units holds 43 of them, a linear scan ~20 steps).
    const int64_t* unit_offsets = unit_offset_.data() + w->first_unit;
    for (int64_t j = 0; j < run; ++j) {
      const auto k = static_cast<int64_t>(images[j]);
      const int64_t* base = unit_offsets;  // unit_offsets[0] == 0 <= k
      for (int64_t n = w->num_units; n > 1;) {
        const int64_t half = n / 2;
        base = base[half] <= k ? base + half : base;
        n -= half;
      }
      const int64_t unit = base - unit_offsets;
      RowSource& source = out[offset - begin + j];
      source.window = window;
      source.unit_in_window = unit;
      source.row = k - unit_offsets[unit];
    }
    offset += run;
    pos += run;
  }
}

int64_t EpochPlan::HeldBytes() const {
  auto bytes = [](const auto& v) {
    return static_cast<int64_t>(v.capacity() *
                                sizeof(typename std::decay_t<decltype(v)>::value_type));
  };
  return static_cast<int64_t>(sizeof(EpochPlan)) + bytes(unit_order_) + bytes(unit_offset_) +
         bytes(windows_) + bytes(segments_) + bytes(segment_offset_) + bytes(window_schedule_) +
         bytes(config_.batch_ends);
}

}  // namespace stoker
