// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "cache/disk_cache.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/fixtures.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A key as CacheKey makes them: 32 hex digits (the cache files entries by its first four).
std::string Key(int i) {
  char key[33];
  std::snprintf(key, sizeof(key), "%08x%024x", 0xabcd0000u + i, i);
  return key;
}

// A finished unit: fixed-width, string and nullable columns, `rows` rows from `first`.
std::shared_ptr<arrow::RecordBatch> Batch(int64_t first, int64_t rows = 500) {
  arrow::Int64Builder ids;
  arrow::StringBuilder names;
  arrow::DoubleBuilder maybe;
  for (int64_t r = first; r < first + rows; ++r) {
    EXPECT_TRUE(ids.Append(r).ok());
    EXPECT_TRUE(names.Append("row" + std::to_string(r)).ok());
    EXPECT_TRUE((r % 4 == 0 ? maybe.AppendNull() : maybe.Append(r * 0.5)).ok());
  }
  auto schema =
      arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                     arrow::field("maybe", arrow::float64())});
  return arrow::RecordBatch::Make(
      schema, rows,
      {ids.Finish().ValueOrDie(), names.Finish().ValueOrDie(), maybe.Finish().ValueOrDie()});
}

std::vector<fs::path> Entries(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".stkc") {
      found.push_back(entry.path());
    }
  }
  return found;
}

class DiskCacheTest : public ::testing::Test {
 protected:
  std::shared_ptr<DiskCache> Open(int64_t limit, CachePolicy policy = CachePolicy::kLru) {
    return DiskCache::Open(dir_.path().string(), limit, policy, stats_);
  }
  // Bytes one entry of Batch(...) takes on disk.
  int64_t EntryBytes() {
    const fs::path probe = dir_.path() / "probe";
    auto cache = DiskCache::Open(probe.string(), 0, CachePolicy::kLru, std::make_shared<Stats>());
    cache->Put(Key(999), *Batch(0));
    const int64_t bytes = cache->Usage().second;
    fs::remove_all(probe);
    return bytes;
  }

  testing::TempDir dir_;
  std::shared_ptr<Stats> stats_ = std::make_shared<Stats>();
};

TEST_F(DiskCacheTest, PutThenGetGivesTheSameBatch) {
  auto cache = Open(0);
  EXPECT_EQ(cache->Get(Key(1)), nullptr);
  const auto batch = Batch(0);
  cache->Put(Key(1), *batch);
  auto read = cache->Get(Key(1));
  ASSERT_NE(read, nullptr);
  EXPECT_TRUE(read->Equals(*batch));
  EXPECT_TRUE(read->ValidateFull().ok());
  EXPECT_EQ(cache->Usage().first, 1);
  EXPECT_TRUE(cache->TakeWarning().empty());

  // Another cache on the same directory (another process, a later run) finds it too.
  auto again = Open(0);
  auto reread = again->Get(Key(1));
  ASSERT_NE(reread, nullptr);
  EXPECT_TRUE(reread->Equals(*batch));

  const auto stats = stats_->Snapshot();
  EXPECT_EQ(stats.cache_hits, 2);
  EXPECT_EQ(stats.cache_misses, 1);
  EXPECT_EQ(stats.cache_corrupt, 0);
  EXPECT_EQ(stats.cache_bytes_written, cache->Usage().second);
}

TEST_F(DiskCacheTest, AFlippedByteIsDetectedCountedAndDeleted) {
  auto cache = Open(0);
  cache->Put(Key(1), *Batch(0));
  const auto entries = Entries(dir_.path());
  ASSERT_EQ(entries.size(), 1u);
  {
    // One bit of the payload, well past the 64-byte header.
    std::fstream file(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(200);
    const char byte = static_cast<char>(file.get());
    file.seekp(200);
    file.put(static_cast<char>(byte ^ 0x10));
  }
  EXPECT_EQ(cache->Get(Key(1)), nullptr);
  EXPECT_EQ(stats_->Snapshot().cache_corrupt, 1);
  EXPECT_FALSE(fs::exists(entries[0]));
  EXPECT_EQ(cache->Usage(), std::make_pair(int64_t{0}, int64_t{0}));

  // A truncated entry is damaged the same way.
  cache->Put(Key(2), *Batch(0));
  const auto rewritten = Entries(dir_.path());
  ASSERT_EQ(rewritten.size(), 1u);
  fs::resize_file(rewritten[0], fs::file_size(rewritten[0]) - 10);
  EXPECT_EQ(cache->Get(Key(2)), nullptr);
  EXPECT_EQ(stats_->Snapshot().cache_corrupt, 2);

  // Rebuilt from the source, the entry reads back.
  cache->Put(Key(1), *Batch(0));
  ASSERT_NE(cache->Get(Key(1)), nullptr);
}

TEST_F(DiskCacheTest, LruEvictsTheLeastRecentlyUsedUnderTheLimit) {
  const int64_t entry = EntryBytes();
  auto cache = Open(3 * entry + entry / 2);  // room for three entries
  // Apart in time, so the modification times a rescan orders by differ.
  for (int i = 1; i <= 3; ++i) {
    cache->Put(Key(i), *Batch(i));
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_NE(cache->Get(Key(1)), nullptr);  // 1 is now the most recent; 2 the least
  std::this_thread::sleep_for(20ms);
  cache->Put(Key(4), *Batch(4));
  EXPECT_EQ(stats_->Snapshot().cache_evictions, 1);
  EXPECT_EQ(cache->Usage().first, 3);
  EXPECT_LE(cache->Usage().second, 3 * entry + entry / 2);
  EXPECT_EQ(cache->Get(Key(2)), nullptr);
  for (int i : {1, 3, 4}) {
    auto read = cache->Get(Key(i));
    ASSERT_NE(read, nullptr) << "entry " << i;
    EXPECT_TRUE(read->Equals(*Batch(i))) << "entry " << i;
  }
}

TEST_F(DiskCacheTest, FillKeepsWhatIsThereOnceFull) {
  const int64_t entry = EntryBytes();
  auto cache = Open(2 * entry + entry / 2, CachePolicy::kFill);  // room for two entries
  for (int i = 1; i <= 4; ++i) cache->Put(Key(i), *Batch(i));
  EXPECT_EQ(cache->Usage().first, 2);
  EXPECT_NE(cache->Get(Key(1)), nullptr);
  EXPECT_NE(cache->Get(Key(2)), nullptr);
  EXPECT_EQ(cache->Get(Key(3)), nullptr);
  EXPECT_EQ(cache->Get(Key(4)), nullptr);
  EXPECT_EQ(stats_->Snapshot().cache_evictions, 0);
  EXPECT_TRUE(cache->TakeWarning().empty());  // full is not a failure
}

// Two caches on one directory stand for two processes sharing it (each has its own ledger
// descriptor, and flock excludes descriptors, not processes): together they stay under the
// limit, and each eviction is counted once, by the cache that removed the entry.
TEST_F(DiskCacheTest, CachesSharingADirectoryStayUnderTheLimitTogether) {
  const int64_t entry = EntryBytes();
  const int64_t limit = 3 * entry + entry / 2;  // room for three entries
  auto other_stats = std::make_shared<Stats>();
  auto a = Open(limit);
  auto b = DiskCache::Open(dir_.path().string(), limit, CachePolicy::kLru, other_stats);
  for (int i = 1; i <= 10; ++i) {
    (i % 2 == 1 ? a : b)->Put(Key(i), *Batch(i));
    const auto [entries, bytes] = a->Usage();
    EXPECT_LE(bytes, limit) << "after entry " << i << ": " << entries << " entries";
  }
  const int64_t evictions =
      stats_->Snapshot().cache_evictions + other_stats->Snapshot().cache_evictions;
  EXPECT_EQ(evictions, 10 - a->Usage().first);
  // Whichever wrote them, the entries left read back whole in both.
  for (int i = 8; i <= 10; ++i) {
    for (const auto& cache : {a, b}) {
      auto read = cache->Get(Key(i));
      ASSERT_NE(read, nullptr) << "entry " << i;
      EXPECT_TRUE(read->Equals(*Batch(i)));
    }
  }
}

// An entry another process evicts while this one has it mapped stays readable here.
TEST_F(DiskCacheTest, AnEvictedEntryStaysReadableWhereItIsMapped) {
  auto cache = Open(0);
  cache->Put(Key(1), *Batch(1));
  auto read = cache->Get(Key(1));
  ASSERT_NE(read, nullptr);
  for (const auto& path : Entries(dir_.path())) fs::remove(path);
  EXPECT_TRUE(read->Equals(*Batch(1)));
  EXPECT_EQ(cache->Get(Key(1)), nullptr);
  EXPECT_EQ(stats_->Snapshot().cache_corrupt, 0);
}

TEST_F(DiskCacheTest, AnEntryOverTheLimitIsNotWritten) {
  auto cache = Open(EntryBytes() - 1);
  cache->Put(Key(1), *Batch(1));
  EXPECT_EQ(cache->Usage().first, 0);
  EXPECT_EQ(cache->Get(Key(1)), nullptr);
  EXPECT_TRUE(cache->TakeWarning().empty());
}

TEST_F(DiskCacheTest, AnUnwritableDirTurnsWritesOffWithOneWarning) {
  // A directory cannot be made under a regular file (whoever runs the test, root included).
  const fs::path file = dir_.path() / "not-a-dir";
  std::ofstream(file) << "x";
  const std::string dir = (file / "cache").string();
  auto cache = DiskCache::Open(dir, 0, CachePolicy::kLru, stats_);
  const std::string warning = cache->TakeWarning();
  EXPECT_NE(warning.find(dir), std::string::npos) << warning;
  EXPECT_NE(warning.find("caching is off for writes"), std::string::npos) << warning;
  cache->Put(Key(1), *Batch(1));
  EXPECT_EQ(cache->Get(Key(1)), nullptr);  // a miss, not an error
  EXPECT_EQ(stats_->Snapshot().cache_bytes_written, 0);
  EXPECT_TRUE(cache->TakeWarning().empty());
}

TEST_F(DiskCacheTest, AFailedWriteTurnsWritesOffWithOneWarning) {
  auto cache = Open(0);
  cache->Put(Key(1), *Batch(1));
  // The staging directory becomes a file: the next write fails.
  fs::remove_all(dir_.path() / "tmp");
  std::ofstream(dir_.path() / "tmp") << "x";
  cache->Put(Key(2), *Batch(2));
  cache->Put(Key(3), *Batch(3));
  const std::string warning = cache->TakeWarning();
  EXPECT_NE(warning.find("caching is off for writes"), std::string::npos) << warning;
  EXPECT_TRUE(cache->TakeWarning().empty());
  EXPECT_EQ(cache->Get(Key(2)), nullptr);
  EXPECT_EQ(cache->Get(Key(3)), nullptr);
  EXPECT_NE(cache->Get(Key(1)), nullptr);  // reads go on
}

}  // namespace
}  // namespace stoker
