// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/permutation.h"

#include <arrow/util/logging.h>

#include <bit>

#include "util/digest.h"

namespace stoker {

uint64_t DeriveKey(uint64_t seed, uint64_t epoch, uint64_t level, uint64_t index) {
  uint64_t key = Mix64(seed ^ 0x5374'6f6b'6572'0001ULL);  // "Stoker" tag keeps keys apart
  key = Mix64(key ^ epoch);
  key = Mix64(key ^ (level * 0x9e3779b97f4a7c15ULL));
  return Mix64(key ^ index);
}

Permutation::Permutation(uint64_t n, uint64_t key, bool identity)
    : n_(n), identity_(identity || n <= 1) {
  if (identity_) return;
  // Smallest even bit count b with 2^b >= n, so cycle walking takes < 4 steps on average.
  int bits = std::bit_width(n - 1);
  if (bits < 2) bits = 2;
  if (bits % 2 != 0) ++bits;
  half_bits_ = bits / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) {
    round_keys_[r] = Mix64(key + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(r + 1));
  }
}

uint64_t Permutation::operator()(uint64_t i) const {
  // Out of range, cycle walking would still land in [0, n): a wrong row, silently.
  ARROW_DCHECK_LT(i, n_);
  if (identity_) return i;
  uint64_t x = i;
  do {
    uint64_t left = x >> half_bits_;
    uint64_t right = x & half_mask_;
    for (int r = 0; r < kRounds; ++r) {
      const uint64_t next = left ^ (Mix64(right ^ round_keys_[r]) & half_mask_);
      left = right;
      right = next;
    }
    x = (left << half_bits_) | right;
  } while (x >= n_);  // cycle walking: a bijection of [0, 2^b) restricted to [0, n)
  return x;
}

}  // namespace stoker
