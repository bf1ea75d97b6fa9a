// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "stoker/plan_version.h"

namespace stoker {

/// Key for one random choice of the plan: a pure function of (seed, epoch, level, index).
/// `level` separates independent uses (unit order, rows of window `index`, ...).
uint64_t DeriveKey(uint64_t seed, uint64_t epoch, uint64_t level, uint64_t index);

/// A keyed pseudo-random bijection of [0, n): a Feistel network over a power-of-two domain
/// that holds n, with cycle walking back into range. Evaluates any index in O(1) memory, so a
/// shuffle of billions of rows needs no table, and depends on nothing but (n, key, version):
/// no RNG state, no library version.
///
/// Plan version 1 takes the smallest *even* bit count b with 2^b >= n and halves of b/2 bits:
/// 2^b / n encryptions an image, up to 4 (a window just over a power of four). Version 2
/// takes the smallest bit count and halves of ceil(b/2) and floor(b/2) bits (each round's
/// output half as wide as the half it replaces, so the widths swap back every two rounds):
/// under 2 encryptions an image. With b even both are the same network. (The plan versions
/// differ in this alone: stoker/plan_version.h.)
class Permutation {
 public:
  /// The identity on [0, n) when `identity` is set (shuffle off). Requires
  /// kFirstPlanVersion <= plan_version <= kLatestPlanVersion.
  Permutation(uint64_t n, uint64_t key, bool identity, int plan_version);

  /// Image of i; requires i < size().
  uint64_t operator()(uint64_t i) const;
  /// Images of first, first + 1, ..., first + count - 1 into out[0, count): the same values
  /// as operator(), computed several at a time (independent lanes the CPU overlaps, where one
  /// image is a chain of dependent multiplies). Requires first + count <= size().
  void Map(uint64_t first, size_t count, uint64_t* out) const;
  uint64_t size() const { return n_; }

 private:
  static constexpr int kRounds = 6;
  /// One pass of the Feistel network over [0, 2^(left_bits_ + right_bits_)).
  uint64_t Encrypt(uint64_t x) const;
  /// Encrypt of each of values[0, count), in place.
  void EncryptAll(uint64_t* values, size_t count) const;
  /// The mask of round r's output half: the width of the half it replaces (the left one,
  /// which is left_bits_ wide in even rounds and right_bits_ wide in odd ones).
  uint64_t RoundMask(int r) const { return r % 2 == 0 ? left_mask_ : right_mask_; }
  uint64_t n_;
  bool identity_;
  int right_bits_ = 0;  // the low half of an input; left_bits_ - right_bits_ is 0 or 1
  uint64_t left_mask_ = 0;
  uint64_t right_mask_ = 0;
  std::array<uint64_t, kRounds> round_keys_{};
};

}  // namespace stoker
