// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_layout.h"

#include <algorithm>
#include <utility>

namespace stoker {

namespace {

// A batch's part within one segment of the rank's positions: positions [begin, end).
struct Stretch {
  int64_t batch, begin, end;
};

// The rank's positions in all: an error unless every segment lies inside the plan's epoch.
arrow::Result<int64_t> CountPositions(const MixturePlan& plan,
                                      const std::vector<Segment>& segments) {
  int64_t total = 0;
  for (const Segment& segment : segments) {
    if (segment.begin < 0 || segment.end <= segment.begin || segment.end > plan.epoch_rows()) {
      return arrow::Status::Invalid("segment [", segment.begin, ", ", segment.end,
                                    ") is not inside the mixture's epoch of ", plan.epoch_rows(),
                                    " positions");
    }
    total += segment.end - segment.begin;
  }
  return total;
}

// The `total` positions of `segments` cut into `num_batches` batches of batch_size (the last
// one shorter), each cut again where it crosses from one segment to the next.
std::vector<Stretch> CutStretches(const std::vector<Segment>& segments, int64_t total,
                                  int64_t batch_size, int64_t num_batches) {
  std::vector<Stretch> stretches;
  size_t segment = 0;
  int64_t position = segments.empty() ? 0 : segments[0].begin;
  for (int64_t b = 0; b < num_batches; ++b) {
    for (int64_t rows = std::min(batch_size, total - b * batch_size); rows > 0;) {
      const int64_t take = std::min(rows, segments[segment].end - position);
      stretches.push_back({b, position, position + take});
      position += take;
      rows -= take;
      if (position == segments[segment].end && segment + 1 < segments.size()) {
        position = segments[++segment].begin;
      }
    }
  }
  return stretches;
}

// The stretches' edges, increasing, and each source's rows before each edge (RowsBefore).
struct EdgeRows {
  std::vector<int64_t> edges;
  std::vector<int64_t> before;  // edge e's rows of source s at e * num_sources + s

  // Source rows before edge `position` (one of the edges), one per source.
  const int64_t* At(int64_t position, size_t num_sources) const {
    const auto e =
        static_cast<size_t>(std::lower_bound(edges.begin(), edges.end(), position) - edges.begin());
    return before.data() + e * num_sources;
  }
};

// Counts EdgeRows block by block: a block's sources are drawn once for all the edges inside
// it; the blocks through `parallel` when given.
EdgeRows CountRowsBeforeEdges(const MixturePlan& plan, int64_t epoch,
                              const std::vector<Stretch>& stretches,
                              const MixtureLayout::ParallelFor& parallel) {
  const auto n = static_cast<size_t>(plan.num_sources());
  EdgeRows out;
  std::vector<int64_t>& edges = out.edges;
  for (const Stretch& stretch : stretches) {
    if (edges.empty() || edges.back() != stretch.begin) edges.push_back(stretch.begin);
    edges.push_back(stretch.end);
  }
  std::vector<size_t> block_first;  // index in edges of each block's first edge, then the end
  for (size_t e = 0; e < edges.size(); ++e) {
    if (e == 0 || edges[e] / plan.block_rows() != edges[e - 1] / plan.block_rows()) {
      block_first.push_back(e);
    }
  }
  block_first.push_back(edges.size());
  std::vector<int64_t>& before = out.before;
  before.resize(edges.size() * n);
  auto count_block = [&](int64_t g) {
    const size_t first = block_first[g];
    const size_t last = block_first[g + 1];
    const int64_t block = edges[first] / plan.block_rows();
    std::vector<int64_t> rows = plan.RowsBeforeBlock(block);
    std::vector<uint8_t> sources;  // drawn only when an edge lies inside the block
    int64_t counted = block * plan.block_rows();
    for (size_t e = first; e < last; ++e) {
      if (edges[e] > counted) {
        if (sources.empty()) sources = plan.BlockSources(epoch, block);
        const uint8_t* from = sources.data() + (counted - block * plan.block_rows());
        for (int64_t i = 0; i < edges[e] - counted; ++i) ++rows[from[i]];
        counted = edges[e];
      }
      std::copy(rows.begin(), rows.end(), before.begin() + static_cast<int64_t>(e * n));
    }
  };
  const auto num_groups = static_cast<int64_t>(block_first.size()) - 1;
  if (parallel != nullptr && num_groups > 1) {
    parallel(num_groups, count_block);
  } else {
    for (int64_t g = 0; g < num_groups; ++g) count_block(g);
  }
  return out;
}

}  // namespace

arrow::Result<MixtureLayout> MixtureLayout::Make(const MixturePlan& plan, int64_t epoch,
                                                 const std::vector<Segment>& segments,
                                                 const std::vector<int64_t>& starts,
                                                 int64_t batch_size, bool drop_last,
                                                 const ParallelFor& parallel) {
  const auto n = static_cast<size_t>(plan.num_sources());
  if (starts.size() != n) {
    return arrow::Status::Invalid("a mixture layout needs one start per source, got ",
                                  starts.size(), " for ", n);
  }
  if (batch_size < 1 || epoch < 0) {
    return arrow::Status::Invalid("a mixture layout needs batch_size >= 1 and epoch >= 0");
  }
  ARROW_ASSIGN_OR_RAISE(const int64_t total, CountPositions(plan, segments));
  const int64_t num_batches =
      drop_last ? total / batch_size : (total + batch_size - 1) / batch_size;
  const std::vector<Stretch> stretches = CutStretches(segments, total, batch_size, num_batches);
  const EdgeRows edge_rows = CountRowsBeforeEdges(plan, epoch, stretches, parallel);

  MixtureLayout layout;
  layout.pieces_.resize(n);
  layout.batch_rows_.reserve(static_cast<size_t>(num_batches));
  // This batch's runs of each source's stream: (start, rows).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> runs(n);
  for (size_t k = 0; k < stretches.size();) {
    const int64_t b = stretches[k].batch;
    for (auto& source_runs : runs) source_runs.clear();
    for (; k < stretches.size() && stretches[k].batch == b; ++k) {
      const int64_t* from = edge_rows.At(stretches[k].begin, n);
      const int64_t* to = edge_rows.At(stretches[k].end, n);
      for (size_t s = 0; s < n; ++s) {
        const int64_t count = to[s] - from[s];
        if (count == 0) continue;
        const int64_t start = starts[s] + from[s];
        auto& source_runs = runs[s];
        if (!source_runs.empty() && source_runs.back().first + source_runs.back().second == start) {
          source_runs.back().second += count;
        } else {
          source_runs.emplace_back(start, count);
        }
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
