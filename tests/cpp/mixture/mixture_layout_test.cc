// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// MixtureLayout: what each mixed batch of a rank's epoch takes from each source, checked
// against a walk of the epoch position by position.
#include "mixture/mixture_layout.h"

#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "mixture/mixture_plan.h"
#include "plan/plan.h"

namespace stoker {
namespace {

MixturePlan MakePlan(std::vector<int64_t> source_rows, int64_t batch_rows, uint64_t seed) {
  return MixturePlan::Make(std::move(source_rows), batch_rows, seed).ValueOrDie();
}

// The layout the definition gives, the slow way: every position of the epoch walked from
// its first one (so no RowsBefore), each taking the next row of its source's stream; the
// rank's positions cut into batches; a batch's rows of each source, in source order, cut
// into pieces wherever the stream jumps.
std::vector<std::vector<MixturePiece>> WalkedPieces(const MixturePlan& plan, int64_t epoch,
                                                    const std::vector<Segment>& segments,
                                                    const std::vector<int64_t>& starts,
                                                    int64_t batch_size, bool drop_last,
                                                    std::vector<int64_t>* batch_rows) {
  const auto n = static_cast<size_t>(plan.num_sources());
  // source and stream row of every position of the epoch
  std::vector<uint8_t> source_at;
  std::vector<int64_t> row_at;
  std::vector<int64_t> next = starts;
  for (int64_t block = 0; block < plan.num_blocks(); ++block) {
    for (const uint8_t s : plan.BlockSources(epoch, block)) {
      source_at.push_back(s);
      row_at.push_back(next[s]++);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(source_at.size()), plan.epoch_rows());
  std::vector<int64_t> positions;
  for (const Segment& segment : segments) {
    for (int64_t p = segment.begin; p < segment.end; ++p) positions.push_back(p);
  }
  const auto total = static_cast<int64_t>(positions.size());
  std::vector<std::vector<MixturePiece>> pieces(n);
  batch_rows->clear();
  for (int64_t first = 0; first < total; first += batch_size) {
    const int64_t last = std::min(total, first + batch_size);
    if (drop_last && last - first < batch_size) break;
    const auto b = static_cast<int64_t>(batch_rows->size());
    int64_t offset = 0;
    for (size_t s = 0; s < n; ++s) {
      for (int64_t i = first; i < last; ++i) {
        const int64_t p = positions[i];
        if (source_at[p] != s) continue;
        auto& mine = pieces[s];
        if (!mine.empty() && mine.back().batch == b &&
            mine.back().start + mine.back().rows == row_at[p]) {
          ++mine.back().rows;
        } else {
          mine.push_back({row_at[p], 1, b, offset});
        }
        ++offset;
      }
    }
    batch_rows->push_back(offset);
  }
  return pieces;
}

void ExpectWalked(const MixturePlan& plan, int64_t epoch, const std::vector<Segment>& segments,
                  const std::vector<int64_t>& starts, int64_t batch_size, bool drop_last) {
  const auto layout =
      MixtureLayout::Make(plan, epoch, segments, starts, batch_size, drop_last).ValueOrDie();
  // The blocks counted on three threads, the last ones first: the same layout.
  const auto parallel = [](int64_t n, const std::function<void(int64_t)>& body) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t i = n - 1 - t; i >= 0; i -= 3) body(i);
      });
    }
    for (auto& thread : threads) thread.join();
  };
  const auto counted_apart =
      MixtureLayout::Make(plan, epoch, segments, starts, batch_size, drop_last, parallel)
          .ValueOrDie();
  ASSERT_EQ(counted_apart.num_batches(), layout.num_batches());
  for (int s = 0; s < plan.num_sources(); ++s) {
    EXPECT_EQ(counted_apart.pieces(s), layout.pieces(s)) << "source " << s;
  }
  std::vector<int64_t> batch_rows;
  const auto pieces =
      WalkedPieces(plan, epoch, segments, starts, batch_size, drop_last, &batch_rows);
  ASSERT_EQ(layout.num_batches(), static_cast<int64_t>(batch_rows.size()));
  for (int64_t b = 0; b < layout.num_batches(); ++b) {
    ASSERT_EQ(layout.batch_rows(b), batch_rows[b]) << "batch " << b;
  }
  for (int s = 0; s < plan.num_sources(); ++s) {
    const auto& got = layout.pieces(s);
    ASSERT_EQ(got.size(), pieces[s].size()) << "source " << s;
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k], pieces[s][k])
          << "source " << s << " piece " << k << ": {" << got[k].start << ", " << got[k].rows
          << ", " << got[k].batch << ", " << got[k].offset << "} against {" << pieces[s][k].start
          << ", " << pieces[s][k].rows << ", " << pieces[s][k].batch << ", " << pieces[s][k].offset
          << "}";
    }
  }
}

TEST(MixtureLayoutTest, EqualsAWalkOfEveryPosition) {
  // Blocks of shuffled sources (an epoch longer than kProportionBlockRows positions), a
  // rank's positions cut in two by a resume.
  const MixturePlan plan = MakePlan({70000, 50000, 17}, 0, 5);
  ASSERT_GT(plan.num_blocks(), 1);
  const std::vector<int64_t> starts = {3 * 70000, 3 * 50000 + 11, 3 * 17};
  const auto resumed = RankSegments(plan.epoch_rows(), {{2, 40000}}, 3, 1);
  ASSERT_EQ(resumed.size(), 2u);
  for (const auto& segments : {
           std::vector<Segment>{{0, plan.epoch_rows()}},
           RankSegments(plan.epoch_rows(), {}, 3, 1),
           resumed,
       }) {
    for (const int64_t batch_size : {1, 7, 4096, 65536, 200000}) {
      for (const bool drop_last : {false, true}) {
        SCOPED_TRACE(::testing::Message() << segments.size() << " segments, batch_size "
                                          << batch_size << ", drop_last " << drop_last);
        ExpectWalked(plan, 3, segments, starts, batch_size, drop_last);
      }
    }
  }
}

TEST(MixtureLayoutTest, EqualsAWalkOfEveryPositionOfStratifiedBlocks) {
  // Blocks of 12 (6 + 4 + 2), cut by batches of other sizes and by segments inside blocks.
  const MixturePlan plan = MakePlan({60, 40, 20}, 12, 9);
  ASSERT_TRUE(plan.stratified());
  const std::vector<Segment> segments = {{5, 29}, {40, 41}, {70, 120}};
  for (const int64_t batch_size : {1, 5, 12, 13, 1000}) {
    for (const bool drop_last : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "batch_size " << batch_size << ", drop_last " << drop_last);
      ExpectWalked(plan, 1, segments, {0, 40, 20}, batch_size, drop_last);
    }
  }
}

TEST(MixtureLayoutTest, BatchesAreBatchSizeExceptTheLastWhichDropLastDrops) {
  const MixturePlan plan = MakePlan({300, 200, 103}, 0, 2);  // 603 positions
  const std::vector<Segment> whole = {{0, 603}};
  const auto layout = MixtureLayout::Make(plan, 0, whole, {0, 0, 0}, 100, false).ValueOrDie();
  ASSERT_EQ(layout.num_batches(), 7);
  for (int64_t b = 0; b < 6; ++b) EXPECT_EQ(layout.batch_rows(b), 100) << "batch " << b;
  EXPECT_EQ(layout.batch_rows(6), 3);
  const auto dropped = MixtureLayout::Make(plan, 0, whole, {0, 0, 0}, 100, true).ValueOrDie();
  ASSERT_EQ(dropped.num_batches(), 6);
  for (int s = 0; s < 3; ++s) {
    for (const MixturePiece& piece : dropped.pieces(s)) EXPECT_LT(piece.batch, 6);
  }
}

TEST(MixtureLayoutTest, ABatchHoldsItsSourcesInOrderWithContiguousOffsets) {
  const MixturePlan plan = MakePlan({500, 300, 200, 7}, 0, 4);
  const std::vector<Segment> segments = {{10, 400}, {450, 700}, {900, 1007}};
  const auto layout = MixtureLayout::Make(plan, 2, segments, {9, 8, 7, 6}, 64, false).ValueOrDie();
  // Every batch's pieces, in source order (a source's pieces are in batch order).
  std::vector<std::vector<MixturePiece>> of_batch(static_cast<size_t>(layout.num_batches()));
  for (int s = 0; s < plan.num_sources(); ++s) {
    for (const MixturePiece& piece : layout.pieces(s)) {
      ASSERT_GE(piece.batch, 0);
      ASSERT_LT(piece.batch, layout.num_batches());
      ASSERT_GT(piece.rows, 0);
      of_batch[piece.batch].push_back(piece);
    }
  }
  for (int64_t b = 0; b < layout.num_batches(); ++b) {
    int64_t offset = 0;
    for (const MixturePiece& piece : of_batch[b]) {
      EXPECT_EQ(piece.offset, offset) << "batch " << b;
      offset += piece.rows;
    }
    EXPECT_EQ(offset, layout.batch_rows(b)) << "batch " << b;
  }
}

TEST(MixtureLayoutTest, EachSourcesPiecesRunOnFromWhereEachSegmentStarts) {
  const MixturePlan plan = MakePlan({700, 500, 300}, 0, 8);
  const int64_t epoch = 4;
  const std::vector<Segment> segments = {{100, 450}, {900, 1300}};
  const std::vector<int64_t> starts = {epoch * 700, epoch * 500 + 3, epoch * 300};
  const auto layout = MixtureLayout::Make(plan, epoch, segments, starts, 100, false).ValueOrDie();
  // Rows each source fills in each segment, and where its stream stands at the segment's start.
  const auto first_before = plan.RowsBefore(epoch, 100);
  const auto second_before = plan.RowsBefore(epoch, 900);
  const auto first_end = plan.RowsBefore(epoch, 450);
  for (int s = 0; s < plan.num_sources(); ++s) {
    const auto& pieces = layout.pieces(s);
    ASSERT_FALSE(pieces.empty()) << "source " << s;
    EXPECT_EQ(pieces.front().start, starts[s] + first_before[s]) << "source " << s;
    // Consecutive pieces continue the stream, except once: at the second segment.
    int jumps = 0;
    for (size_t k = 1; k < pieces.size(); ++k) {
      const int64_t continued = pieces[k - 1].start + pieces[k - 1].rows;
      if (pieces[k].start == continued) continue;
      ++jumps;
      EXPECT_EQ(continued, starts[s] + first_end[s]) << "source " << s;
      EXPECT_EQ(pieces[k].start, starts[s] + second_before[s]) << "source " << s;
    }
    EXPECT_EQ(jumps, 1) << "source " << s;
    // Batch 3 (the rank's rows 300..399) crosses from the first segment (rows 0..349) to the
    // second: this source has two pieces there.
    int in_crossing = 0;
    for (const MixturePiece& piece : pieces) in_crossing += piece.batch == 3 ? 1 : 0;
    EXPECT_EQ(in_crossing, 2) << "source " << s;
  }
}

TEST(MixtureLayoutTest, AWholeEpochTakesEverySourcesRows) {
  for (const auto& plan : {MakePlan({70000, 3, 1234}, 0, 1), MakePlan({40, 60, 20}, 12, 3)}) {
    const std::vector<Segment> whole = {{0, plan.epoch_rows()}};
    const std::vector<int64_t> starts = {1000, 0, 5};
    const auto layout = MixtureLayout::Make(plan, 7, whole, starts, 1000, false).ValueOrDie();
    for (int s = 0; s < plan.num_sources(); ++s) {
      int64_t rows = 0;
      int64_t next = starts[s];
      for (const MixturePiece& piece : layout.pieces(s)) {
        EXPECT_EQ(piece.start, next) << "source " << s;  // one run from its start
        next = piece.start + piece.rows;
        rows += piece.rows;
      }
      EXPECT_EQ(rows, plan.source_rows()[s]) << "source " << s;
    }
  }
}

TEST(MixtureLayoutTest, RefusesWrongStartsSegmentsOutsideTheEpochAndEmptyBatches) {
  const MixturePlan plan = MakePlan({30, 20}, 0, 1);  // 50 positions
  const std::vector<Segment> whole = {{0, 50}};
  ASSERT_TRUE(MixtureLayout::Make(plan, 0, whole, {0, 0}, 8, false).ok());
  EXPECT_FALSE(MixtureLayout::Make(plan, 0, whole, {0}, 8, false).ok());
  EXPECT_FALSE(MixtureLayout::Make(plan, 0, whole, {0, 0, 0}, 8, false).ok());
  for (const Segment& outside :
       {Segment{-1, 10}, Segment{40, 51}, Segment{10, 10}, Segment{20, 5}, Segment{50, 60}}) {
    const auto layout = MixtureLayout::Make(plan, 0, {{0, 5}, outside}, {0, 0}, 8, false);
    EXPECT_FALSE(layout.ok()) << "[" << outside.begin << ", " << outside.end << ")";
  }
  EXPECT_FALSE(MixtureLayout::Make(plan, 0, whole, {0, 0}, 0, false).ok());
  EXPECT_FALSE(MixtureLayout::Make(plan, 0, whole, {0, 0}, -3, false).ok());
}

}  // namespace
}  // namespace stoker
