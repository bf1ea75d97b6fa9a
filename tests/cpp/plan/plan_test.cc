// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
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

TEST(PlanTest, LocateRangeIsLocateAtEveryPosition) {
  // Windows of 1 to ~60 uneven units (the range lookup's search against Locate's
  // upper_bound), under both plan versions, whole and in pieces, fresh and resumed.
  std::mt19937_64 random(5);
  std::vector<int64_t> units;
  for (int i = 0; i < 300; ++i) units.push_back(1 + static_cast<int64_t>(random() % 97));
  for (int version = kFirstPlanVersion; version <= kLatestPlanVersion; ++version) {
    for (int64_t window_rows : {int64_t{1}, int64_t{500}, int64_t{3000}, int64_t{100000}}) {
      for (bool resumed : {false, true}) {
        PlanConfig config = Config(64, 2, 1);
        config.plan_version = version;
        config.window_rows = window_rows;
        if (resumed) config.resumed = {{3, 1000}};
        auto plan = EpochPlan::Make(units, config).ValueOrDie();
        const int64_t rows = plan.real_rows();
        std::vector<RowSource> whole;
        plan.LocateRange(0, rows, &whole);
        for (int64_t begin = 0; begin < rows; begin += 777) {
          std::vector<RowSource> piece;
          plan.LocateRange(begin, std::min(rows, begin + 777), &piece);
          for (size_t j = 0; j < piece.size(); ++j) {
            const RowSource& a = piece[j];
            const RowSource& b = whole[begin + j];
            ASSERT_TRUE(a.window == b.window && a.unit_in_window == b.unit_in_window &&
                        a.row == b.row)
                << "version " << version << " window_rows " << window_rows;
          }
        }
        // Against Locate, position by position, where the segments put each offset.
        int64_t offset = 0;
        for (const Segment& segment : plan.segments()) {
          for (int64_t pos = segment.begin; pos < segment.end; ++pos, ++offset) {
            const int64_t w = plan.WindowOf(pos);
            const RowSource want = plan.Locate(pos, w, plan.WindowRows(w));
            const RowSource& got = whole[offset];
            ASSERT_TRUE(got.window == want.window && got.unit_in_window == want.unit_in_window &&
                        got.row == want.row)
                << "version " << version << " window_rows " << window_rows << " pos " << pos;
          }
        }
        ASSERT_EQ(offset, rows);
      }
    }
  }
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

// Chunks of whole windows (how servers share a rank's epoch): they cover the rank's rows in
// order, no window's rows fall in two chunks, and each chunk but the last holds min_rows.
TEST(PlanTest, WindowChunksCoverTheRankAndNeverSplitAWindow) {
  for (const int world_size : {1, 3}) {
    for (const int64_t min_rows : {1, 300, 2000}) {
      PlanConfig config = Config(64, world_size, world_size - 1);
      if (world_size > 1) config.resumed = {{2, 40}};
      const auto plan = EpochPlan::Make(kUnits, config).ValueOrDie();
      const std::vector<int64_t> ends = plan.WindowChunkEnds(min_rows);
      ASSERT_FALSE(ends.empty());
      EXPECT_EQ(ends.back(), plan.rank_rows());
      std::set<int64_t> seen;  // windows of the chunks before this one
      int64_t start = 0;
      for (const int64_t end : ends) {
        ASSERT_GT(end, start);
        if (end != ends.back()) EXPECT_GE(end - start, min_rows);
        std::set<int64_t> windows;
        for (int64_t offset = start; offset < end; ++offset) {
          windows.insert(plan.WindowOf(plan.Position(offset)));
        }
        for (const int64_t w : windows) EXPECT_FALSE(seen.count(w)) << "window " << w;
        seen.insert(windows.begin(), windows.end());
        start = end;
      }
      if (min_rows == 1) EXPECT_EQ(ends.size(), plan.window_schedule().size());
    }
  }
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
      ASSERT_EQ(plan.segments().size(), 1u);
      EXPECT_EQ(plan.segments()[0].begin, covered);
      EXPECT_EQ(plan.rank_rows(), 900 / world);
      covered = plan.segments()[0].end;
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
  EXPECT_EQ(plan.window_schedule().size(), plan.windows().size());
}

TEST(PlanTest, RejectsInvalidConfig) {
  EXPECT_FALSE(EpochPlan::Make(kUnits, Config(0)).ok());
  EXPECT_FALSE(EpochPlan::Make(kUnits, Config(10, 2, 2)).ok());
  EXPECT_FALSE(EpochPlan::Make({10, 0}, Config(10)).ok());
}

TEST(PlanTest, ExplicitBatchEndsCutTheRanksRowsWhateverTheBatchSize) {
  auto config = Config(64);
  config.drop_last = true;  // ignored: the ends say where every batch ends
  config.batch_ends = {1, 64, 65, 300, 899, 900};
  auto plan = EpochPlan::Make(kUnits, config).ValueOrDie();
  ASSERT_EQ(plan.num_batches(), 6);
  int64_t begin = 0;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    EXPECT_EQ(plan.BatchRange(b), std::make_pair(begin, config.batch_ends[b])) << "batch " << b;
    begin = config.batch_ends[b];
  }
  // The order of the rows is the plan's without the ends: only the cuts move.
  const auto without = EpochPlan::Make(kUnits, Config(64)).ValueOrDie();
  EXPECT_EQ(Sequence(plan), Sequence(without));
  for (int64_t offset = 0; offset < plan.rank_rows(); ++offset) {
    ASSERT_EQ(plan.Position(offset), without.Position(offset));
  }
}

TEST(PlanTest, ScheduleRangeFollowsExplicitBatchEndsOnAResumedRank) {
  // A resumed rank of 3 reads two segments; small windows so batches span several.
  auto config = Config(64, 3, 1);
  config.window_rows = 40;
  config.resumed = {{2, 100}};
  const int64_t rank_rows = EpochPlan::Make(kUnits, config).ValueOrDie().rank_rows();
  ASSERT_GT(rank_rows, 10);
  config.batch_ends = {3, 4, rank_rows / 2, rank_rows - 1, rank_rows};
  auto plan = EpochPlan::Make(kUnits, config).ValueOrDie();
  ASSERT_GT(plan.segments().size(), 1u);
  ASSERT_EQ(plan.num_batches(), 5);
  const auto& schedule = plan.window_schedule();
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const auto [begin, end] = plan.BatchRange(b);
    int64_t lowest = plan.total_rows();
    int64_t highest = -1;
    for (int64_t offset = begin; offset < end; ++offset) {
      const int64_t w = plan.WindowOf(plan.Position(offset));
      lowest = std::min(lowest, w);
      highest = std::max(highest, w);
    }
    const auto [first, last] = plan.ScheduleRange(b);
    ASSERT_LE(last, static_cast<int64_t>(schedule.size()) - 1);
    EXPECT_EQ(schedule[first], lowest) << "batch " << b;
    EXPECT_EQ(schedule[last], highest) << "batch " << b;
  }
}

TEST(PlanTest, RejectsBatchEndsThatDoNotCutTheRanksRows) {
  auto with_ends = [](std::vector<int64_t> ends) {
    auto config = Config(64);
    config.batch_ends = std::move(ends);
    return EpochPlan::Make(kUnits, config);
  };
  ASSERT_TRUE(with_ends({100, 900}).ok());
  for (const auto& ends : std::vector<std::vector<int64_t>>{
           {0, 900}, {-5, 900}, {100, 100, 900}, {300, 200, 900}, {100, 899}, {100, 901}, {899}}) {
    const auto plan = with_ends(ends);
    ASSERT_FALSE(plan.ok()) << "ends ending at " << ends.back();
    EXPECT_TRUE(plan.status().IsInvalid()) << plan.status().ToString();
  }
  // With padding to equal steps the ends cut the padded rows (how a share of whole windows
  // cuts an evaluation rank's batches into pieces), not only the real ones.
  auto config = Config(64, 2, 1);
  config.exactly_once = true;
  config.pad_to_equal_steps = true;
  const auto padded = EpochPlan::Make(kUnits, config).ValueOrDie();
  ASSERT_GT(padded.rank_rows(), padded.real_rows());
  config.batch_ends = {padded.real_rows(), padded.rank_rows()};
  const auto cut = EpochPlan::Make(kUnits, config);
  ASSERT_TRUE(cut.ok()) << cut.status().ToString();
  EXPECT_EQ(cut->num_batches(), 2);
  EXPECT_EQ(cut->Position(padded.rank_rows() - 1), padded.Position(padded.rank_rows() - 1));
  config.batch_ends = {padded.real_rows()};
  EXPECT_FALSE(EpochPlan::Make(kUnits, config).ok());
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

int64_t Length(const std::vector<Segment>& segments) {
  int64_t n = 0;
  for (const auto& s : segments) n += s.end - s.begin;
  return n;
}

TEST(ResumeTest, SameWorldSizeContinuesEachRankWhereItStopped) {
  for (int world : {1, 3, 4}) {
    const int64_t q = 1000 / world;
    for (int64_t consumed : {int64_t{0}, int64_t{10}, q - 1, q}) {
      for (int rank = 0; rank < world; ++rank) {
        const auto segments = RankSegments(1000, {{world, consumed}}, world, rank);
        const std::vector<Segment> expected =
            consumed == q ? std::vector<Segment>{}
                          : std::vector<Segment>{{rank * q + consumed, (rank + 1) * q}};
        EXPECT_EQ(segments, expected) << "world " << world << " consumed " << consumed;
      }
    }
  }
}

TEST(ResumeTest, RepeatedResumesAtOneWorldSizeAddUp) {
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(RankSegments(1000, {{3, 40}, {3, 60}}, 3, rank),
              RankSegments(1000, {{3, 100}}, 3, rank));
  }
}

// Elastic N -> M -> P: the rows consumed before plus the new ranks' slices cover the epoch
// exactly once, minus fewer than the last world size; every new rank gets as many rows.
TEST(ResumeTest, ElasticResumeCoversTheRestOnceWithEqualShares) {
  const int64_t total = 10007;
  for (const auto& [rounds, world] : std::vector<std::pair<std::vector<ResumeRound>, int>>{
           {{{4, 300}}, 3}, {{{2, 1000}}, 5}, {{{4, 300}, {3, 500}}, 7}, {{{5, 0}}, 1}}) {
    std::vector<int> seen(total, 0);
    // What each earlier round consumed: the first rows_per_rank of each of its slices.
    std::vector<ResumeRound> before;
    for (const auto& round : rounds) {
      for (int r = 0; r < round.world_size; ++r) {
        const auto slice = RankSegments(total, before, round.world_size, r);
        for (const auto& s : SliceSegments(slice, 0, round.rows_per_rank)) {
          for (int64_t p = s.begin; p < s.end; ++p) ++seen[p];
        }
      }
      before.push_back(round);
    }
    int64_t share = -1;
    for (int rank = 0; rank < world; ++rank) {
      const auto segments = RankSegments(total, rounds, world, rank);
      if (share >= 0) EXPECT_EQ(Length(segments), share);
      share = Length(segments);
      for (const auto& s : segments) {
        for (int64_t p = s.begin; p < s.end; ++p) ++seen[p];
      }
    }
    int64_t missed = 0;
    for (int count : seen) {
      ASSERT_LE(count, 1);
      missed += count == 0;
    }
    EXPECT_LT(missed, world);
  }
}

TEST(ResumeTest, PlanFollowsTheSegments) {
  PlanConfig config = Config(64, 3, 1);
  config.resumed = {{4, 128}};
  auto plan = EpochPlan::Make(kUnits, config).ValueOrDie();
  EXPECT_EQ(plan.segments(), RankSegments(900, config.resumed, 3, 1));
  EXPECT_EQ(plan.rank_rows(), Length(plan.segments()));
  int64_t offset = 0;
  for (const auto& s : plan.segments()) {
    for (int64_t p = s.begin; p < s.end; ++p) ASSERT_EQ(plan.Position(offset++), p);
  }
  // The schedule lists exactly the windows that hold the rank's positions.
  std::set<int64_t> needed;
  for (const auto& s : plan.segments()) {
    for (int64_t p = s.begin; p < s.end; ++p) needed.insert(plan.WindowOf(p));
  }
  EXPECT_EQ(std::vector<int64_t>(needed.begin(), needed.end()), plan.window_schedule());
}

// The definition a round follows, written the slow way: each rank's slice past what it
// consumed, one SliceSegments call per rank, then the rows the split left over.
std::vector<Segment> RankSegmentsByDefinition(int64_t total, const std::vector<ResumeRound>& rounds,
                                              int world, int rank) {
  std::vector<Segment> remaining;
  if (total > 0) remaining.push_back({0, total});
  for (const auto& round : rounds) {
    const int64_t n = Length(remaining);
    const int64_t q = n / round.world_size;
    const int64_t consumed = std::min(round.rows_per_rank, q);
    std::vector<Segment> next;
    for (int r = 0; r < round.world_size; ++r) {
      for (const auto& s : SliceSegments(remaining, r * q + consumed, (r + 1) * q))
        next.push_back(s);
    }
    for (const auto& s : SliceSegments(remaining, round.world_size * q, n)) next.push_back(s);
    remaining = std::move(next);
  }
  const int64_t q = Length(remaining) / world;
  return SliceSegments(remaining, rank * q, (rank + 1) * q);
}

TEST(ResumeTest, RankSegmentsFollowTheDefinition) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t total = static_cast<int64_t>(random() % 5000);
    std::vector<ResumeRound> rounds(random() % 5);
    for (auto& round : rounds) {
      round.world_size = 1 + static_cast<int>(random() % 9);
      round.rows_per_rank = static_cast<int64_t>(random() % 700);
    }
    const int world = 1 + static_cast<int>(random() % 9);
    for (int rank = 0; rank < world; ++rank) {
      ASSERT_EQ(RankSegments(total, rounds, world, rank),
                RankSegmentsByDefinition(total, rounds, world, rank))
          << "trial " << trial;
    }
  }
}

// A state dict or a ticket from an untrusted source must not make planning unbounded.
TEST(ResumeTest, OutsizedResumeRoundsAreRefused) {
  PlanConfig config = Config(64, 1, 0);
  config.world_size = kMaxWorldSize + 1;
  config.rank = 0;
  EXPECT_TRUE(EpochPlan::Make(kUnits, config).status().IsInvalid());
  config = Config(64, 1, 0);
  config.resumed.assign(kMaxResumeRounds + 1, {2, 1});
  EXPECT_TRUE(EpochPlan::Make(kUnits, config).status().IsInvalid());
  config.resumed.assign(5, {kMaxWorldSize, 0});
  EXPECT_TRUE(EpochPlan::Make(kUnits, config).status().IsInvalid());
  config.resumed = {{kMaxWorldSize + 1, 0}};
  EXPECT_TRUE(EpochPlan::Make(kUnits, config).status().IsInvalid());
}

// At the limits planning stays linear: four rounds of a million ranks over a dataset with
// as many rows, alternating world sizes so that the rounds do not merge.
TEST(ResumeTest, ResumeRoundsAtTheLimitsPlanInLinearTime) {
  const std::vector<int64_t> units(64, int64_t{1} << 16);  // 4M rows
  PlanConfig config = Config(4096, 3, 2);
  config.resumed = {
      {kMaxWorldSize, 1}, {kMaxWorldSize - 1, 1}, {kMaxWorldSize, 0}, {kMaxWorldSize - 1, 1}};
  auto plan = EpochPlan::Make(units, config);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_GT(plan->rank_rows(), 0);
}

}  // namespace
}  // namespace stoker
