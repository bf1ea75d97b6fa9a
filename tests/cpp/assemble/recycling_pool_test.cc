// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/recycling_pool.h"

#include <arrow/buffer.h>
#include <gtest/gtest.h>

#include <cstring>

#include "util/sanitizers.h"

namespace stoker {
namespace {

TEST(RecyclingPoolTest, AFreedBlockServesTheNextRequestOfItsSize) {
  RecyclingPool pool(arrow::default_memory_pool(), /*max_cached_bytes=*/1 << 20);
  uint8_t* first = nullptr;
  ASSERT_TRUE(pool.Allocate(16384, 64, &first).ok());
  pool.Free(first, 16384, 64);
  EXPECT_EQ(pool.cached_bytes(), 16384);
  uint8_t* other_size = nullptr;
  ASSERT_TRUE(pool.Allocate(32768, 64, &other_size).ok());
  EXPECT_NE(other_size, first);
  uint8_t* again = nullptr;
  ASSERT_TRUE(pool.Allocate(16384, 64, &again).ok());
  EXPECT_EQ(again, first);
  EXPECT_EQ(pool.cached_bytes(), 0);
  EXPECT_EQ(pool.bytes_allocated(), 16384 + 32768);
  pool.Free(again, 16384, 64);
  pool.Free(other_size, 32768, 64);
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

TEST(RecyclingPoolTest, HoldsNoMoreThanItsBound) {
  RecyclingPool pool(arrow::default_memory_pool(), /*max_cached_bytes=*/3 * 8192);
  std::vector<uint8_t*> blocks(5);
  for (auto& block : blocks) ASSERT_TRUE(pool.Allocate(8192, 64, &block).ok());
  for (auto* block : blocks) pool.Free(block, 8192, 64);
  EXPECT_EQ(pool.cached_bytes(), 3 * 8192);
  // Small blocks are left to the base pool.
  uint8_t* small = nullptr;
  ASSERT_TRUE(pool.Allocate(100, 64, &small).ok());
  pool.Free(small, 100, 64);
  EXPECT_EQ(pool.cached_bytes(), 3 * 8192);
}

TEST(RecyclingPoolTest, BuffersKeepTheirContentsThroughReallocate) {
  RecyclingPool pool(arrow::default_memory_pool(), 1 << 20);
  auto buffer = arrow::AllocateResizableBuffer(5000, &pool).ValueOrDie();
  std::memset(buffer->mutable_data(), 7, 5000);
  ASSERT_TRUE(buffer->Resize(9000).ok());
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(buffer->data()[i], 7) << i;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 64, 0u);
  buffer.reset();
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

// A parked block is still allocated as far as malloc knows; the pool marks it unaddressable so
// that the AddressSanitizer build (make test-asan) reports a batch used after its release.
TEST(RecyclingPoolDeathTest, AddressSanitizerCatchesAParkedBlockInUse) {
  if constexpr (!kAddressSanitizer) GTEST_SKIP() << "an AddressSanitizer build only";
  RecyclingPool pool(arrow::default_memory_pool(), 1 << 20);
  uint8_t* block = nullptr;
  ASSERT_TRUE(pool.Allocate(8192, 64, &block).ok());
  pool.Free(block, 8192, 64);
  volatile uint8_t* parked = block;
  EXPECT_DEATH(parked[100] = 1, "use-after-poison");
  uint8_t* again = nullptr;
  ASSERT_TRUE(pool.Allocate(8192, 64, &again).ok());
  ASSERT_EQ(again, block);
  again[100] = 1;  // handed out again: addressable
  pool.Free(again, 8192, 64);
}

}  // namespace
}  // namespace stoker
