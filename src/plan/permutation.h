// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace stoker {

/// Key for one random choice of the plan: a pure function of (seed, epoch, level, index).
/// `level` separates independent uses (unit order, rows of window `index`, ...).
uint64_t DeriveKey(uint64_t seed, uint64_t epoch, uint64_t level, uint64_t index);

/// A keyed pseudo-random bijection of [0, n): a balanced Feistel network over the smallest
/// even power-of-two domain that holds n, with cycle walking back into range. Evaluates any
/// index in O(1) memory, so a shuffle of billions of rows needs no table, and depends on
/// nothing but (n, key): no RNG state, no library version.
class Permutation {
 public:
  /// The identity on [0, n) when `identity` is set (shuffle off).
  Permutation(uint64_t n, uint64_t key, bool identity = false);

  /// Image of i; requires i < size().
  uint64_t operator()(uint64_t i) const;
  /// Images of first, first + 1, ..., first + count - 1 into out[0, count): the same values
  /// as operator(), computed several at a time (independent lanes the CPU overlaps, where one
  /// image is a chain of dependent multiplies). Requires first + count <= size().
  void Map(uint64_t first, size_t count, uint64_t* out) const;
  uint64_t size() const { return n_; }

 private:
  static constexpr int kRounds = 6;
  /// One pass of the Feistel network over [0, 2^(2 half_bits_)).
  uint64_t Encrypt(uint64_t x) const;
  /// Encrypt of each of values[0, count), in place.
  void EncryptAll(uint64_t* values, size_t count) const;
  uint64_t n_;
  bool identity_;
  int half_bits_ = 0;
  uint64_t half_mask_ = 0;
  std::array<uint64_t, kRounds> round_keys_{};
};

}  // namespace stoker
