// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/permutation.h"

#include <gtest/gtest.h>

#include <vector>

namespace stoker {
namespace {

std::vector<uint64_t> Image(const Permutation& p) {
  std::vector<uint64_t> out(p.size());
  for (uint64_t i = 0; i < p.size(); ++i) out[i] = p(i);
  return out;
}

bool IsBijection(const Permutation& p) {
  std::vector<bool> hit(p.size(), false);
  for (uint64_t i = 0; i < p.size(); ++i) {
    const uint64_t v = p(i);
    if (v >= p.size() || hit[v]) return false;
    hit[v] = true;
  }
  return true;
}

TEST(PermutationTest, IsABijectionForEverySmallSize) {
  for (uint64_t n = 0; n < 300; ++n) {
    EXPECT_TRUE(IsBijection(Permutation(n, DeriveKey(1, 2, 3, n)))) << "n=" << n;
  }
}

TEST(PermutationTest, IsABijectionForLargeOddSizes) {
  for (uint64_t n : {1000003ULL, 65537ULL, 4097ULL}) {
    EXPECT_TRUE(IsBijection(Permutation(n, 42))) << "n=" << n;
  }
}

TEST(PermutationTest, SameKeySameOrderOtherKeyOtherOrder) {
  EXPECT_EQ(Image(Permutation(1000, 7)), Image(Permutation(1000, 7)));
  EXPECT_NE(Image(Permutation(1000, 7)), Image(Permutation(1000, 8)));
}

TEST(PermutationTest, IdentityWhenShuffleIsOff) {
  const Permutation p(100, 7, /*identity=*/true);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(p(i), i);
}

TEST(PermutationTest, MovesMostElements) {
  const Permutation p(10000, 99);
  int fixed = 0;
  for (uint64_t i = 0; i < p.size(); ++i) fixed += p(i) == i;
  EXPECT_LT(fixed, 20);  // a uniform permutation fixes about one point
}

TEST(PermutationTest, KnownValuesAreStable) {
  // Golden values: a change here changes every user's shuffle and breaks their resume.
  const Permutation p(1000, DeriveKey(0, 0, 0, 0));
  std::vector<uint64_t> first;
  for (uint64_t i = 0; i < 5; ++i) first.push_back(p(i));
  EXPECT_EQ(first, (std::vector<uint64_t>{969, 642, 124, 381, 433}));
}

TEST(PermutationTest, MapGivesTheImagesOneAtATimeDoes) {
  // Every size up to 300 (every walk length and lane count, the identity at n <= 1 included),
  // sizes just above a power of four (the longest walks), and every sub-range of some.
  std::vector<uint64_t> sizes;
  for (uint64_t n = 0; n < 300; ++n) sizes.push_back(n);
  for (uint64_t n : {1025ULL, 4097ULL, 65537ULL, 262145ULL, 300000ULL}) sizes.push_back(n);
  for (uint64_t n : sizes) {
    for (bool identity : {false, true}) {
      const Permutation p(n, DeriveKey(5, n, 1, 0), identity);
      std::vector<uint64_t> mapped(n);
      p.Map(0, n, mapped.data());
      ASSERT_EQ(mapped, Image(p)) << "n=" << n << " identity=" << identity;
    }
  }
  const Permutation p(1000, 17);
  const auto whole = Image(p);
  for (uint64_t first : {0ULL, 1ULL, 7ULL, 500ULL, 991ULL}) {  // 991 + 9 = n
    for (size_t count : {size_t{0}, size_t{1}, size_t{3}, size_t{8}, size_t{9}, size_t{7}}) {
      std::vector<uint64_t> out(count);
      p.Map(first, count, out.data());
      EXPECT_EQ(out, std::vector<uint64_t>(whole.begin() + first, whole.begin() + first + count))
          << "first=" << first << " count=" << count;
    }
  }
}

TEST(PermutationTest, DerivedKeysDifferPerComponent) {
  const uint64_t base = DeriveKey(1, 1, 1, 1);
  EXPECT_NE(base, DeriveKey(2, 1, 1, 1));
  EXPECT_NE(base, DeriveKey(1, 2, 1, 1));
  EXPECT_NE(base, DeriveKey(1, 1, 2, 1));
  EXPECT_NE(base, DeriveKey(1, 1, 1, 2));
}

}  // namespace
}  // namespace stoker
