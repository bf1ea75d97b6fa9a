// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <vector>

#include "stoker/permutation.h"

namespace stoker {

/// Everything the order of an epoch depends on, besides the units' row counts.
struct PlanConfig {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  bool shuffle = true;
  /// Rows per shuffle window (windows are cut at unit boundaries once they hold this many).
  int64_t window_rows = 1;
  int world_size = 1;
  int rank = 0;
  int64_t batch_size = 1;
  bool drop_last = false;
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
/// the units' row counts and PlanConfig (DESIGN.md, "Plan").
///
/// The units are permuted, cut into windows of about window_rows rows, and the rows of each
/// window permuted; the epoch sequence S is the windows in order, each in its row order. Rank
/// r takes the slice S[r*q, (r+1)*q) with q = floor(T / world_size) and cuts it into batches.
class EpochPlan {
 public:
  /// unit_rows[i] is the row count of unit i (> 0).
  static arrow::Result<EpochPlan> Make(const std::vector<int64_t>& unit_rows,
                                       const PlanConfig& config);

  /// Units in epoch order (indices into the manifest's units).
  const std::vector<int32_t>& unit_order() const { return unit_order_; }
  const std::vector<Window>& windows() const { return windows_; }
  /// Rows of the epoch sequence S (all ranks).
  int64_t total_rows() const { return total_rows_; }
  /// This rank's slice of S: [rank_begin, rank_end).
  int64_t rank_begin() const { return rank_begin_; }
  int64_t rank_end() const { return rank_end_; }
  /// Batches this rank delivers this epoch.
  int64_t num_batches() const { return num_batches_; }
  /// Positions in S of batch b: [first, second).
  std::pair<int64_t, int64_t> BatchRange(int64_t b) const;
  /// Window holding position `pos` of S.
  int64_t WindowOf(int64_t pos) const;
  /// The permutation of window `window`'s rows (build once, use for many positions).
  Permutation WindowRows(int64_t window) const;
  /// Where position `pos` of S comes from, given its window and that window's permutation.
  RowSource Locate(int64_t pos, int64_t window, const Permutation& rows) const;

 private:
  PlanConfig config_;
  std::vector<int32_t> unit_order_;
  /// unit_offset_[i]: rows before unit_order_[i] within its window; parallel to unit_order_.
  std::vector<int64_t> unit_offset_;
  std::vector<Window> windows_;
  int64_t total_rows_ = 0;
  int64_t rank_begin_ = 0;
  int64_t rank_end_ = 0;
  int64_t num_batches_ = 0;
};

/// Batches each rank gets from an epoch of `total_rows` rows (every rank gets the same).
int64_t BatchesPerRank(int64_t total_rows, const PlanConfig& config);

/// Plan levels: independent streams of randomness per epoch.
inline constexpr uint64_t kUnitOrderLevel = 0;
inline constexpr uint64_t kWindowRowsLevel = 1;

}  // namespace stoker
