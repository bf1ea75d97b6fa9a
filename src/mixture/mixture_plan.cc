// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "plan/permutation.h"
#include "util/digest.h"

namespace stoker {

std::vector<int64_t> Apportion(int64_t total, const std::vector<int64_t>& quotas,
                               uint64_t tie_key) {
  const size_t n = quotas.size();
  std::vector<int64_t> out(n, 0);
  if (n == 0 || total <= 0) return out;
  const __int128 sum = std::accumulate(quotas.begin(), quotas.end(), __int128{0});
  std::vector<int64_t> remainder(n);
  int64_t given = 0;
  for (size_t s = 0; s < n; ++s) {
    const __int128 product = static_cast<__int128>(total) * quotas[s];
    out[s] = static_cast<int64_t>(product / sum);
    remainder[s] = static_cast<int64_t>(product % sum);
    given += out[s];
  }
  // The rows floor() left over (fewer than n) go to the largest remainders; equal ones are
  // ordered by a keyed hash of the source index.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (remainder[a] != remainder[b]) return remainder[a] > remainder[b];
    const uint64_t ka = Mix64(tie_key ^ Mix64(a + 1));
    const uint64_t kb = Mix64(tie_key ^ Mix64(b + 1));
    return ka != kb ? ka < kb : a < b;
  });
  for (int64_t i = 0; i < total - given; ++i) ++out[order[static_cast<size_t>(i)]];
  return out;
}

std::vector<int64_t> WeightQuotas(const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> quotas;
  quotas.reserve(weights.size());
  for (double w : weights) {
    quotas.push_back(std::max<int64_t>(1, std::llround(w / sum * 1099511627776.0)));  // 2^40
  }
  return quotas;
}

uint64_t MixtureSourceSeed(uint64_t seed, int64_t source) {
  return Mix64(Mix64(seed ^ 0x6d69787475726573ULL) + static_cast<uint64_t>(source));
}

MixturePlan::MixturePlan(std::vector<int64_t> source_rows, int64_t block_rows, bool stratified,
                         uint64_t seed)
    : source_rows_(std::move(source_rows)),
      epoch_rows_(std::accumulate(source_rows_.begin(), source_rows_.end(), int64_t{0})),
      block_rows_(block_rows),
      stratified_(stratified),
      seed_(seed) {}

arrow::Result<MixturePlan> MixturePlan::Make(std::vector<int64_t> source_rows, int64_t batch_rows,
                                             uint64_t seed) {
  if (source_rows.empty()) return arrow::Status::Invalid("a mixture needs at least one source");
  if (source_rows.size() > static_cast<size_t>(kMaxSources)) {
    return arrow::Status::Invalid("a mixture takes at most ", kMaxSources, " sources, got ",
                                  source_rows.size());
  }
  int64_t total = 0;
  int64_t smallest = source_rows[0];
  for (size_t s = 0; s < source_rows.size(); ++s) {
    if (source_rows[s] <= 0) {
      return arrow::Status::Invalid("mixture source ", s, " has ", source_rows[s],
                                    " rows per epoch; each needs at least 1");
    }
    total += source_rows[s];
    smallest = std::min(smallest, source_rows[s]);
  }
  if (batch_rows < 0) return arrow::Status::Invalid("batch_rows must be >= 0");
  if (batch_rows > 0) {
    const int64_t blocks = total / batch_rows;
    if (total % batch_rows != 0) {
      return arrow::Status::Invalid("a stratified mixture's epoch (", total,
                                    " rows) must be whole batches of ", batch_rows);
    }
    for (size_t s = 0; s < source_rows.size(); ++s) {
      if (source_rows[s] % blocks != 0) {
        return arrow::Status::Invalid("stratified mixture source ", s, " has ", source_rows[s],
                                      " rows, not the same count in each of ", blocks, " batches");
      }
    }
    return MixturePlan(std::move(source_rows), batch_rows, true, seed);
  }
  // A block of K positions gives source s between K*w-1 and K*w+1 of them; K*w >= 2 keeps
  // every block's count of every source >= 0 (K*w >= 1 would do: this leaves a margin).
  const int64_t needed =
      static_cast<int64_t>((static_cast<__int128>(2) * total + smallest - 1) / smallest);
  const int64_t block = std::min(total, std::max(kProportionBlockRows, needed));
  return MixturePlan(std::move(source_rows), block, false, seed);
}

std::vector<int64_t> MixturePlan::RowsBeforeBlock(int64_t block) const {
  const int64_t position = std::min(epoch_rows_, block * block_rows_);
  return Apportion(position, source_rows_, seed_);
}

std::vector<uint8_t> MixturePlan::BlockSources(int64_t epoch, int64_t block) const {
  const int64_t first = block * block_rows_;
  const int64_t size = std::min(block_rows_, epoch_rows_ - first);
  std::vector<uint8_t> out;
  if (size <= 0) return out;
  out.reserve(static_cast<size_t>(size));
  // The block's sources grouped in source order: its share of each.
  const std::vector<int64_t> before = RowsBeforeBlock(block);
  const std::vector<int64_t> after = RowsBeforeBlock(block + 1);
  for (size_t s = 0; s < source_rows_.size(); ++s) {
    out.insert(out.end(), static_cast<size_t>(after[s] - before[s]), static_cast<uint8_t>(s));
  }
  if (stratified_) return out;
  // Shuffled by Fisher-Yates, the swap at step i drawn from a hash of (key, i): counter-based,
  // so a pure function of (seed, epoch, block), and a few ns a position (a Feistel
  // permutation's six rounds per position cost five times as much on the consumer's thread).
  const uint64_t key =
      DeriveKey(seed_, static_cast<uint64_t>(epoch), kMixtureLevel, static_cast<uint64_t>(block));
  for (uint64_t i = static_cast<uint64_t>(size) - 1; i > 0; --i) {
    // Lemire's multiply-shift maps the 64-bit hash onto [0, i] (bias below i / 2^64).
    const uint64_t j = static_cast<uint64_t>(
        (static_cast<unsigned __int128>(Mix64(key ^ Mix64(i))) * (i + 1)) >> 64);
    std::swap(out[i], out[j]);
  }
  return out;
}

std::vector<int64_t> MixturePlan::RowsBefore(int64_t epoch, int64_t position) const {
  const int64_t block = position / block_rows_;
  std::vector<int64_t> rows = RowsBeforeBlock(block);
  const int64_t within = position - block * block_rows_;
  if (within == 0) return rows;
  const std::vector<uint8_t> sources = BlockSources(epoch, block);
  for (int64_t i = 0; i < within; ++i) ++rows[sources[static_cast<size_t>(i)]];
  return rows;
}

}  // namespace stoker
