// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "util/philox.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

// Random123's kat_vectors (the reference implementation of Salmon et al. 2011), the three
// "philox4x32 10" lines: counter, key, expected output.
struct KnownAnswer {
  Philox4x32::Counter counter;
  Philox4x32::Key key;
  Philox4x32::Counter expected;
};

constexpr KnownAnswer kKnownAnswers[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

TEST(PhiloxTest, MatchesThePublishedKnownAnswers) {
  for (const auto& answer : kKnownAnswers) {
    EXPECT_EQ(Philox4x32::Block(answer.counter, answer.key), answer.expected);
  }
}

TEST(PhiloxTest, IsAConstantExpression) {
  // Computable at compile time: no hidden state, nothing but (key, counter).
  static_assert(Philox4x32::Block({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
}

}  // namespace
}  // namespace stoker
