// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "util/digest.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace stoker {
namespace {

TEST(DigestTest, Mix64IsSplitMixsFinalizer) {
  static_assert(Mix64(0) == 0);
  // SplitMix64's first output for seed 0 is Mix64(0x9e3779b97f4a7c15).
  EXPECT_EQ(Mix64(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL);
  std::set<uint64_t> outputs;
  for (uint64_t x = 0; x < 1000; ++x) outputs.insert(Mix64(x));
  EXPECT_EQ(outputs.size(), 1000u);  // a bijection: no collisions
}

TEST(DigestTest, HexIsThirtyTwoLowercaseDigitsAndReadsBack) {
  Digest digest;
  digest.Add(uint64_t{42});
  digest.Add("file.parquet");
  const std::string hex = digest.Hex();
  ASSERT_EQ(hex.size(), 32u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  Digest back;
  ASSERT_TRUE(Digest::FromHex(hex, &back));
  EXPECT_EQ(back.Hex(), hex);
  EXPECT_EQ(back.Fold(), digest.Fold());
  // Reading back continues the same sequence.
  digest.Add(uint64_t{7});
  back.Add(uint64_t{7});
  EXPECT_EQ(back.Hex(), digest.Hex());
}

TEST(DigestTest, FromHexRefusesAnythingButThirtyTwoLowercaseDigits) {
  Digest out;
  const std::string good(32, 'a');
  EXPECT_TRUE(Digest::FromHex(good, &out));
  EXPECT_EQ(out.Hex(), good);
  EXPECT_FALSE(Digest::FromHex(std::string(31, 'a'), &out));
  EXPECT_FALSE(Digest::FromHex(std::string(33, 'a'), &out));
  EXPECT_FALSE(Digest::FromHex(std::string(32, 'A'), &out));
  EXPECT_FALSE(Digest::FromHex(std::string(31, '0') + "g", &out));
  EXPECT_FALSE(Digest::FromHex("", &out));
  EXPECT_EQ(out.Hex(), good);  // left as it was
}

TEST(DigestTest, OrderAndStringBoundariesMatter) {
  auto of = [](std::initializer_list<std::string_view> parts) {
    Digest digest;
    for (auto part : parts) digest.Add(part);
    return digest.Hex();
  };
  EXPECT_EQ(of({"ab", "c"}), of({"ab", "c"}));
  EXPECT_NE(of({"ab", "c"}), of({"a", "bc"}));
  EXPECT_NE(of({"a", "b"}), of({"b", "a"}));
  EXPECT_NE(of({""}), of({}));
  // Strings longer than a word, and differing only past the first 8 bytes.
  EXPECT_NE(of({"0123456789abcdef0"}), of({"0123456789abcdef1"}));
  Digest one, two;
  one.Add(uint64_t{1});
  one.Add(uint64_t{2});
  two.Add(uint64_t{2});
  two.Add(uint64_t{1});
  EXPECT_NE(one.Hex(), two.Hex());
  EXPECT_NE(one.Fold(), two.Fold());
}

TEST(DigestTest, KnownValuesAreStable) {
  // Fingerprints and cache keys outlive a build: the digest of a fixed sequence never changes.
  Digest empty;
  EXPECT_EQ(empty.Hex(), "6a09e667f3bcc908bb67ae8584caa73b");
  Digest digest;
  digest.Add(uint64_t{1});
  digest.Add("stoker");
  const std::string first = digest.Hex();
  Digest again;
  again.Add(uint64_t{1});
  again.Add("stoker");
  EXPECT_EQ(again.Hex(), first);
}

}  // namespace
}  // namespace stoker
