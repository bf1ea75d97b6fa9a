// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "plan/permutation.h"

#include <arrow/util/logging.h>

#include <algorithm>
#include <bit>

#include "util/digest.h"

namespace stoker {

uint64_t DeriveKey(uint64_t seed, uint64_t epoch, uint64_t level, uint64_t index) {
  uint64_t key = Mix64(seed ^ 0x5374'6f6b'6572'0001ULL);  // "Stoker" tag keeps keys apart
  key = Mix64(key ^ epoch);
  key = Mix64(key ^ (level * 0x9e3779b97f4a7c15ULL));
  return Mix64(key ^ index);
}

Permutation::Permutation(uint64_t n, uint64_t key, bool identity, int plan_version)
    : n_(n), identity_(identity || n <= 1) {
  ARROW_DCHECK(plan_version >= kFirstPlanVersion && plan_version <= kLatestPlanVersion)
      << plan_version;
  if (identity_) return;
  // Version 1: the smallest even bit count b with 2^b >= n (cycle walking takes < 4 steps
  // on average); version 2: the smallest b (< 2 steps).
  int bits = std::bit_width(n - 1);
  if (bits < 2) bits = 2;
  if (plan_version == 1 && bits % 2 != 0) ++bits;
  right_bits_ = bits / 2;
  left_mask_ = (uint64_t{1} << (bits - right_bits_)) - 1;
  right_mask_ = (uint64_t{1} << right_bits_) - 1;
  for (int r = 0; r < kRounds; ++r) {
    round_keys_[r] = Mix64(key + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(r + 1));
  }
}

uint64_t Permutation::Encrypt(uint64_t x) const {
  static_assert(kRounds % 2 == 0, "the halves' widths are back where they began");
  uint64_t left = x >> right_bits_;
  uint64_t right = x & right_mask_;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t next = left ^ (Mix64(right ^ round_keys_[r]) & RoundMask(r));
    left = right;
    right = next;
  }
  return (left << right_bits_) | right;
}

uint64_t Permutation::operator()(uint64_t i) const {
  // Out of range, cycle walking would still land in [0, n): a wrong row, silently.
  ARROW_DCHECK_LT(i, n_);
  if (identity_) return i;
  uint64_t x = i;
  do {
    x = Encrypt(x);
  } while (x >= n_);  // cycle walking: a bijection of [0, 2^b) restricted to [0, n)
  return x;
}

void Permutation::EncryptAll(uint64_t* values, size_t count) const {
  // Four values round by round in registers: four independent chains of multiplies the CPU
  // overlaps, where one value alone waits on each multiply in turn.
  size_t j = 0;
  for (; j + 4 <= count; j += 4) {
    uint64_t l0 = values[j] >> right_bits_, r0 = values[j] & right_mask_;
    uint64_t l1 = values[j + 1] >> right_bits_, r1 = values[j + 1] & right_mask_;
    uint64_t l2 = values[j + 2] >> right_bits_, r2 = values[j + 2] & right_mask_;
    uint64_t l3 = values[j + 3] >> right_bits_, r3 = values[j + 3] & right_mask_;
    for (int r = 0; r < kRounds; ++r) {
      const uint64_t key = round_keys_[r];
      const uint64_t mask = RoundMask(r);
      const uint64_t n0 = l0 ^ (Mix64(r0 ^ key) & mask);
      const uint64_t n1 = l1 ^ (Mix64(r1 ^ key) & mask);
      const uint64_t n2 = l2 ^ (Mix64(r2 ^ key) & mask);
      const uint64_t n3 = l3 ^ (Mix64(r3 ^ key) & mask);
      l0 = r0, l1 = r1, l2 = r2, l3 = r3;
      r0 = n0, r1 = n1, r2 = n2, r3 = n3;
    }
    values[j] = (l0 << right_bits_) | r0;
    values[j + 1] = (l1 << right_bits_) | r1;
    values[j + 2] = (l2 << right_bits_) | r2;
    values[j + 3] = (l3 << right_bits_) | r3;
  }
  for (; j < count; ++j) values[j] = Encrypt(values[j]);
}

void Permutation::Map(uint64_t first, size_t count, uint64_t* out) const {
  ARROW_DCHECK_LE(first + count, n_);
  if (identity_) {
    for (size_t k = 0; k < count; ++k) out[k] = first + k;
    return;
  }
  // Blocks of inputs pass through the network together; values that land in [0, n) are
  // written out, the rest (cycle walking) go through again, until none is left.
  constexpr size_t kBlock = 256;
  uint64_t values[kBlock];
  uint32_t slots[kBlock];
  for (size_t done = 0; done < count; done += kBlock) {
    size_t pending = std::min(kBlock, count - done);
    for (size_t j = 0; j < pending; ++j) {
      values[j] = first + done + j;
      slots[j] = static_cast<uint32_t>(done + j);
    }
    while (pending > 0) {
      EncryptAll(values, pending);
      size_t kept = 0;
      for (size_t j = 0; j < pending; ++j) {
        if (values[j] < n_) {
          out[slots[j]] = values[j];
        } else {
          values[kept] = values[j];
          slots[kept++] = slots[j];
        }
      }
      pending = kept;
    }
  }
}

}  // namespace stoker
