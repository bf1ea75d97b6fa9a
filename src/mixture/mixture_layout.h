// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "mixture/mixture_plan.h"
#include "plan/plan.h"

namespace stoker {

/// Rows [start, start + rows) of a source's stream of rows (its epochs back to back) that
/// fill rows [offset, offset + rows) of mixed batch `batch`.
struct MixturePiece {
  int64_t start = 0;
  int64_t rows = 0;
  int64_t batch = 0;
  int64_t offset = 0;
  bool operator==(const MixturePiece&) const = default;
};

/// What every batch of one rank's mixture epoch takes from each source: a pure function of
/// the plan, the epoch, the rank's segments of positions, where the epoch starts in each
/// source's stream (`starts`, epoch * stride) and the batch shape.
///
/// The rank's positions are cut into batches of batch_size (the last one shorter, or left
/// out with drop_last). A batch holds its rows grouped by source, in source order; source s's
/// rows of it are the next ones of its stream, from where the rows it filled before the
/// batch's first position say (MixturePlan::RowsBefore at each segment's start, then carried).
/// A source's piece of a batch is one run of its stream, two where the batch crosses from one
/// segment to the next.
///
/// Computing it takes each source's rows before every batch's and segment's edges: the
/// plan's block of sources holding the edge, counted up to it (a few nanoseconds a position
/// of the rank's epoch), the blocks independent of each other. It holds a few pieces per
/// batch.
class MixtureLayout {
 public:
  /// Runs body(0), ..., body(n - 1), in any order and on any threads, and returns when all
  /// have run.
  using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t)>& body)>;

  /// The blocks are counted through `parallel` when given, one after another otherwise.
  static arrow::Result<MixtureLayout> Make(const MixturePlan& plan, int64_t epoch,
                                           const std::vector<Segment>& segments,
                                           const std::vector<int64_t>& starts, int64_t batch_size,
                                           bool drop_last, const ParallelFor& parallel = nullptr);

  int64_t num_batches() const { return static_cast<int64_t>(batch_rows_.size()); }
  /// Rows of batch b.
  int64_t batch_rows(int64_t b) const { return batch_rows_[b]; }
  /// Source s's pieces, in the order of its stream (and of the batches).
  const std::vector<MixturePiece>& pieces(int s) const { return pieces_[s]; }

 private:
  std::vector<int64_t> batch_rows_;
  std::vector<std::vector<MixturePiece>> pieces_;
};

}  // namespace stoker
