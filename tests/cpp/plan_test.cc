// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/plan.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace stoker {
namespace {

PlanConfig Config(int64_t batch_size, int world_size = 1, int rank = 0) {
  PlanConfig config;
  config.seed = 11;
  config.epoch = 0;
  config.window_rows = 250;
  config.batch_size = batch_size;
  config.world_size = world_size;
  config.rank = rank;
  return config;
}

const std::vector<int64_t> kUnits = {100, 37, 250, 1, 99, 400, 13};  // 900 rows

// (unit id, row) for every position of S, using the plan's own lookups.
std::vector<std::pair<int32_t, int64_t>> Sequence(const EpochPlan& plan) {
  std::vector<std::pair<int32_t, int64_t>> out;
  for (int64_t pos = 0; pos < plan.total_rows(); ++pos) {
    const int64_t w = plan.WindowOf(pos);
    const RowSource s = plan.Locate(pos, w, plan.WindowRows(w));
    const int32_t unit = plan.unit_order()[plan.windows()[w].first_unit + s.unit_in_window];
    out.emplace_back(unit, s.row);
  }
  return out;
}

TEST(PlanTest, SequenceCoversEveryRowExactlyOnce) {
  auto plan = EpochPlan::Make(kUnits, Config(64)).ValueOrDie();
  ASSERT_EQ(plan.total_rows(), 900);
  std::set<std::pair<int32_t, int64_t>> seen;
  for (const auto& ref : Sequence(plan)) {
    ASSERT_LT(ref.second, kUnits[ref.first]);
    EXPECT_TRUE(seen.insert(ref).second);
  }
  EXPECT_EQ(seen.size(), 900u);
}

TEST(PlanTest, WindowsAreCutAtUnitBoundariesOnceFull) {
  auto plan = EpochPlan::Make(kUnits, Config(64)).ValueOrDie();
  int64_t units = 0;
  int64_t rows = 0;
  for (const auto& w : plan.windows()) {
    EXPECT_EQ(w.first_unit, units);
    EXPECT_EQ(w.first_row, rows);
    // Full unless it is the last; never holds more than one unit past the threshold.
    int64_t without_last = w.num_rows - kUnits[plan.unit_order()[w.first_unit + w.num_units - 1]];
    EXPECT_LT(without_last, 250);
    units += w.num_units;
    rows += w.num_rows;
  }
  EXPECT_EQ(units, 7);
  EXPECT_EQ(rows, 900);
}

TEST(PlanTest, SameInputsSamePlanOtherEpochOrSeedOtherPlan) {
  auto config = Config(64);
  const auto a = Sequence(EpochPlan::Make(kUnits, config).ValueOrDie());
  EXPECT_EQ(a, Sequence(EpochPlan::Make(kUnits, config).ValueOrDie()));
  config.epoch = 1;
  EXPECT_NE(a, Sequence(EpochPlan::Make(kUnits, config).ValueOrDie()));
  config.epoch = 0;
  config.seed = 12;
  EXPECT_NE(a, Sequence(EpochPlan::Make(kUnits, config).ValueOrDie()));
}

TEST(PlanTest, NoShuffleIsFileOrder) {
  auto config = Config(64);
  config.shuffle = false;
  const auto seq = Sequence(EpochPlan::Make(kUnits, config).ValueOrDie());
  size_t i = 0;
  for (int32_t unit = 0; unit < static_cast<int32_t>(kUnits.size()); ++unit) {
    for (int64_t row = 0; row < kUnits[unit]; ++row, ++i) {
      ASSERT_EQ(seq[i], std::make_pair(unit, row));
    }
  }
}

TEST(PlanTest, RanksGetDisjointEqualSlicesAndEqualBatches) {
  for (int world : {1, 2, 3, 4, 7}) {
    int64_t covered = 0;
    int64_t batches = -1;
    for (int rank = 0; rank < world; ++rank) {
      auto plan = EpochPlan::Make(kUnits, Config(50, world, rank)).ValueOrDie();
      EXPECT_EQ(plan.rank_begin(), covered);
      EXPECT_EQ(plan.rank_end() - plan.rank_begin(), 900 / world);
      covered = plan.rank_end();
      if (batches >= 0) EXPECT_EQ(plan.num_batches(), batches);
      batches = plan.num_batches();
    }
    EXPECT_GE(covered, 900 - (world - 1));
  }
}

TEST(PlanTest, BatchesAreExactExceptTheLast) {
  auto config = Config(64);
  auto plan = EpochPlan::Make(kUnits, config).ValueOrDie();
  ASSERT_EQ(plan.num_batches(), 15);  // ceil(900 / 64)
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const auto [first, last] = plan.BatchRange(b);
    EXPECT_EQ(last - first, b + 1 < plan.num_batches() ? 64 : 900 - 14 * 64);
  }
  config.drop_last = true;
  EXPECT_EQ(EpochPlan::Make(kUnits, config).ValueOrDie().num_batches(), 14);
  EXPECT_EQ(BatchesPerRank(900, config), 14);
}

TEST(PlanTest, RejectsInvalidConfig) {
  EXPECT_FALSE(EpochPlan::Make(kUnits, Config(0)).ok());
  EXPECT_FALSE(EpochPlan::Make(kUnits, Config(10, 2, 2)).ok());
  EXPECT_FALSE(EpochPlan::Make({10, 0}, Config(10)).ok());
}

}  // namespace
}  // namespace stoker
