// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/permutation.h"

#include <gtest/gtest.h>

#include <string>
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

// Every test of both plan versions' networks (which differ where n needs an odd bit count).
class PermutationTest : public testing::TestWithParam<int> {
 protected:
  Permutation Make(uint64_t n, uint64_t key, bool identity = false) const {
    return Permutation(n, key, identity, GetParam());
  }
};

INSTANTIATE_TEST_SUITE_P(PlanVersions, PermutationTest,
                         testing::Range(kFirstPlanVersion, kLatestPlanVersion + 1),
                         [](const testing::TestParamInfo<int>& info) {
                           return "V" + std::to_string(info.param);
                         });

TEST_P(PermutationTest, IsABijectionForEverySmallSize) {
  for (uint64_t n = 0; n < 300; ++n) {
    EXPECT_TRUE(IsBijection(Make(n, DeriveKey(1, 2, 3, n)))) << "n=" << n;
  }
}

TEST_P(PermutationTest, IsABijectionForLargeOddSizes) {
  // Odd and even bit counts, each just above a power of two (the longest walks).
  for (uint64_t n : {1000003ULL, 65537ULL, 4097ULL, 264192ULL, 131073ULL}) {
    EXPECT_TRUE(IsBijection(Make(n, 42))) << "n=" << n;
  }
}

TEST_P(PermutationTest, SameKeySameOrderOtherKeyOtherOrder) {
  for (uint64_t n : {1000ULL, 300ULL}) {
    EXPECT_EQ(Image(Make(n, 7)), Image(Make(n, 7)));
    EXPECT_NE(Image(Make(n, 7)), Image(Make(n, 8)));
  }
}

TEST_P(PermutationTest, IdentityWhenShuffleIsOff) {
  const Permutation p = Make(100, 7, /*identity=*/true);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_EQ(p(i), i);
}

TEST_P(PermutationTest, MovesMostElements) {
  for (uint64_t n : {10000ULL, 5000ULL}) {  // 14 bits, 13 bits
    const Permutation p = Make(n, 99);
    int fixed = 0;
    for (uint64_t i = 0; i < p.size(); ++i) fixed += p(i) == i;
    EXPECT_LT(fixed, 20) << "n=" << n;  // a uniform permutation fixes about one point
  }
}

TEST_P(PermutationTest, MapGivesTheImagesOneAtATimeDoes) {
  // Every size up to 300 (every walk length and lane count, the identity at n <= 1 included),
  // sizes just above a power of two (the longest walks), and every sub-range of some.
  std::vector<uint64_t> sizes;
  for (uint64_t n = 0; n < 300; ++n) sizes.push_back(n);
  for (uint64_t n : {1025ULL, 2049ULL, 4097ULL, 65537ULL, 262145ULL, 264192ULL, 300000ULL}) {
    sizes.push_back(n);
  }
  for (uint64_t n : sizes) {
    for (bool identity : {false, true}) {
      const Permutation p = Make(n, DeriveKey(5, n, 1, 0), identity);
      std::vector<uint64_t> mapped(n);
      p.Map(0, n, mapped.data());
      ASSERT_EQ(mapped, Image(p)) << "n=" << n << " identity=" << identity;
    }
  }
  const Permutation p = Make(1000, 17);
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

std::vector<uint64_t> FirstImages(uint64_t n, int plan_version) {
  const Permutation p(n, DeriveKey(0, 0, 0, 0), false, plan_version);
  std::vector<uint64_t> first;
  for (uint64_t i = 0; i < 5; ++i) first.push_back(p(i));
  return first;
}

TEST(PermutationGoldenTest, KnownValuesAreStable) {
  // Golden values: a change here changes every user's shuffle and breaks their resume.
  EXPECT_EQ(FirstImages(1000, 1), (std::vector<uint64_t>{969, 642, 124, 381, 433}));
  EXPECT_EQ(FirstImages(300, 1), (std::vector<uint64_t>{117, 204, 124, 66, 221}));
  EXPECT_EQ(FirstImages(300, 2), (std::vector<uint64_t>{293, 234, 157, 175, 295}));
  EXPECT_EQ(FirstImages(264192, 2), (std::vector<uint64_t>{167807, 57833, 117469, 189882, 149216}));
}

TEST(PermutationGoldenTest, VersionsAgreeOnEvenBitCountsOnly) {
  // With b even (1000: 10 bits) version 2 is version 1's network; with b odd (300: 9 bits)
  // version 1 walks a 10-bit domain and version 2 a 9-bit one: other orders.
  for (uint64_t n : {1000ULL, 4096ULL, 262144ULL}) {
    EXPECT_EQ(Image(Permutation(n, 3, false, 1)), Image(Permutation(n, 3, false, 2))) << n;
  }
  for (uint64_t n : {300ULL, 264192ULL}) {
    EXPECT_NE(Image(Permutation(n, 3, false, 1)), Image(Permutation(n, 3, false, 2))) << n;
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
