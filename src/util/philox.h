// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <array>
#include <cstdint>

namespace stoker {

/// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
/// SC 2011), the counter-based generator of Random123, JAX and cuRAND: a keyed bijection of a
/// 128-bit counter into 128 random bits. A draw is a pure function of (key, counter), so any
/// thread can compute any draw in any order with no state to carry or save. Checked against
/// Random123's published known-answer vectors (tests/cpp/util/philox_test.cc).
class Philox4x32 {
 public:
  using Counter = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;

  /// The 10-round output block for `counter` under `key`.
  static constexpr Counter Block(Counter counter, Key key) {
    counter = Round(counter, key);
    for (int round = 1; round < kRounds; ++round) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
      counter = Round(counter, key);
    }
    return counter;
  }

 private:
  static constexpr int kRounds = 10;
  // The multipliers and Weyl key increments of the paper (and Random123).
  static constexpr uint32_t kMul0 = 0xD2511F53u;
  static constexpr uint32_t kMul1 = 0xCD9E8D57u;
  static constexpr uint32_t kWeyl0 = 0x9E3779B9u;
  static constexpr uint32_t kWeyl1 = 0xBB67AE85u;

  static constexpr Counter Round(const Counter& c, const Key& k) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
            static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
};

}  // namespace stoker
