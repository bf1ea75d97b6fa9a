// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>

#include "common/fixtures.h"
#include "loader/loader_internal.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "stoker/error.h"

namespace stoker {
namespace {

constexpr int kFiles = 3;
constexpr int64_t kRowsPerFile = 1000;
constexpr int64_t kRows = kFiles * kRowsPerFile;

LoaderOptions Options(const testing::TempDir& dir) {
  LoaderOptions options;
  options.sources = {dir.path().string()};
  options.columns = {"row_id", "value", "vec"};
  options.batch_size = 128;
  options.seed = 5;
  options.shuffle_window = 700;
  return options;
}

std::vector<std::shared_ptr<arrow::RecordBatch>> ReadEpoch(const LoaderOptions& options,
                                                           int64_t epoch = 0) {
  auto loader = Loader::Make(options).ValueOrDie();
  auto stream = loader->StartEpoch(epoch).ValueOrDie();
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  for (;;) {
    auto batch = stream->Next().ValueOrDie();
    if (batch == nullptr) break;
    out.push_back(batch);
  }
  EXPECT_EQ(static_cast<int64_t>(out.size()), loader->num_batches());
  return out;
}

std::vector<int64_t> RowIds(const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  std::vector<int64_t> ids;
  for (const auto& batch : batches) {
    auto column = std::static_pointer_cast<arrow::Int64Array>(batch->GetColumnByName("row_id"));
    for (int64_t i = 0; i < column->length(); ++i) ids.push_back(column->Value(i));
  }
  return ids;
}

void ExpectSameBatches(const std::vector<std::shared_ptr<arrow::RecordBatch>>& a,
                       const std::vector<std::shared_ptr<arrow::RecordBatch>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i]->Equals(*b[i])) << "batch " << i;
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteDataset(dir_.path(), kFiles, kRowsPerFile, 150); }
  testing::TempDir dir_;
};

TEST_F(LoaderTest, SameBatchesWhateverTheThreadCount) {
  auto options = Options(dir_);
  options.num_threads = 1;
  const auto one = ReadEpoch(options);
  for (int threads : {2, 8}) {
    options.num_threads = threads;
    options.prefetch = threads == 8 ? 1 : 0;
    ExpectSameBatches(one, ReadEpoch(options));
  }
}

TEST_F(LoaderTest, DefaultThreadsAreThisRanksCpuBudget) {
  setenv("LOCAL_WORLD_SIZE", "2", 1);  // this test's own process (ctest runs each apart)
  auto options = Options(dir_);
  auto loader = Loader::Make(options).ValueOrDie();
  EXPECT_EQ(loader->cpu_budget().ranks_per_node, 2);
  EXPECT_EQ(loader->options().num_threads, loader->cpu_budget().threads);
  EXPECT_EQ(loader->cpu_budget().threads, std::max(1, loader->cpu_budget().cpus / 2));
  options.num_threads = 3;  // asked for: kept
  EXPECT_EQ(Loader::Make(options).ValueOrDie()->options().num_threads, 3);
  unsetenv("LOCAL_WORLD_SIZE");
}

TEST_F(LoaderTest, ExactBatchesCoverEveryRowOnce) {
  const auto batches = ReadEpoch(Options(dir_));
  for (size_t i = 0; i + 1 < batches.size(); ++i) EXPECT_EQ(batches[i]->num_rows(), 128);
  EXPECT_EQ(batches.back()->num_rows(), kRows % 128);
  auto ids = RowIds(batches);
  std::set<int64_t> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(*unique.begin(), 0);
  EXPECT_EQ(*unique.rbegin(), kRows - 1);
  // Shuffled: not in storage order.
  EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end()));
}

TEST_F(LoaderTest, ValuesStayWithTheirRows) {
  for (const auto& batch : ReadEpoch(Options(dir_))) {
    auto ids = std::static_pointer_cast<arrow::Int64Array>(batch->column(0));
    auto values = std::static_pointer_cast<arrow::FloatArray>(batch->column(1));
    auto vec = std::static_pointer_cast<arrow::FixedSizeListArray>(batch->column(2));
    auto flat = std::static_pointer_cast<arrow::FloatArray>(vec->values());
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      ASSERT_EQ(values->Value(i), static_cast<float>(ids->Value(i)) / 2);
      ASSERT_EQ(flat->Value(3 * i + 2), static_cast<float>(ids->Value(i) + 2));
    }
  }
}

TEST_F(LoaderTest, WindowSmallerThanBatchStillExact) {
  auto options = Options(dir_);
  options.shuffle_window = 1;
  options.batch_size = 1000;
  options.num_threads = 3;
  auto ids = RowIds(ReadEpoch(options));
  EXPECT_EQ(std::set<int64_t>(ids.begin(), ids.end()).size(), static_cast<size_t>(kRows));
}

TEST_F(LoaderTest, NoShuffleIsStorageOrder) {
  auto options = Options(dir_);
  options.shuffle = false;
  options.num_threads = 4;
  auto ids = RowIds(ReadEpoch(options));
  ASSERT_EQ(static_cast<int64_t>(ids.size()), kRows);
  for (int64_t i = 0; i < kRows; ++i) ASSERT_EQ(ids[i], i);
}

TEST_F(LoaderTest, EpochsDiffer) {
  EXPECT_NE(RowIds(ReadEpoch(Options(dir_), 0)), RowIds(ReadEpoch(Options(dir_), 1)));
}

TEST_F(LoaderTest, RanksAreDisjointAndEqual) {
  auto options = Options(dir_);
  options.world_size = 4;
  options.drop_last = true;
  std::set<int64_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    options.rank = rank;
    auto batches = ReadEpoch(options);
    EXPECT_EQ(batches.size(), static_cast<size_t>(kRows / 4 / 128));
    for (int64_t id : RowIds(batches)) EXPECT_TRUE(all.insert(id).second);
  }
}

TEST_F(LoaderTest, ArrowOutputKeepsStringsAndNulls) {
  auto options = Options(dir_);
  options.columns = {"row_id", "name", "maybe"};
  options.output = OutputKind::kArrow;
  for (const auto& batch : ReadEpoch(options)) {
    auto ids = std::static_pointer_cast<arrow::Int64Array>(batch->column(0));
    auto names = std::static_pointer_cast<arrow::StringArray>(batch->column(1));
    auto maybe = std::static_pointer_cast<arrow::Int32Array>(batch->column(2));
    for (int64_t i = 0; i < batch->num_rows(); ++i) {
      const int64_t id = ids->Value(i);
      ASSERT_EQ(names->GetString(i), "row" + std::to_string(id));
      ASSERT_EQ(maybe->IsNull(i), id % 7 == 0);
      if (!maybe->IsNull(i)) ASSERT_EQ(maybe->Value(i), id);
    }
  }
}

TEST_F(LoaderTest, DroppingAStreamMidEpochStopsPromptly) {
  auto loader = Loader::Make(Options(dir_)).ValueOrDie();
  for (int i = 0; i < 20; ++i) {
    auto stream = loader->StartEpoch(i).ValueOrDie();
    ASSERT_NE(stream->Next().ValueOrDie(), nullptr);
  }  // each stream is destroyed here with work in flight
}

TEST_F(LoaderTest, ErrorsNameWhatToFix) {
  auto options = Options(dir_);
  options.columns = {"row_id", "nope"};
  auto unknown = Loader::Make(options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(unknown.status().IsKeyError());
  EXPECT_NE(unknown.status().message().find("available columns: row_id"), std::string::npos);

  options.columns = {"name"};
  auto strings = Loader::Make(options);
  ASSERT_FALSE(strings.ok());
  EXPECT_TRUE(strings.status().IsTypeError());

  options.columns = {"maybe"};
  auto nulls = Loader::Make(options);
  ASSERT_FALSE(nulls.ok());
  EXPECT_NE(nulls.status().message().find("'maybe' has"), std::string::npos);

  options = Options(dir_);
  options.batch_size = 0;
  EXPECT_TRUE(Loader::Make(options).status().IsInvalid());
}

TEST_F(LoaderTest, NotParquetIsNamed) {
  std::ofstream(dir_.path() / "zz.parquet") << "this is not parquet";
  auto made = Loader::Make(Options(dir_));
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("zz.parquet"), std::string::npos);
}

TEST_F(LoaderTest, DisagreeingSchemasNameBothFiles) {
  testing::TempDir other;
  testing::WriteDataset(other.path(), 1, 10, 10);
  arrow::Int32Builder ids;
  ASSERT_TRUE(ids.AppendValues({1, 2}).ok());
  auto table = arrow::Table::Make(arrow::schema({arrow::field("row_id", arrow::int32())}),
                                  {ids.Finish().ValueOrDie()});
  auto out = arrow::io::FileOutputStream::Open((other.path() / "z.parquet").string()).ValueOrDie();
  ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, 10).ok());
  ASSERT_TRUE(out->Close().ok());
  auto options = Options(other);
  options.columns = {"row_id"};
  auto made = Loader::Make(options);
  ASSERT_FALSE(made.ok());
  const auto& message = made.status().message();
  EXPECT_NE(message.find("part-0.parquet"), std::string::npos) << message;
  EXPECT_NE(message.find("z.parquet"), std::string::npos) << message;
  EXPECT_NE(message.find("row_id"), std::string::npos) << message;
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

std::vector<std::shared_ptr<arrow::RecordBatch>> ReadResumed(const LoaderOptions& options,
                                                             std::vector<ResumeRound> resumed) {
  auto loader = Loader::Make(options).ValueOrDie();
  auto stream = loader->StartEpoch(0, resumed).ValueOrDie();
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  for (;;) {
    auto batch = stream->Next().ValueOrDie();
    if (batch == nullptr) break;
    out.push_back(batch);
  }
  return out;
}

TEST_F(LoaderTest, ResumeGivesTheRemainingBatchesWhateverTheThreads) {
  auto options = Options(dir_);
  options.num_threads = 1;
  const auto full = ReadEpoch(options);
  for (int64_t k : {int64_t{0}, int64_t{1}, int64_t{5}, static_cast<int64_t>(full.size()) - 1,
                    static_cast<int64_t>(full.size())}) {
    options.num_threads = k % 2 == 0 ? 4 : 2;
    const auto rest = ReadResumed(options, {{1, k * options.batch_size}});
    ExpectSameBatches({full.begin() + k, full.end()}, rest);
  }
}

TEST_F(LoaderTest, ElasticResumeFourToThreeRanks) {
  auto options = Options(dir_);
  options.world_size = 4;
  std::set<int64_t> seen;
  const int64_t k = 3;  // batches each of the 4 ranks consumed
  for (int rank = 0; rank < 4; ++rank) {
    options.rank = rank;
    auto batches = ReadEpoch(options);
    for (int64_t id : RowIds({batches.begin(), batches.begin() + k})) {
      ASSERT_TRUE(seen.insert(id).second);
    }
  }
  options.world_size = 3;
  size_t steps = 0;
  for (int rank = 0; rank < 3; ++rank) {
    options.rank = rank;
    auto batches = ReadResumed(options, {{4, k * options.batch_size}});
    if (rank > 0) EXPECT_EQ(batches.size(), steps);
    steps = batches.size();
    for (int64_t id : RowIds(batches)) ASSERT_TRUE(seen.insert(id).second) << id;
  }
  EXPECT_GE(static_cast<int64_t>(seen.size()), kRows - 2);
}

}  // namespace
}  // namespace stoker

namespace stoker {
namespace {

// Several servers each stream a disjoint share of the plan (chunks of batches dealt round
// robin); merged in plan order they give exactly the epoch.
TEST_F(LoaderTest, ShardedStreamsMergeIntoTheEpoch) {
  auto options = Options(dir_);
  const auto full = ReadEpoch(options);
  auto loader = Loader::Make(options).ValueOrDie();
  for (int64_t shards : {1, 2, 3}) {
    std::vector<std::unique_ptr<BatchStream>> streams;
    for (int64_t k = 0; k < shards; ++k) {
      LoaderImpl::StreamSpec spec;
      spec.shards = shards;
      spec.shard = k;
      spec.chunk = 2;
      streams.push_back(Internal(*loader).StartStream(spec).ValueOrDie());
    }
    std::vector<std::shared_ptr<arrow::RecordBatch>> merged;
    for (size_t b = 0; b < full.size(); ++b) {
      auto batch = streams[(b / 2) % shards]->Next().ValueOrDie();
      ASSERT_NE(batch, nullptr) << "batch " << b;
      merged.push_back(batch);
    }
    for (auto& stream : streams) EXPECT_EQ(stream->Next().ValueOrDie(), nullptr);
    ExpectSameBatches(full, merged);
  }
  // A stream may serve a run of slots of each period: here slots 0-1 of 3 and slot 2, from
  // batch 3 on.
  {
    LoaderImpl::StreamSpec run;
    run.shards = 3;
    run.span = 2;
    run.chunk = 2;
    run.first_batch = 3;
    LoaderImpl::StreamSpec last = run;
    last.shard = 2;
    last.span = 1;
    auto runs = Internal(*loader).StartStream(run).ValueOrDie();
    auto lasts = Internal(*loader).StartStream(last).ValueOrDie();
    for (size_t b = 3; b < full.size(); ++b) {
      auto& stream = (b / 2) % 3 < 2 ? runs : lasts;
      auto batch = stream->Next().ValueOrDie();
      ASSERT_NE(batch, nullptr) << "batch " << b;
      EXPECT_TRUE(batch->Equals(*full[b])) << b;
    }
    EXPECT_EQ(runs->Next().ValueOrDie(), nullptr);
    EXPECT_EQ(lasts->Next().ValueOrDie(), nullptr);
    LoaderImpl::StreamSpec past = run;
    past.shard = 2;  // slots 2 and 3 of 3
    EXPECT_FALSE(Internal(*loader).StartStream(past).ok());
  }
  // A stream restarted from a later batch continues exactly there.
  LoaderImpl::StreamSpec spec;
  spec.first_batch = 7;
  auto rest = Internal(*loader).StartStream(spec).ValueOrDie();
  for (size_t b = 7; b < full.size(); ++b) {
    EXPECT_TRUE(rest->Next().ValueOrDie()->Equals(*full[b])) << b;
  }
}

}  // namespace
}  // namespace stoker
