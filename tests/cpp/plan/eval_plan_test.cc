// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The evaluation plan (PlanConfig::exactly_once): every row of the epoch exactly once across
// ranks, contiguous balanced shares, padding to equal steps, and resume.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace stoker {
namespace {

const std::vector<int64_t> kUnits = {100, 37, 250, 1, 99, 400, 13};  // 900 rows

PlanConfig EvalConfig(int64_t batch_size, int world_size, int rank, bool pad,
                      bool shuffle = false) {
  PlanConfig config;
  config.seed = 5;
  config.shuffle = shuffle;
  config.window_rows = shuffle ? 250 : 1;
  config.batch_size = batch_size;
  config.world_size = world_size;
  config.rank = rank;
  config.exactly_once = true;
  config.pad_to_equal_steps = pad;
  return config;
}

// (unit id, row) of rank-local offsets [begin, end), from the plan's batch lookup.
std::vector<std::pair<int32_t, int64_t>> Rows(const EpochPlan& plan, int64_t begin, int64_t end) {
  std::vector<RowSource> sources;
  plan.LocateRange(begin, end, &sources);
  std::vector<std::pair<int32_t, int64_t>> out;
  for (const auto& s : sources) {
    out.emplace_back(plan.unit_order()[plan.windows()[s.window].first_unit + s.unit_in_window],
                     s.row);
  }
  return out;
}

TEST(EvalPlanTest, SharesAreContiguousBalancedAndCoverEveryRow) {
  for (int64_t n : {0, 1, 4, 900, 1001}) {
    for (int world = 1; world <= 5; ++world) {
      int64_t next = 0;
      for (int rank = 0; rank < world; ++rank) {
        const auto [first, last] = ShareRange(n, world, rank, /*exactly_once=*/true);
        EXPECT_EQ(first, next) << n << " rows, rank " << rank << " of " << world;
        EXPECT_TRUE(last - first == n / world || last - first == n / world + 1);
        // The larger shares come first.
        EXPECT_EQ(last - first, n / world + (rank < n % world ? 1 : 0));
        next = last;
      }
      EXPECT_EQ(next, n);
    }
  }
}

TEST(EvalPlanTest, TrainingSharesAreUnchanged) {
  EXPECT_EQ(ShareRange(1001, 3, 2, /*exactly_once=*/false),
            std::make_pair(int64_t{666}, int64_t{999}));
}

// Every row of the dataset exactly once over all ranks' real rows, for row counts that do not
// divide, several batch sizes, with and without padding, shuffled or not.
TEST(EvalPlanTest, RanksTogetherDeliverEveryRowOnce) {
  for (bool shuffle : {false, true}) {
    for (bool pad : {false, true}) {
      for (int64_t batch : {1, 7, 64, 1000}) {
        for (int world = 1; world <= 5; ++world) {
          std::map<std::pair<int32_t, int64_t>, int> seen;
          int64_t steps = -1;
          for (int rank = 0; rank < world; ++rank) {
            auto plan =
                EpochPlan::Make(kUnits, EvalConfig(batch, world, rank, pad, shuffle)).ValueOrDie();
            EXPECT_EQ(plan.real_rows(), ShareRange(900, world, rank, true).second -
                                            ShareRange(900, world, rank, true).first);
            if (pad) {
              // Equal steps, every batch full; padding only after the real rows.
              if (steps >= 0) EXPECT_EQ(plan.num_batches(), steps);
              steps = plan.num_batches();
              EXPECT_EQ(plan.rank_rows(), steps * batch);
              EXPECT_LT(plan.rank_rows() - plan.real_rows(), batch + 1);
            } else {
              EXPECT_EQ(plan.rank_rows(), plan.real_rows());
              EXPECT_EQ(plan.num_batches(), (plan.real_rows() + batch - 1) / batch);
            }
            for (int64_t b = 0; b < plan.num_batches(); ++b) {
              const auto [first, last] = plan.BatchRange(b);
              const auto rows = Rows(plan, first, last);
              for (int64_t i = first; i < last; ++i) {
                if (i < plan.real_rows()) ++seen[rows[i - first]];
              }
            }
          }
          int64_t total = 0;
          for (const auto& [row, count] : seen) {
            ASSERT_EQ(count, 1) << "unit " << row.first << " row " << row.second;
            ASSERT_LT(row.second, kUnits[row.first]);
          }
          for (auto rows : kUnits) total += rows;
          EXPECT_EQ(static_cast<int64_t>(seen.size()), total)
              << "world " << world << " batch " << batch << " pad " << pad;
        }
      }
    }
  }
}

TEST(EvalPlanTest, UnshuffledSharesAreFileOrder) {
  auto plan = EpochPlan::Make(kUnits, EvalConfig(10, 4, 1, false)).ValueOrDie();
  // 900 / 4 = 225 each: rank 1 reads positions 225 .. 449, which unshuffled are dataset rows.
  EXPECT_EQ(plan.segments(), (std::vector<Segment>{{225, 450}}));
  const auto rows = Rows(plan, 0, 1);
  EXPECT_EQ(rows[0], std::make_pair(int32_t{2}, int64_t{225 - 137}));
}

// Padding repeats the rank's last real row, so it reads no window the rank does not read
// anyway; a rank with no rows at all (fewer rows than ranks) pads with the row before its
// share.
TEST(EvalPlanTest, PaddingRepeatsTheLastRealRow) {
  const std::vector<int64_t> units = {3};
  for (int rank = 0; rank < 5; ++rank) {
    auto plan = EpochPlan::Make(units, EvalConfig(4, 5, rank, true)).ValueOrDie();
    EXPECT_EQ(plan.num_batches(), 1);
    EXPECT_EQ(plan.real_rows(), rank < 3 ? 1 : 0);
    const auto rows = Rows(plan, 0, 4);
    const int64_t last = rank < 3 ? rank : 2;
    for (const auto& row : rows) EXPECT_EQ(row, std::make_pair(int32_t{0}, last));
    EXPECT_EQ(plan.window_schedule(), std::vector<int64_t>{0});
  }
}

TEST(EvalPlanTest, EmptyDatasetHasNoBatchesEvenPadded) {
  auto plan = EpochPlan::Make({}, EvalConfig(4, 3, 2, true)).ValueOrDie();
  EXPECT_EQ(plan.num_batches(), 0);
  EXPECT_EQ(plan.rank_rows(), 0);
}

// Lock-stepped ranks stop after k batches; a resume at the same world size continues every
// rank exactly where it stopped, with or without padding, even when short shares ran out.
TEST(EvalPlanTest, ResumeContinuesEachRankWhereItStopped) {
  for (bool pad : {false, true}) {
    for (int world = 1; world <= 5; ++world) {
      const int64_t batch = 64;
      for (int64_t k = 0; k <= 5; ++k) {
        for (int rank = 0; rank < world; ++rank) {
          auto whole = EpochPlan::Make(kUnits, EvalConfig(batch, world, rank, pad)).ValueOrDie();
          PlanConfig config = EvalConfig(batch, world, rank, pad);
          config.resumed = {{world, k * batch}};
          auto rest = EpochPlan::Make(kUnits, config).ValueOrDie();
          const int64_t done = std::min(k, whole.num_batches());
          ASSERT_EQ(rest.num_batches(), whole.num_batches() - done)
              << "world " << world << " rank " << rank << " k " << k << " pad " << pad;
          for (int64_t b = 0; b < rest.num_batches(); ++b) {
            const auto [first, last] = rest.BatchRange(b);
            const auto [wfirst, wlast] = whole.BatchRange(b + done);
            ASSERT_EQ(last - first, wlast - wfirst);
            EXPECT_EQ(Rows(rest, first, last), Rows(whole, wfirst, wlast));
            EXPECT_EQ(std::min(rest.real_rows(), last) - first,
                      std::min(whole.real_rows(), wlast) - wfirst);
          }
        }
      }
    }
  }
}

// An elastic resume (N ranks -> M) still delivers every row once.
TEST(EvalPlanTest, ElasticResumeCoversTheRestOnce) {
  const int64_t total = 900;
  for (const auto& [round, world] :
       std::vector<std::pair<ResumeRound, int>>{{{4, 100}, 3}, {{3, 64}, 5}, {{5, 180}, 2}}) {
    std::vector<int> seen(total, 0);
    for (int r = 0; r < round.world_size; ++r) {
      const auto share = RankSegments(total, {}, round.world_size, r, true);
      for (const auto& s : SliceSegments(share, 0, round.rows_per_rank)) {
        for (int64_t p = s.begin; p < s.end; ++p) ++seen[p];
      }
    }
    for (int rank = 0; rank < world; ++rank) {
      for (const auto& s : RankSegments(total, {round}, world, rank, true)) {
        for (int64_t p = s.begin; p < s.end; ++p) ++seen[p];
      }
    }
    for (int count : seen) ASSERT_EQ(count, 1);
  }
}

}  // namespace
}  // namespace stoker
