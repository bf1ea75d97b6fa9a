// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/plan.h"

#include <algorithm>

namespace stoker {

arrow::Result<EpochPlan> EpochPlan::Make(const std::vector<int64_t>& unit_rows,
                                         const PlanConfig& config) {
  if (config.batch_size < 1 || config.world_size < 1 || config.rank < 0 ||
      config.rank >= config.world_size || config.window_rows < 1) {
    return arrow::Status::Invalid("invalid plan configuration");
  }
  EpochPlan plan;
  plan.config_ = config;
  const auto num_units = static_cast<uint64_t>(unit_rows.size());
  const Permutation unit_perm(num_units, DeriveKey(config.seed, config.epoch, kUnitOrderLevel, 0),
                              !config.shuffle);
  plan.unit_order_.resize(num_units);
  plan.unit_offset_.resize(num_units);
  int64_t position = 0;
  Window window;
  for (uint64_t i = 0; i < num_units; ++i) {
    const auto unit = static_cast<int32_t>(unit_perm(i));
    const int64_t rows = unit_rows[unit];
    if (rows <= 0) return arrow::Status::Invalid("unit ", unit, " has no rows");
    plan.unit_order_[i] = unit;
    plan.unit_offset_[i] = window.num_rows;
    window.num_units += 1;
    window.num_rows += rows;
    position += rows;
    if (window.num_rows >= config.window_rows || i + 1 == num_units) {
      window.row_key = DeriveKey(config.seed, config.epoch, kWindowRowsLevel,
                                 static_cast<uint64_t>(plan.windows_.size()));
      plan.windows_.push_back(window);
      window = Window{};
      window.first_unit = static_cast<int64_t>(i + 1);
      window.first_row = position;
    }
  }
  plan.total_rows_ = position;
  const int64_t per_rank = plan.total_rows_ / config.world_size;
  plan.rank_begin_ = per_rank * config.rank;
  plan.rank_end_ = plan.rank_begin_ + per_rank;
  plan.num_batches_ = BatchesPerRank(plan.total_rows_, config);
  return plan;
}

int64_t BatchesPerRank(int64_t total_rows, const PlanConfig& config) {
  const int64_t per_rank = total_rows / config.world_size;
  return config.drop_last ? per_rank / config.batch_size
                          : (per_rank + config.batch_size - 1) / config.batch_size;
}

std::pair<int64_t, int64_t> EpochPlan::BatchRange(int64_t b) const {
  const int64_t first = rank_begin_ + b * config_.batch_size;
  return {first, std::min(first + config_.batch_size, rank_end_)};
}

int64_t EpochPlan::WindowOf(int64_t pos) const {
  auto it = std::upper_bound(windows_.begin(), windows_.end(), pos,
                             [](int64_t p, const Window& w) { return p < w.first_row; });
  return static_cast<int64_t>(it - windows_.begin()) - 1;
}

Permutation EpochPlan::WindowRows(int64_t window) const {
  const Window& w = windows_[window];
  return Permutation(static_cast<uint64_t>(w.num_rows), w.row_key, !config_.shuffle);
}

RowSource EpochPlan::Locate(int64_t pos, int64_t window, const Permutation& rows) const {
  const Window& w = windows_[window];
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

}  // namespace stoker
