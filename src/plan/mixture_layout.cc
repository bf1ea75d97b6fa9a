// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/mixture_layout.h"

#include <algorithm>
#include <utility>

namespace stoker {

arrow::Result<MixtureLayout> MixtureLayout::Make(const MixturePlan& plan, int64_t epoch,
                                                 const std::vector<Segment>& segments,
                                                 const std::vector<int64_t>& starts,
                                                 int64_t batch_size, bool drop_last) {
  const auto n = static_cast<size_t>(plan.num_sources());
  if (starts.size() != n) {
    return arrow::Status::Invalid("a mixture layout needs one start per source, got ",
                                  starts.size(), " for ", n);
  }
  if (batch_size < 1 || epoch < 0) {
    return arrow::Status::Invalid("a mixture layout needs batch_size >= 1 and epoch >= 0");
  }
  int64_t total = 0;
  for (const Segment& segment : segments) {
    if (segment.begin < 0 || segment.end <= segment.begin || segment.end > plan.epoch_rows()) {
      return arrow::Status::Invalid("segment [", segment.begin, ", ", segment.end,
                                    ") is not inside the mixture's epoch of ", plan.epoch_rows(),
                                    " positions");
    }
    total += segment.end - segment.begin;
  }
  const int64_t num_batches =
      drop_last ? total / batch_size : (total + batch_size - 1) / batch_size;

  MixtureLayout layout;
  layout.pieces_.resize(n);
  layout.batch_rows_.reserve(static_cast<size_t>(num_batches));
  size_t segment = 0;
  int64_t position = segments.empty() ? 0 : segments[0].begin;
  std::vector<int64_t> before;  // rows of each source before `position`; empty: recompute
  int64_t block = -1;           // the plan block `block_sources` holds
  std::vector<uint8_t> block_sources;
  std::vector<int64_t> stretch(n);
  // This batch's runs of each source's stream: (start, rows).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(n);
  for (int64_t b = 0; b < num_batches; ++b) {
    int64_t rows = std::min(batch_size, total - b * batch_size);
    for (auto& source_runs : runs) source_runs.clear();
    while (rows > 0) {
      const Segment& current = segments[segment];
      if (before.empty()) before = plan.RowsBefore(epoch, position);
      const int64_t take = std::min(rows, current.end - position);
      // The positions each source fills in [position, position + take).
      std::fill(stretch.begin(), stretch.end(), 0);
      for (int64_t p = position, left = take; left > 0;) {
        const int64_t here = p / plan.block_rows();
        const int64_t offset = p % plan.block_rows();
        if (here != block) {
          block = here;
          block_sources = plan.BlockSources(epoch, block);
        }
        const int64_t m = std::min(left, static_cast<int64_t>(block_sources.size()) - offset);
        const uint8_t* sources = block_sources.data() + offset;
        for (int64_t i = 0; i < m; ++i) ++stretch[sources[i]];
        p += m;
        left -= m;
      }
      for (size_t s = 0; s < n; ++s) {
        if (stretch[s] == 0) continue;
        const int64_t start = starts[s] + before[s];
        auto& source_runs = runs[s];
        if (!source_runs.empty() && source_runs.back().first + source_runs.back().second == start) {
          source_runs.back().second += stretch[s];
        } else {
          source_runs.emplace_back(start, stretch[s]);
        }
        before[s] += stretch[s];
      }
      position += take;
      rows -= take;
      if (position == current.end && segment + 1 < segments.size()) {
        ++segment;
        position = segments[segment].begin;
        before.clear();
      }
    }
    int64_t offset = 0;
    for (size_t s = 0; s < n; ++s) {
      for (const auto& [start, count] : runs[s]) {
        layout.pieces_[s].push_back({start, count, b, offset});
        offset += count;
      }
    }
    layout.batch_rows_.push_back(offset);
  }
  return layout;
}

}  // namespace stoker
