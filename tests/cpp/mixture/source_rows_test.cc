// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/source_rows.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>

#include "common/fixtures.h"

namespace stoker {
namespace {

constexpr int64_t kRows = 10;  // the source's rows: one epoch of Z

class SourceRowsTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteDataset(dir_.path(), 2, kRows / 2, 3); }

  std::shared_ptr<const Loader> Source(bool shuffle) const {
    LoaderOptions options;
    options.sources = {dir_.path().string()};
    options.columns = {"row_id", "value", "name"};
    options.batch_size = 4;
    options.shuffle = shuffle;
    options.seed = 11;
    options.shuffle_window = 4;
    options.num_threads = 2;
    options.output = OutputKind::kArrow;
    return Loader::Make(options).ValueOrDie();
  }

  // The mixture's output columns: the source's, in another order.
  static std::shared_ptr<arrow::Schema> Output() {
    return arrow::schema(
        {arrow::field("value", arrow::float32()), arrow::field("row_id", arrow::int64())});
  }

  // Row ids of Z's rows [start, start + count) as `rows` hands them out, each slice checked
  // to carry the output's columns.
  static std::vector<int64_t> Take(SourceRows* rows, int64_t start, int64_t count) {
    std::vector<BatchSlice> slices;
    EXPECT_TRUE(rows->Take(start, count, &slices).ok());
    std::vector<int64_t> ids;
    for (const auto& slice : slices) {
      EXPECT_TRUE(slice.batch->schema()->Equals(*Output()));
      EXPECT_LE(slice.offset + slice.length, slice.batch->num_rows());
      const auto& column = static_cast<const arrow::Int64Array&>(*slice.batch->column(1));
      const auto& values = static_cast<const arrow::FloatArray&>(*slice.batch->column(0));
      for (int64_t i = slice.offset; i < slice.offset + slice.length; ++i) {
        ids.push_back(column.Value(i));
        EXPECT_EQ(values.Value(i), static_cast<float>(column.Value(i)) / 2);  // row kept whole
      }
    }
    EXPECT_EQ(static_cast<int64_t>(ids.size()), count);
    return ids;
  }

  testing::TempDir dir_;
  std::shared_ptr<TaskPool> workers_ = std::make_shared<TaskPool>(2);
};

TEST_F(SourceRowsTest, UnshuffledEpochsFollowEachOtherInStorageOrder) {
  auto rows = SourceRows::Make(Source(false), *Output(), workers_).ValueOrDie();
  EXPECT_EQ(Take(&rows, 0, 7), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  // Going on from where the last take ended crosses into the source's next epoch.
  EXPECT_EQ(Take(&rows, 7, 6), (std::vector<int64_t>{7, 8, 9, 0, 1, 2}));
  // Anywhere else restarts the engine there: row 25 is row 5 of epoch 2.
  EXPECT_EQ(Take(&rows, 25, 3), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_TRUE(Take(&rows, 28, 0).empty());
}

TEST_F(SourceRowsTest, EachEpochIsItsOwnShuffleAndAResumeReadsTheSameRows) {
  auto rows = SourceRows::Make(Source(true), *Output(), workers_).ValueOrDie();
  const std::vector<int64_t> z = Take(&rows, 0, 3 * kRows);
  std::vector<int64_t> all(kRows);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> one(z.begin() + epoch * kRows, z.begin() + (epoch + 1) * kRows);
    std::sort(one.begin(), one.end());
    EXPECT_EQ(one, all) << "epoch " << epoch;
  }
  EXPECT_NE(std::vector<int64_t>(z.begin(), z.begin() + kRows),
            std::vector<int64_t>(z.begin() + kRows, z.begin() + 2 * kRows));
  // A fresh reader started mid-epoch gives the same rows.
  auto resumed = SourceRows::Make(Source(true), *Output(), workers_).ValueOrDie();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  EXPECT_TRUE(resumed.WaitReady(13, deadline).ValueOrDie());
  EXPECT_EQ(Take(&resumed, 13, 9), std::vector<int64_t>(z.begin() + 13, z.begin() + 22));
  ASSERT_TRUE(resumed.Prepare(22).ok());
  EXPECT_EQ(Take(&resumed, 22, 8), std::vector<int64_t>(z.begin() + 22, z.end()));
}

TEST_F(SourceRowsTest, AColumnTheSourceLacksIsAKeyError) {
  const auto schema = arrow::schema(
      {arrow::field("row_id", arrow::int64()), arrow::field("label", arrow::int32())});
  const auto made = SourceRows::Make(Source(false), *schema, workers_);
  ASSERT_TRUE(made.status().IsKeyError());
  EXPECT_EQ(made.status().message(), "a mixture source has no column 'label'");
}

}  // namespace
}  // namespace stoker
