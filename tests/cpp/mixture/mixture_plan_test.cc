// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_plan.h"

#include <gtest/gtest.h>

#include <numeric>
#include <utility>
#include <vector>

namespace stoker {
namespace {

std::vector<int64_t> Count(const std::vector<uint8_t>& sources, int n, size_t end) {
  std::vector<int64_t> counts(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < end; ++i) ++counts[sources[i]];
  return counts;
}

MixturePlan MakePlan(std::vector<int64_t> source_rows, int64_t batch_rows, uint64_t seed) {
  return MixturePlan::Make(std::move(source_rows), batch_rows, seed).ValueOrDie();
}

/// Every source of an epoch, block after block.
std::vector<uint8_t> EpochSources(const MixturePlan& plan, int64_t epoch) {
  std::vector<uint8_t> all;
  for (int64_t b = 0; b < plan.num_blocks(); ++b) {
    const std::vector<uint8_t> block = plan.BlockSources(epoch, b);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

TEST(ApportionTest, SumsToTotalWithinOneRowOfEachShare) {
  const std::vector<int64_t> quotas = {5, 3, 2, 7};
  const int64_t sum = 17;
  for (int64_t total : {0, 1, 2, 3, 16, 17, 100, 1001, 123457}) {
    const std::vector<int64_t> out = Apportion(total, quotas, 9);
    EXPECT_EQ(std::accumulate(out.begin(), out.end(), int64_t{0}), total);
    for (size_t s = 0; s < quotas.size(); ++s) {
      EXPECT_GE(out[s], total * quotas[s] / sum) << "total=" << total << " s=" << s;
      EXPECT_LE(out[s], total * quotas[s] / sum + 1) << "total=" << total << " s=" << s;
    }
  }
}

TEST(ApportionTest, ExactSharesNeedNoRounding) {
  EXPECT_EQ(Apportion(100, {1, 1, 2}, 3), (std::vector<int64_t>{25, 25, 50}));
}

TEST(ApportionTest, TiesAreBrokenByTheKeyNotByPosition) {
  // One row, three equal shares: who gets it depends on the key, and every source gets it
  // for some key.
  std::vector<int> wins(3, 0);
  for (uint64_t key = 0; key < 300; ++key) {
    const std::vector<int64_t> out = Apportion(1, {1, 1, 1}, key);
    EXPECT_EQ(out, Apportion(1, {1, 1, 1}, key));  // a pure function
    for (size_t s = 0; s < 3; ++s) wins[s] += static_cast<int>(out[s]);
  }
  for (int w : wins) EXPECT_GT(w, 50);
}

TEST(ApportionTest, HugeTotalsDoNotOverflow) {
  const int64_t total = int64_t{1} << 50;
  const std::vector<int64_t> out = Apportion(total, WeightQuotas({0.5, 0.25, 0.25}), 1);
  EXPECT_EQ(out, (std::vector<int64_t>{total / 2, total / 4, total / 4}));
}

TEST(MixturePlanTest, EveryEpochHoldsEachSourcesRowsExactly) {
  const MixturePlan plan = MakePlan({70001, 20000, 9999}, 0, 5);
  EXPECT_EQ(plan.epoch_rows(), 100000);
  EXPECT_FALSE(plan.stratified());
  for (int64_t epoch : {0, 1, 7}) {
    const std::vector<uint8_t> all = EpochSources(plan, epoch);
    ASSERT_EQ(static_cast<int64_t>(all.size()), plan.epoch_rows());
    EXPECT_EQ(Count(all, 3, all.size()), plan.source_rows()) << "epoch " << epoch;
  }
}

TEST(MixturePlanTest, BlocksHoldTheirCumulativeShare) {
  // A small share makes the block larger, so every block's count stays >= 0.
  const MixturePlan plan = MakePlan({1000000, 3, 200000}, 0, 11);
  EXPECT_GE(plan.block_rows() * 3, 2 * plan.epoch_rows());
  for (int64_t b = 0; b < plan.num_blocks(); ++b) {
    const std::vector<uint8_t> block = plan.BlockSources(0, b);
    const std::vector<int64_t> before = plan.RowsBeforeBlock(b);
    const std::vector<int64_t> after = plan.RowsBeforeBlock(b + 1);
    const std::vector<int64_t> counts = Count(block, 3, block.size());
    for (size_t s = 0; s < 3; ++s) EXPECT_EQ(counts[s], after[s] - before[s]);
  }
}

TEST(MixturePlanTest, RowsBeforeAnyPositionMatchesACount) {
  const MixturePlan plan = MakePlan({150000, 50000, 30001}, 0, 3);
  const std::vector<uint8_t> all = EpochSources(plan, 2);
  for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{65535}, int64_t{65536}, int64_t{65537},
                    int64_t{131072}, int64_t{200000}, plan.epoch_rows() - 1, plan.epoch_rows()}) {
    EXPECT_EQ(plan.RowsBefore(2, p), Count(all, 3, static_cast<size_t>(p))) << "p=" << p;
  }
}

TEST(MixturePlanTest, APureFunctionOfSeedAndEpoch) {
  const MixturePlan a = MakePlan({5000, 3000}, 0, 42);
  const MixturePlan b = MakePlan({5000, 3000}, 0, 42);
  const MixturePlan other_seed = MakePlan({5000, 3000}, 0, 43);
  EXPECT_EQ(a.BlockSources(1, 0), b.BlockSources(1, 0));
  EXPECT_NE(a.BlockSources(1, 0), a.BlockSources(2, 0));
  EXPECT_NE(a.BlockSources(1, 0), other_seed.BlockSources(1, 0));
}

TEST(MixturePlanTest, SourcesAreInterleavedNotGrouped) {
  const MixturePlan plan = MakePlan({50000, 50000}, 0, 1);
  const std::vector<uint8_t> block = plan.BlockSources(0, 0);
  int changes = 0;
  for (size_t i = 1; i < block.size(); ++i) changes += block[i] != block[i - 1];
  // A random interleaving of two equal halves changes source about every other position.
  EXPECT_GT(changes, static_cast<int>(block.size()) / 3);
}

TEST(MixturePlanTest, StratifiedBatchesHoldTheSameShareEach) {
  // 3 + 1 per batch of 4, 10 batches.
  const MixturePlan plan = MakePlan({30, 10}, 4, 1);
  EXPECT_TRUE(plan.stratified());
  EXPECT_EQ(plan.num_blocks(), 10);
  for (int64_t b = 0; b < plan.num_blocks(); ++b) {
    EXPECT_EQ(plan.BlockSources(3, b), (std::vector<uint8_t>{0, 0, 0, 1}));
  }
  EXPECT_EQ(plan.RowsBefore(0, 6), (std::vector<int64_t>{5, 1}));
}

TEST(MixturePlanTest, StratifiedCountsMustFillWholeBatches) {
  EXPECT_FALSE(MixturePlan::Make({30, 11}, 4, 1).ok());
  EXPECT_FALSE(MixturePlan::Make({29, 11}, 4, 1).ok());
}

TEST(MixturePlanTest, RejectsEmptyMixturesAndEmptySources) {
  EXPECT_FALSE(MixturePlan::Make({}, 0, 1).ok());
  const auto empty = MixturePlan::Make({10, 0}, 0, 1);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("source 1"), std::string::npos);
}

TEST(MixturePlanTest, SourceSeedsDifferPerSource) {
  EXPECT_NE(MixtureSourceSeed(7, 0), MixtureSourceSeed(7, 1));
  EXPECT_NE(MixtureSourceSeed(7, 0), MixtureSourceSeed(8, 0));
  EXPECT_EQ(MixtureSourceSeed(7, 2), MixtureSourceSeed(7, 2));
}

TEST(MixturePlanTest, KnownValuesAreStable) {
  // Golden values: a change here changes every mixture's batches and breaks its resume.
  const MixturePlan plan = MakePlan({5000, 3000, 2000}, 0, 0);
  const std::vector<uint8_t> block = plan.BlockSources(0, 0);
  EXPECT_EQ(std::vector<uint8_t>(block.begin(), block.begin() + 16),
            (std::vector<uint8_t>{0, 0, 2, 2, 0, 0, 1, 1, 0, 0, 2, 0, 0, 1, 0, 2}));
  EXPECT_EQ(Apportion(10, {1, 1, 1}, 0), (std::vector<int64_t>{3, 4, 3}));
  EXPECT_EQ(MixtureSourceSeed(0, 0), 14846866565448981210ULL);
  EXPECT_EQ(MixtureSourceSeed(0, 1), 10943222086208998335ULL);
}

}  // namespace
}  // namespace stoker
