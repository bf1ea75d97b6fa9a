// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace stoker {

/// SplitMix64's finalizer: a bijective 64-bit mixer with full avalanche. Stable across
/// platforms and library versions, which the plan's determinism relies on.
constexpr uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Order-sensitive 128-bit digest of a sequence of integers and strings. Used for dataset
/// fingerprints and config digests (identity, not security).
class Digest {
 public:
  /// Feeds an integer.
  void Add(uint64_t value);
  /// Feeds a string (its length first, so ("ab","c") and ("a","bc") differ).
  void Add(std::string_view value);
  /// The digest folded into 64 bits.
  uint64_t Fold() const { return Mix64(a_ ^ Mix64(b_)); }
  /// 32 lowercase hex digits.
  std::string Hex() const;
  /// The digest whose Hex() is `hex`; false if `hex` is not 32 hex digits.
  static bool FromHex(std::string_view hex, Digest* out);

 private:
  uint64_t a_ = 0x6a09e667f3bcc908ULL;
  uint64_t b_ = 0xbb67ae8584caa73bULL;
};

}  // namespace stoker
