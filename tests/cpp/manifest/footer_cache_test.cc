// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/footer_cache.h"

#include <gtest/gtest.h>

#include "common/fixtures.h"

namespace stoker {
namespace {

// The footer of a file of `rows` rows, serialized as the manifest keeps it.
SerializedFooter FooterOf(const testing::TempDir& dir, int64_t rows) {
  testing::WriteDataset(dir.path(), 1, rows, rows);
  auto files = ResolveSources({dir.path().string()}).ValueOrDie();
  auto footers = ReadFooters(files, 1, nullptr).ValueOrDie();
  return footers[0].bytes;
}

TEST(FooterCacheTest, AFileIsDecodedOnceWhileItIsAmongTheLastDecoded) {
  testing::TempDir dir;
  const SerializedFooter footer = FooterOf(dir, 6);
  FooterCache cache;
  auto first = cache.Get(0, footer).ValueOrDie();
  EXPECT_EQ(first->num_rows(), 6);
  EXPECT_EQ(cache.Get(0, footer).ValueOrDie(), first);
  // Filled with others, file 0 used again each time, it stays; file 1, unused, goes first.
  auto one = cache.Get(1, footer).ValueOrDie();
  for (int32_t f = 2; f < static_cast<int32_t>(FooterCache::kCapacity); ++f) {
    ASSERT_TRUE(cache.Get(f, footer).ok());
  }
  EXPECT_EQ(cache.Get(0, footer).ValueOrDie(), first);  // now the most recent of 64
  ASSERT_TRUE(cache.Get(1000, footer).ok());            // evicts the least recent: file 1
  EXPECT_EQ(cache.Get(0, footer).ValueOrDie(), first);
  EXPECT_NE(cache.Get(1, footer).ValueOrDie(), one);
}

TEST(FooterCacheTest, AFooterThatDoesNotDecodeIsAnErrorAndNotKept) {
  testing::TempDir dir;
  const SerializedFooter good = FooterOf(dir, 4);
  FooterCache cache;
  EXPECT_FALSE(cache.Get(3, SerializedFooter(std::string("\x19\x1c junk", 7))).ok());
  auto decoded = cache.Get(3, good);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ((*decoded)->num_rows(), 4);
}

}  // namespace
}  // namespace stoker
