// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_stream.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "assemble/recycling_pool.h"
#include "common/fixtures.h"

namespace stoker {
namespace {

// Source a: 80,000 rows; source b: 30,000 rows, read 45,000 times an epoch (upsampled: one
// and a half of its own epochs), its columns asked for in another order. 125,000 positions:
// two plan blocks.
constexpr int64_t kRowsA = 80000;
constexpr int64_t kRowsB = 30000;
constexpr int64_t kPlannedB = 45000;
constexpr int64_t kBatch = 4096;
constexpr int64_t kWindow = 20000;

struct Sources {
  Sources() {
    std::filesystem::create_directories(dir.path() / "a");
    std::filesystem::create_directories(dir.path() / "b");
    testing::WriteDataset(dir.path() / "a", 2, kRowsA / 2, 10000);
    testing::WriteDataset(dir.path() / "b", 1, kRowsB, 7000);
  }
  /// The sources' loaders, built with the mixture's options as stoker.MixtureLoader builds
  /// them.
  std::vector<std::shared_ptr<const Loader>> Loaders(int num_threads, bool drop_last) const {
    std::vector<std::shared_ptr<const Loader>> loaders;
    for (const char* name : {"a", "b"}) {
      LoaderOptions options;
      options.sources = {(dir.path() / name).string()};
      options.columns = name[0] == 'a' ? std::vector<std::string>{"row_id", "value", "name"}
                                       : std::vector<std::string>{"name", "row_id", "value"};
      options.batch_size = kBatch;
      options.drop_last = drop_last;
      options.seed = name[0] == 'a' ? 3 : 4;
      options.shuffle_window = kWindow;
      options.num_threads = num_threads;
      options.prefetch = 2;
      options.output = OutputKind::kArrow;
      loaders.push_back(Loader::Make(options).ValueOrDie());
    }
    return loaders;
  }
  std::shared_ptr<const MixtureConfig> Config(int num_threads, bool drop_last = false) const {
    return ConfigOf(Loaders(num_threads, drop_last));
  }
  /// The mixture of `loaders` (Loaders()'s, kept by a test that reads their stats).
  static std::shared_ptr<const MixtureConfig> ConfigOf(
      const std::vector<std::shared_ptr<const Loader>>& loaders) {
    return MakeMixtureConfig(loaders, MixturePlan::Make({kRowsA, kPlannedB}, 0, 9).ValueOrDie(),
                             arrow::default_memory_pool())
        .ValueOrDie();
  }
  testing::TempDir dir;
};

std::vector<std::shared_ptr<arrow::RecordBatch>> ReadAll(BatchStream& stream) {
  std::vector<std::shared_ptr<arrow::RecordBatch>> out;
  for (;;) {
    auto batch = stream.Next().ValueOrDie();
    if (batch == nullptr) break;
    out.push_back(std::move(batch));
  }
  return out;
}

std::vector<int64_t> Ids(const arrow::RecordBatch& batch) {
  const auto& column = static_cast<const arrow::Int64Array&>(*batch.GetColumnByName("row_id"));
  return {column.raw_values(), column.raw_values() + column.length()};
}

/// The oracle: each source's stream of row ids read epoch after epoch by its plain loader,
/// and each batch's ids by walking the plan position by position.
std::vector<std::vector<int64_t>> PlannedIds(const MixtureConfig& config, int64_t epoch,
                                             const std::vector<Segment>& segments) {
  const MixturePlan& plan = *config.plan;
  std::vector<std::vector<int64_t>> streams;
  for (size_t s = 0; s < config.sources.size(); ++s) {
    std::vector<int64_t> ids;
    const int64_t needed = (epoch + 1) * config.strides[s];
    for (int64_t e = 0; static_cast<int64_t>(ids.size()) < needed; ++e) {
      auto stream = config.sources[s]->StartEpoch(e).ValueOrDie();
      for (const auto& batch : ReadAll(*stream)) {
        const auto batch_ids = Ids(*batch);
        ids.insert(ids.end(), batch_ids.begin(), batch_ids.end());
      }
    }
    streams.push_back(std::move(ids));
  }
  std::vector<std::vector<int64_t>> batches;
  std::vector<std::vector<int64_t>> by_source(streams.size());
  int64_t in_batch = 0;
  auto flush = [&] {
    std::vector<int64_t> batch;
    for (auto& ids : by_source) {
      batch.insert(batch.end(), ids.begin(), ids.end());
      ids.clear();
    }
    batches.push_back(std::move(batch));
    in_batch = 0;
  };
  std::vector<uint8_t> positions;  // the source of every position of the epoch
  for (int64_t block = 0; block < plan.num_blocks(); ++block) {
    const auto block_sources = plan.BlockSources(epoch, block);
    positions.insert(positions.end(), block_sources.begin(), block_sources.end());
  }
  for (const Segment& segment : segments) {
    std::vector<int64_t> before = plan.RowsBefore(epoch, segment.begin);
    for (int64_t p = segment.begin; p < segment.end; ++p) {
      const int s = positions[p];
      by_source[s].push_back(streams[s][epoch * config.strides[s] + before[s]++]);
      if (++in_batch == config.batch_size) flush();
    }
  }
  if (in_batch > 0) flush();
  return batches;
}

void ExpectPlanned(const MixtureConfig& config, int64_t epoch, const std::vector<Segment>& segments,
                   const std::vector<std::shared_ptr<arrow::RecordBatch>>& batches) {
  const auto planned = PlannedIds(config, epoch, segments);
  ASSERT_EQ(batches.size(), planned.size());
  for (size_t i = 0; i < batches.size(); ++i) {
    ASSERT_TRUE(batches[i]->ValidateFull().ok());
    EXPECT_EQ(Ids(*batches[i]), planned[i]) << "epoch " << epoch << " batch " << i;
    // The other columns travel with their row: value = row_id / 2, name = "row<id>".
    const auto& values = static_cast<const arrow::FloatArray&>(*batches[i]->column(1));
    const auto& names = static_cast<const arrow::StringArray&>(*batches[i]->column(2));
    for (int64_t r = 0; r < batches[i]->num_rows(); r += 97) {
      EXPECT_EQ(values.Value(r), static_cast<float>(planned[i][r]) / 2);
      EXPECT_EQ(names.GetString(r), "row" + std::to_string(planned[i][r]));
    }
  }
}

std::vector<std::shared_ptr<arrow::RecordBatch>> ReadEpoch(
    std::shared_ptr<const MixtureConfig> config, int64_t epoch, std::vector<Segment> segments,
    std::shared_ptr<MixtureTally> tally = nullptr) {
  auto stream =
      MixtureStream::Make(std::move(config), epoch, std::move(segments), tally).ValueOrDie();
  const int64_t expected = stream->num_batches();
  auto batches = ReadAll(*stream);
  EXPECT_EQ(static_cast<int64_t>(batches.size()), expected);
  return batches;
}

TEST(MixtureStreamTest, BatchesHoldThePlannedRowsOfEachSourceGroupedBySource) {
  const Sources sources;
  const auto config = sources.Config(2);
  const std::vector<Segment> whole = {{0, kRowsA + kPlannedB}};
  for (int64_t epoch : {0, 1}) {
    const auto batches = ReadEpoch(config, epoch, whole);
    EXPECT_EQ(batches.front()->schema()->field_names(),
              (std::vector<std::string>{"row_id", "value", "name"}));
    ExpectPlanned(*config, epoch, whole, batches);
  }
}

TEST(MixtureStreamTest, SameBatchesWhateverTheThreads) {
  const Sources sources;
  const std::vector<Segment> whole = {{0, kRowsA + kPlannedB}};
  const auto one = ReadEpoch(sources.Config(1), 1, whole);
  const auto four = ReadEpoch(sources.Config(4), 1, whole);
  ASSERT_EQ(one.size(), four.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(one[i]->Equals(*four[i])) << "batch " << i;
}

TEST(MixtureStreamTest, SegmentsOfAResumeReadFromWhereThePlanSays) {
  const Sources sources;
  const auto config = sources.Config(2);
  // A rank's slice started inside a block, and the two stretches an elastic resume leaves.
  const std::vector<Segment> resumed = {{5000, 9000}, {70000, 125000}};
  ExpectPlanned(*config, 1, resumed, ReadEpoch(config, 1, resumed));
}

TEST(MixtureStreamTest, TallyCountsEachSourcesDeliveredRows) {
  const Sources sources;
  const auto config = sources.Config(2);
  auto tally = std::make_shared<MixtureTally>(2);
  const auto batches = ReadEpoch(config, 0, {{0, kRowsA + kPlannedB}}, tally);
  EXPECT_EQ(tally->rows(), (std::vector<int64_t>{kRowsA, kPlannedB}));
  EXPECT_EQ(tally->batches(), static_cast<int64_t>(batches.size()));
}

TEST(MixtureStreamTest, DropLastLeavesTheShortBatchOut) {
  const Sources sources;
  const auto config = sources.Config(2, /*drop_last=*/true);
  const auto batches = ReadEpoch(config, 0, {{0, kRowsA + kPlannedB}});
  EXPECT_EQ(static_cast<int64_t>(batches.size()), (kRowsA + kPlannedB) / kBatch);
  for (const auto& batch : batches) EXPECT_EQ(batch->num_rows(), kBatch);
}

TEST(MixtureStreamTest, DestroyedMidEpochStopsAndJoins) {
  const Sources sources;
  auto stream =
      MixtureStream::Make(sources.Config(2), 0, {{0, kRowsA + kPlannedB}}, nullptr).ValueOrDie();
  ASSERT_NE(stream->Next().ValueOrDie(), nullptr);
  stream.reset();  // stops and joins the sources' engines; a hang fails by timeout
}

TEST(MixtureStreamTest, EverySourcesEngineStartsReadingWithTheEpoch) {
  const Sources sources;
  const auto loaders = sources.Loaders(2, false);
  const auto config = Sources::ConfigOf(loaders);
  // Before any batch is asked for, each source's engine reads its first units: none waits
  // for the source before it to deliver.
  auto stream = MixtureStream::Make(config, 0, {{0, kRowsA + kPlannedB}}, nullptr).ValueOrDie();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((loaders[0]->stats().units_read == 0 || loaders[1]->stats().units_read == 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GT(loaders[0]->stats().units_read, 0);
  EXPECT_GT(loaders[1]->stats().units_read, 0);
  EXPECT_EQ(stream->planned_rows_delivered(), 0);
}

TEST(MixtureStreamTest, SourcesShareTheMixturesWindowAndStrideWholeEpochs) {
  const Sources sources;
  const auto loaders = sources.Loaders(1, false);
  const auto config = Sources::ConfigOf(loaders);
  // ceil(20000 * 80000 / 125000) and ceil(20000 * 45000 / 125000).
  EXPECT_EQ(config->sources[0]->options().shuffle_window, 12800);
  EXPECT_EQ(config->sources[1]->options().shuffle_window, 7200);
  EXPECT_EQ(config->strides, (std::vector<int64_t>{kRowsA, 2 * kRowsB}));
  EXPECT_EQ(config->batch_size, kBatch);
  EXPECT_EQ(config->num_threads, 1);
  // The copies read the same dataset and count in the loaders' own stats.
  ReadEpoch(config, 0, {{0, 9000}});
  EXPECT_GT(loaders[0]->stats().rows, 0);
  EXPECT_GT(loaders[1]->stats().rows, 0);
}

TEST(MixtureStreamTest, RefusesAConfigThatDoesNotMatchItsPlan) {
  const Sources sources;
  auto config = std::make_shared<MixtureConfig>(*sources.Config(1));
  config->strides = {kRowsA};
  EXPECT_TRUE(MixtureStream::Make(config, 0, {{0, 10}}, nullptr).status().IsInvalid());
  EXPECT_TRUE(MixtureStream::Make(sources.Config(1), 0, {{0, kRowsA + kPlannedB + 1}}, nullptr)
                  .status()
                  .IsInvalid());
  EXPECT_TRUE(MakeMixtureConfig(sources.Loaders(1, false),
                                MixturePlan::Make({5, 5, 5}, 0, 1).ValueOrDie(),
                                arrow::default_memory_pool())
                  .status()
                  .IsInvalid());
}

}  // namespace
}  // namespace stoker
