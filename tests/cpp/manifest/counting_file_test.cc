// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/counting_file.h"

#include <arrow/io/memory.h>
#include <arrow/memory_pool.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

namespace stoker {
namespace {

const std::string kBytes = "0123456789abcdef";

std::shared_ptr<arrow::io::RandomAccessFile> Inner() {
  return std::make_shared<arrow::io::BufferReader>(arrow::Buffer::FromString(kBytes));
}

TEST(CountingFileTest, EveryReadIsOneRequestOfTheBytesAskedFor) {
  Stats stats;
  auto counted_file = std::make_shared<CountingFile>(Inner(), &stats);
  CountingFile& file = *counted_file;
  char out[4];
  ASSERT_EQ(file.Read(3, out).ValueOrDie(), 3);
  EXPECT_EQ(std::string(out, 3), "012");
  EXPECT_EQ(file.Tell().ValueOrDie(), 3);
  EXPECT_EQ(file.Read(2).ValueOrDie()->ToString(), "34");
  EXPECT_EQ(file.ReadAt(10, 4).ValueOrDie()->ToString(), "abcd");
  ASSERT_EQ(file.ReadAt(12, 4, out).ValueOrDie(), 4);
  EXPECT_EQ(std::string(out, 4), "cdef");
  EXPECT_EQ(file.ReadAsync(arrow::io::default_io_context(), 5, 3).result().ValueOrDie()->ToString(),
            "567");
  ASSERT_TRUE(file.Seek(1).ok());
  EXPECT_EQ(file.Tell().ValueOrDie(), 1);
  EXPECT_EQ(file.GetSize().ValueOrDie(), 16);
  const StatsSnapshot counted = stats.Snapshot();
  EXPECT_EQ(counted.requests, 5);
  EXPECT_EQ(counted.bytes_fetched, 3 + 2 + 4 + 4 + 3);
  EXPECT_EQ(counted.metadata_requests, 0);
  EXPECT_FALSE(file.closed());
  ASSERT_TRUE(file.Close().ok());
  EXPECT_TRUE(file.closed());
}

TEST(CountingFileTest, MetadataReadsAreCountedApart) {
  Stats stats;
  auto counted_file = std::make_shared<CountingFile>(Inner(), &stats, RequestKind::kMetadata);
  CountingFile& file = *counted_file;
  EXPECT_EQ(file.ReadAt(8, 8).ValueOrDie()->ToString(), "89abcdef");
  EXPECT_EQ(file.ReadAt(0, 2).ValueOrDie()->ToString(), "01");
  const StatsSnapshot counted = stats.Snapshot();
  EXPECT_EQ(counted.metadata_requests, 2);
  EXPECT_EQ(counted.metadata_bytes, 10);
  EXPECT_EQ(counted.requests, 0);
  EXPECT_EQ(counted.bytes_fetched, 0);
}

TEST(CountingFileTest, TheLogKeepsWhatBufferReadsReturned) {
  Stats stats;
  auto log = std::make_shared<ReadLog>();
  auto counted_file = std::make_shared<CountingFile>(Inner(), &stats, RequestKind::kData, log);
  CountingFile& file = *counted_file;
  ASSERT_TRUE(file.ReadAt(0, 4).ok());
  ASSERT_TRUE(file.ReadAsync(arrow::io::default_io_context(), 4, 4).result().ok());
  ASSERT_TRUE(file.ReadAt(8, 2, /*allow_short_read=*/false).ok());
  const auto* data = reinterpret_cast<const uint8_t*>(kBytes.data());
  EXPECT_EQ(log->Checksum({0, 10}).ValueOrDie(), ChunkChecksum(data, 10));
  EXPECT_EQ(log->Checksum({3, 5}).ValueOrDie(), ChunkChecksum(data + 3, 5));
  // Bytes no read returned cannot be checked.
  EXPECT_FALSE(log->Checksum({8, 4}).ok());
  // A failed read is counted (it was asked of the store) but logs nothing.
  EXPECT_FALSE(file.ReadAt(100, 4).ok());
  EXPECT_EQ(stats.Snapshot().requests, 4);
  EXPECT_FALSE(log->Checksum({10, 1}).ok());
}

TEST(CountingFileTest, BufferReadsAllocateFromThePoolGiven) {
  Stats stats;
  arrow::ProxyMemoryPool pool(arrow::default_memory_pool());
  auto file = std::make_shared<CountingFile>(Inner(), &stats, RequestKind::kData, nullptr, &pool);
  auto sync = file->ReadAt(2, 5).ValueOrDie();
  EXPECT_EQ(sync->ToString(), "23456");
  EXPECT_EQ(pool.num_allocations(), 1);
  // The async read is RandomAccessFile's own, on the I/O executor, through the ReadAt above.
  auto async = file->ReadAsync(arrow::io::default_io_context(), 10, 6, /*allow_short_read=*/false)
                   .result()
                   .ValueOrDie();
  EXPECT_EQ(async->ToString(), "abcdef");
  EXPECT_EQ(pool.num_allocations(), 2);
  auto short_read =
      file->ReadAsync(arrow::io::default_io_context(), 14, 8, /*allow_short_read=*/true)
          .result()
          .ValueOrDie();
  EXPECT_EQ(short_read->ToString(), "ef");
  EXPECT_EQ(pool.num_allocations(), 3);
  EXPECT_EQ(stats.Snapshot().requests, 3);
  sync.reset();
  async.reset();
  short_read.reset();
  // Freed once the I/O threads have dropped the futures that carried them too.
  for (int i = 0; i < 500 && pool.bytes_allocated() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

}  // namespace
}  // namespace stoker
