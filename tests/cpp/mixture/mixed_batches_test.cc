// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// MixedBatches (the buffers of a mixture epoch's batches) and SourceTargets (where a source
// engine's batches write into them).
#include "mixture/mixed_batches.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "mixture/mixture_layout.h"
#include "mixture/mixture_plan.h"

namespace stoker {
namespace {

// Output columns: two int64, a float32, then those that get no buffer (bool, a fixed-size
// list, a string), then an int16.
std::shared_ptr<arrow::Schema> OutputSchema() {
  return arrow::schema({arrow::field("a", arrow::int64()), arrow::field("b", arrow::int64()),
                        arrow::field("f", arrow::float32()), arrow::field("flag", arrow::boolean()),
                        arrow::field("vec", arrow::fixed_size_list(arrow::float32(), 3)),
                        arrow::field("name", arrow::utf8()), arrow::field("s", arrow::int16())});
}

// A two-source epoch of 10,000 positions in batches of 4,096 (the last 1,808 rows).
std::shared_ptr<const MixtureLayout> Layout() {
  const auto plan = MixturePlan::Make({6000, 4000}, 0, 3).ValueOrDie();
  return std::make_shared<const MixtureLayout>(
      MixtureLayout::Make(plan, 0, {{0, 10000}}, {0, 0}, 4096, false).ValueOrDie());
}

uintptr_t Address(const std::shared_ptr<arrow::Buffer>& buffer) {
  return reinterpret_cast<uintptr_t>(buffer->data());
}

TEST(MixedBatchesTest, ScalarNumberColumnsGetTheirRowsOthersNone) {
  const auto layout = Layout();
  ASSERT_EQ(layout->num_batches(), 3);
  MixedBatches batches(OutputSchema(), layout, arrow::default_memory_pool());
  const std::vector<int64_t> row_bytes = {8, 8, 4, 0, 0, 0, 2};
  for (int c = 0; c < 7; ++c) EXPECT_EQ(batches.row_bytes(c), row_bytes[c]) << "column " << c;
  for (int64_t b = 0; b < layout->num_batches(); ++b) {
    const auto columns = batches.Get(b).ValueOrDie();
    ASSERT_EQ(columns->size(), 7u);
    const int64_t rows = layout->batch_rows(b);
    for (int c = 0; c < 7; ++c) {
      const auto& buffer = (*columns)[c];
      if (row_bytes[c] == 0) {
        EXPECT_EQ(buffer, nullptr) << "batch " << b << " column " << c;
        continue;
      }
      ASSERT_NE(buffer, nullptr) << "batch " << b << " column " << c;
      EXPECT_TRUE(buffer->is_mutable());
      EXPECT_EQ(buffer->size(), rows * row_bytes[c]) << "batch " << b << " column " << c;
      EXPECT_EQ(Address(buffer) % 64, 0u) << "batch " << b << " column " << c;
    }
    // The columns do not overlap: each can be written whole without touching another.
    std::vector<int> scalar = {0, 1, 2, 6};
    for (size_t i = 0; i < scalar.size(); ++i) {
      for (size_t j = i + 1; j < scalar.size(); ++j) {
        const auto& x = (*columns)[scalar[i]];
        const auto& y = (*columns)[scalar[j]];
        EXPECT_TRUE(Address(x) + x->size() <= Address(y) || Address(y) + y->size() <= Address(x))
            << "batch " << b << " columns " << scalar[i] << " and " << scalar[j];
      }
    }
  }
}

TEST(MixedBatchesTest, ColumnsOfAPowerOfTwoBytesDoNotStartAPageMultipleApart) {
  const auto layout = Layout();
  ASSERT_EQ(layout->batch_rows(0), 4096);  // 32 KiB of each int64 column
  MixedBatches batches(OutputSchema(), layout, arrow::default_memory_pool());
  const auto columns = batches.Get(0).ValueOrDie();
  EXPECT_NE(Address((*columns)[0]) % 4096, Address((*columns)[1]) % 4096);
}

TEST(MixedBatchesTest, GetReturnsTheSameBuffersUntilReleased) {
  const auto layout = Layout();
  MixedBatches batches(OutputSchema(), layout, arrow::default_memory_pool());
  const auto first = batches.Get(1).ValueOrDie();
  const auto again = batches.Get(1).ValueOrDie();
  EXPECT_EQ(first, again);
  EXPECT_EQ((*first)[0]->data(), (*again)[0]->data());
  // Another batch has buffers of its own.
  const auto other = batches.Get(0).ValueOrDie();
  EXPECT_NE((*other)[0]->data(), (*first)[0]->data());
  // Released, the batch's buffers live on in `first`; asking again makes new ones.
  batches.Release(1);
  const auto fresh = batches.Get(1).ValueOrDie();
  EXPECT_NE(fresh, first);
  for (int c : {0, 1, 2, 6}) EXPECT_NE((*fresh)[c]->data(), (*first)[c]->data()) << "column " << c;
  // Releasing one batch leaves the others alone.
  EXPECT_EQ(batches.Get(0).ValueOrDie(), other);
}

TEST(MixedBatchesTest, ABatchOutsideTheLayoutIsAnIndexError) {
  MixedBatches batches(OutputSchema(), Layout(), arrow::default_memory_pool());
  for (const int64_t b : {int64_t{-1}, int64_t{3}, int64_t{1000}}) {
    const auto columns = batches.Get(b);
    ASSERT_FALSE(columns.ok()) << "batch " << b;
    EXPECT_TRUE(columns.status().IsIndexError()) << columns.status().ToString();
  }
}

TEST(MixedBatchesTest, ABatchIsWrittenOnceEverySourcesPiecesAreDone) {
  const auto layout = Layout();
  auto batches =
      std::make_shared<MixedBatches>(OutputSchema(), layout, arrow::default_memory_pool());
  const std::vector<int> engine_column = {0, 1, 2, 3, 4, 5, 6};
  const SourceTargets first(batches, engine_column, 7, layout->pieces(0));
  const SourceTargets second(batches, engine_column, 7, layout->pieces(1));
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(5); };
  // Batch 0 holds a piece of each source: it is written once both are done.
  ASSERT_EQ(layout->pieces(0)[0].batch, 0);
  ASSERT_EQ(layout->pieces(1)[0].batch, 0);
  EXPECT_FALSE(batches->WaitWritten(0, soon()));
  first.Done(0);
  EXPECT_FALSE(batches->WaitWritten(0, soon()));
  EXPECT_FALSE(batches->WaitWritten(1, soon()));
  // A waiter is woken by the last piece, from another thread.
  std::thread last([&second] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    second.Done(0);
  });
  EXPECT_TRUE(batches->WaitWritten(0, std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  last.join();
  // Engine batches past the pieces count for nothing; Release forgets the count.
  second.Done(static_cast<int64_t>(layout->pieces(1).size()));
  batches->Release(0);
  EXPECT_FALSE(batches->WaitWritten(0, soon()));
  // Rows written in parts (a piece cut where a source's epoch ends) add up.
  const int64_t rows = layout->batch_rows(1);
  batches->Written(1, rows - 1);
  EXPECT_FALSE(batches->WaitWritten(1, soon()));
  batches->Written(1, 1);
  EXPECT_TRUE(batches->WaitWritten(1, soon()));
}

TEST(SourceTargetsTest, APieceWritesIntoItsMixedBatchAtItsOffset) {
  const auto layout = Layout();
  auto batches =
      std::make_shared<MixedBatches>(OutputSchema(), layout, arrow::default_memory_pool());
  // The engine's columns in another order, with one of its own: output a -> engine 3,
  // b -> 0, f -> 2, flag -> 1, vec and name -> none, s -> 5; engine column 4 is its own.
  const std::vector<int> engine_column = {3, 0, 2, 1, -1, -1, 5};
  const int num_engine_columns = 6;
  const int source = 1;
  const std::vector<MixturePiece>& pieces = layout->pieces(source);
  ASSERT_GE(pieces.size(), 3u);
  const SourceTargets targets(batches, engine_column, num_engine_columns, pieces);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const MixturePiece& piece = pieces[k];
    const auto target = targets.For(static_cast<int64_t>(k)).ValueOrDie();
    ASSERT_EQ(target.columns.size(), static_cast<size_t>(num_engine_columns)) << "piece " << k;
    const auto mixed = batches->Get(piece.batch).ValueOrDie();
    std::vector<bool> given(num_engine_columns, false);
    for (int c : {0, 1, 2, 6}) {
      const int e = engine_column[c];
      const auto& buffer = target.columns[e];
      ASSERT_NE(buffer, nullptr) << "piece " << k << " column " << c;
      const int64_t width = batches->row_bytes(c);
      EXPECT_EQ(buffer->data(), (*mixed)[c]->data() + piece.offset * width)
          << "piece " << k << " column " << c;
      EXPECT_EQ(buffer->size(), piece.rows * width) << "piece " << k << " column " << c;
      EXPECT_TRUE(buffer->is_mutable());
      given[e] = true;
    }
    for (int e = 0; e < num_engine_columns; ++e) {
      if (!given[e]) EXPECT_EQ(target.columns[e], nullptr) << "piece " << k << " engine " << e;
    }
  }
  // Past its pieces (rows beyond what the epoch takes) and before them: no buffers.
  for (const int64_t k : {static_cast<int64_t>(pieces.size()), int64_t{-1}}) {
    const auto target = targets.For(k).ValueOrDie();
    EXPECT_TRUE(target.columns.empty()) << "batch " << k;
  }
}

TEST(SourceTargetsTest, TwoSourcesPiecesOfABatchTileItsBuffers) {
  // What source 0 and source 1 are given for one mixed batch covers each buffer exactly.
  const auto layout = Layout();
  auto batches =
      std::make_shared<MixedBatches>(OutputSchema(), layout, arrow::default_memory_pool());
  const std::vector<int> identity = {0, 1, 2, 3, 4, 5, 6};
  const auto mixed = batches->Get(2).ValueOrDie();
  std::vector<int64_t> covered(7, 0);
  for (int s = 0; s < 2; ++s) {
    const SourceTargets targets(batches, identity, 7, layout->pieces(s));
    for (size_t k = 0; k < layout->pieces(s).size(); ++k) {
      if (layout->pieces(s)[k].batch != 2) continue;
      const auto target = targets.For(static_cast<int64_t>(k)).ValueOrDie();
      for (int c : {0, 1, 2, 6}) {
        const auto& buffer = target.columns[c];
        ASSERT_NE(buffer, nullptr);
        EXPECT_EQ(buffer->data(), (*mixed)[c]->data() + covered[c]) << "source " << s;
        covered[c] += buffer->size();
      }
    }
  }
  for (int c : {0, 1, 2, 6}) EXPECT_EQ(covered[c], (*mixed)[c]->size()) << "column " << c;
}

}  // namespace
}  // namespace stoker
