// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <vector>

#include "plan/permutation.h"
#include "stoker/resume.h"

namespace stoker {

/// A half-open range [begin, end) of positions in the epoch sequence S.
struct Segment {
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const Segment&) const = default;
};

/// Everything the order of an epoch depends on, besides the units' row counts.
struct PlanConfig {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  bool shuffle = true;
  /// Which plan to follow (kFirstPlanVersion .. kLatestPlanVersion, plan/permutation.h): the
  /// same seed gives other batches under another version.
  int plan_version = kLatestPlanVersion;
  /// Rows per shuffle window (windows are cut at unit boundaries once they hold this many).
  int64_t window_rows = 1;
  int world_size = 1;
  int rank = 0;
  int64_t batch_size = 1;
  bool drop_last = false;
  /// Evaluation: every row of S exactly once. Ranks take contiguous shares of S that differ
  /// by at most one row (the first T mod world_size ranks take one more) instead of equal
  /// slices that leave up to world_size - 1 rows out. drop_last must be false.
  bool exactly_once = false;
  /// With exactly_once: every rank gets the same number of full batches, the rows past its
  /// share being padding (its last real row repeated; EpochPlan::real_rows() says where the
  /// padding starts).
  bool pad_to_equal_steps = false;
  /// Earlier stretches of this epoch, oldest first (empty for a fresh epoch). The rows they
  /// consumed are removed from S; what remains, in order, is split among world_size ranks.
  std::vector<ResumeRound> resumed;
  /// Where this rank's batches end, as rank-local offsets: increasing, the last one the
  /// rank's rows, padding included. Empty: batches of batch_size (and drop_last). How a
  /// mixture cuts a source's epoch at the mixed batches' boundaries (mixture/mixture_layout.h),
  /// and a share of whole windows cuts a rank's batches into pieces (LoaderImpl::StreamSpec).
  std::vector<int64_t> batch_ends;
};

/// A window: consecutive units of the permuted unit order whose rows are mixed together.
struct Window {
  /// Index into EpochPlan::unit_order() of the window's first unit.
  int64_t first_unit = 0;
  int64_t num_units = 0;
  /// Position of the window's first row in the epoch sequence S.
  int64_t first_row = 0;
  int64_t num_rows = 0;
  /// Key of the permutation of the window's rows.
  uint64_t row_key = 0;
};

/// Where a position of the epoch sequence comes from.
struct RowSource {
  /// Window index.
  int64_t window = 0;
  /// Index of the unit within its window (0 .. num_units - 1).
  int64_t unit_in_window = 0;
  /// Row within that unit.
  int64_t row = 0;
};

/// The order of one epoch for one rank, decided before any data is read: a pure function of
/// the units' row counts and PlanConfig (docs/design.md, "Plan").
///
/// The units are permuted, cut into windows of about window_rows rows, and the rows of each
/// window permuted; the epoch sequence S is the windows in order, each in its row order. Rank
/// r takes the slice S[r*q, (r+1)*q) with q = floor(T / world_size) and cuts it into batches.
///
/// After resumed rounds (N ranks that each consumed c rows), the remaining sequence is the
/// unconsumed rest of every old slice, in rank order, then the rows the old split left over;
/// it is split the same way among the new ranks. With the same world size this continues
/// each rank exactly where it stopped.
///
/// With exactly_once (evaluation) the slices are the balanced shares of ShareRange, which
/// leave no row out, and a resumed rank r of N counts min(c, its share) rows as consumed;
/// with pad_to_equal_steps each rank's rows are followed by padding up to the batches of
/// the largest share, all full.
class EpochPlan {
 public:
  /// unit_rows[i] is the row count of unit i (> 0).
  static arrow::Result<EpochPlan> Make(const std::vector<int64_t>& unit_rows,
                                       const PlanConfig& config);

  /// What the plan was made from (seed and epoch key the transforms' random draws too).
  const PlanConfig& config() const { return config_; }
  /// Units in epoch order (indices into the manifest's units).
  const std::vector<int32_t>& unit_order() const { return unit_order_; }
  const std::vector<Window>& windows() const { return windows_; }
  /// Rows of the epoch sequence S (all ranks).
  int64_t total_rows() const { return total_rows_; }
  /// The positions of S this rank reads, in order (one segment for a fresh epoch).
  const std::vector<Segment>& segments() const { return segments_; }
  /// Rows this rank delivers this epoch: its segments' rows, then any padding.
  int64_t rank_rows() const { return rank_rows_; }
  /// Rows of rank_rows() that are real (the sum of its segments); the rest are padding.
  int64_t real_rows() const { return real_rows_; }
  /// Batches this rank delivers this epoch.
  int64_t num_batches() const { return num_batches_; }
  /// Rank-local offsets of batch b: [first, second).
  std::pair<int64_t, int64_t> BatchRange(int64_t b) const;
  /// Position in S of the rank-local offset `offset` (< rank_rows()); padding repeats the
  /// rank's last real position.
  int64_t Position(int64_t offset) const;
  /// The distinct windows this rank reads, in increasing order.
  const std::vector<int64_t>& window_schedule() const { return window_schedule_; }
  /// Indices into window_schedule() of the first and last window batch b reads.
  std::pair<int64_t, int64_t> ScheduleRange(int64_t b) const;
  /// Window holding position `pos` of S.
  int64_t WindowOf(int64_t pos) const;
  /// The permutation of window `window`'s rows (build once, use for many positions).
  Permutation WindowRows(int64_t window) const;
  /// Where position `pos` of S comes from, given its window and that window's permutation.
  RowSource Locate(int64_t pos, int64_t window, const Permutation& rows) const;
  /// Where the rank-local offsets [begin, end) come from, in order: one pass that walks the
  /// segments and builds each window's permutation once (what a batch needs).
  void LocateRange(int64_t begin, int64_t end, std::vector<RowSource>* out) const;
  /// This rank's rows cut into chunks of whole windows, as the rank-local offsets where each
  /// chunk ends (increasing; the last is rank_rows(); empty when the rank has no rows). A
  /// chunk is consecutive runs of rows of one window each (padding is a run of the padding
  /// position's window), closed at the first run boundary once it holds at least `min_rows`
  /// rows (>= 1). No window's rows are in two chunks, since a rank's positions increase and so
  /// each window is one run: sources that take whole chunks decode different windows. How
  /// several servers share a rank's epoch (LoaderImpl::StreamSpec::chunk_rows).
  std::vector<int64_t> WindowChunkEnds(int64_t min_rows) const;
  /// Bytes the plan holds (its tables; 12 per unit plus 40 per window and a few per
  /// segment), for the memory curve in docs/large-datasets.md.
  int64_t HeldBytes() const;

 private:
  /// Permutes the units and cuts them into windows (fills unit_order_, unit_offset_,
  /// windows_, total_rows_); an error if a unit has no rows.
  arrow::Status CutWindows(const std::vector<int64_t>& unit_rows);
  /// This rank's segments of S, their offsets, the windows they read and the batch count.
  void TakeRankSlice();
  /// Pads the rank's rows up to the full batches of the largest share (pad_to_equal_steps);
  /// `share_end` is where this rank's share ends in `remaining`.
  void TakePadding(const std::vector<Segment>& remaining, int64_t share_end);
  /// With config().batch_ends: an error unless they cut exactly this rank's rows; sets the
  /// batch count.
  arrow::Status CheckBatchEnds();
  /// LocateRange over real rows only (end <= real_rows()), into out[0 .. end - begin).
  void LocateRealRange(int64_t begin, int64_t end, RowSource* out) const;

  PlanConfig config_;
  std::vector<int32_t> unit_order_;
  /// unit_offset_[i]: rows before unit_order_[i] within its window; parallel to unit_order_.
  std::vector<int64_t> unit_offset_;
  std::vector<Window> windows_;
  int64_t total_rows_ = 0;
  std::vector<Segment> segments_;
  /// segment_offset_[i]: rank-local offset where segments_[i] starts.
  std::vector<int64_t> segment_offset_;
  int64_t real_rows_ = 0;
  int64_t rank_rows_ = 0;
  /// The position padding repeats (meaningful when rank_rows_ > real_rows_).
  int64_t pad_position_ = 0;
  int64_t num_batches_ = 0;
  std::vector<int64_t> window_schedule_;
};

/// The sub-sequence [from, to) of the concatenation of `sequence`'s segments.
std::vector<Segment> SliceSegments(const std::vector<Segment>& sequence, int64_t from, int64_t to);

/// Rank `rank`'s share [first, second) of `n` rows among `world_size` ranks: equal slices of
/// floor(n / world_size) (the rest left out), or with `exactly_once` contiguous shares that
/// differ by at most one row, the larger ones first, covering all n.
std::pair<int64_t, int64_t> ShareRange(int64_t n, int world_size, int rank, bool exactly_once);

/// The sequence of S that remains after `resumed` rounds consumed their rows: `total_rows`
/// positions, each round's consumed prefixes of its shares removed (see EpochPlan).
std::vector<Segment> RemainingSegments(int64_t total_rows, const std::vector<ResumeRound>& resumed,
                                       bool exactly_once = false);

/// This rank's segments of S: `total_rows` positions, minus what `resumed` rounds consumed,
/// split among world_size ranks (see EpochPlan). Linear in the rounds' world sizes and the
/// segments they leave, which the limits below bound.
std::vector<Segment> RankSegments(int64_t total_rows, const std::vector<ResumeRound>& resumed,
                                  int world_size, int rank, bool exactly_once = false);

/// Limits on what a plan accepts, so that a state dict or a ticket from an untrusted source
/// cannot make planning take unbounded time or memory. Rounds with the same world size merge
/// (a new round starts only when the world size changes within an epoch), so real jobs stay
/// far below them. At most kMaxWorldSize segments per round: 64 MiB of segments in all.
inline constexpr int kMaxWorldSize = 1 << 20;
inline constexpr size_t kMaxResumeRounds = 1024;
inline constexpr int64_t kMaxResumeRanks = int64_t{1} << 22;

/// Batches each rank gets from `rows_per_rank` rows.
int64_t BatchesPerRank(int64_t rows_per_rank, const PlanConfig& config);

/// Plan levels: independent streams of randomness per epoch.
inline constexpr uint64_t kUnitOrderLevel = 0;
inline constexpr uint64_t kWindowRowsLevel = 1;

}  // namespace stoker
