// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <vector>

namespace stoker {

/// Splits `total` rows among sources in proportion to `quotas` (each > 0) by largest
/// remainder: each gets floor(total * q / sum), and the rows left go one each to the largest
/// remainders, equal remainders ordered by a key derived from `tie_key` and the source index
/// (never by position alone, so no source is favoured for being first). Exact integer
/// arithmetic: a pure function of its arguments. The result sums to `total`.
std::vector<int64_t> Apportion(int64_t total, const std::vector<int64_t>& quotas, uint64_t tie_key);

/// `weights` (each finite and > 0) as the integer quotas Apportion takes: each weight over
/// their sum, in units of 2^-40 (at least 1).
std::vector<int64_t> WeightQuotas(const std::vector<double>& weights);

/// The seed a mixture gives source `source`'s own plan: a pure function of the mixture's
/// seed and the source's index, so sources shuffle independently.
uint64_t MixtureSourceSeed(uint64_t seed, int64_t source);

/// Which source each position of a mixture's epoch comes from (docs/mixtures.md).
///
/// An epoch of a mixture is E = sum(source_rows) positions; source s fills exactly
/// source_rows[s] of them, the same count every epoch, so where each source stands follows
/// from the epoch and the position (what makes a resume O(1)). The positions are cut into
/// blocks of block_rows(); every block holds each source's cumulative share, rounded by
/// Apportion at its boundaries, so the counts of block k are a function of k alone and the
/// rows of a source before any block are known without a scan. Inside a block:
///  - proportion mode (stratified = false): the block's sources are shuffled by a
///    Fisher-Yates pass whose draws hash (seed, epoch, kMixtureLevel, block, step);
///  - stratified mode: blocks are batches, every one holding the same count of each source
///    (source_rows must be multiples of the block count), grouped in source order.
/// Nothing depends on threads, timing or which rank asks.
class MixturePlan {
 public:
  /// Proportion mode when `batch_rows` is 0: the block is kProportionBlockRows positions, or
  /// more when a source's share of that would be under 2 rows (so every block's counts stay
  /// >= 0), at most the epoch. Stratified mode when `batch_rows` > 0: blocks of that many
  /// positions. Errors name what is wrong: no source, a source with no rows, counts that do
  /// not fill whole stratified blocks.
  static arrow::Result<MixturePlan> Make(std::vector<int64_t> source_rows, int64_t batch_rows,
                                         uint64_t seed);

  int num_sources() const { return static_cast<int>(source_rows_.size()); }
  /// Positions of an epoch: the sum of source_rows().
  int64_t epoch_rows() const { return epoch_rows_; }
  const std::vector<int64_t>& source_rows() const { return source_rows_; }
  int64_t block_rows() const { return block_rows_; }
  int64_t num_blocks() const { return (epoch_rows_ + block_rows_ - 1) / block_rows_; }
  bool stratified() const { return stratified_; }

  /// Rows of each source in positions [0, block * block_rows()) of any epoch
  /// (block <= num_blocks()).
  std::vector<int64_t> RowsBeforeBlock(int64_t block) const;
  /// The source of each position of block `block` of epoch `epoch`.
  std::vector<uint8_t> BlockSources(int64_t epoch, int64_t block) const;
  /// Rows of each source in positions [0, position) of epoch `epoch` (position <=
  /// epoch_rows()): O(block_rows()) work, no table.
  std::vector<int64_t> RowsBefore(int64_t epoch, int64_t position) const;

  /// Positions of a proportion-mode block unless a small share needs more.
  static constexpr int64_t kProportionBlockRows = 65536;
  /// Most sources a mixture may have (a position's source is one byte).
  static constexpr int kMaxSources = 255;

 private:
  MixturePlan(std::vector<int64_t> source_rows, int64_t block_rows, bool stratified, uint64_t seed);

  std::vector<int64_t> source_rows_;
  int64_t epoch_rows_ = 0;
  int64_t block_rows_ = 1;
  bool stratified_ = false;
  uint64_t seed_ = 0;
};

/// Plan level of the mixture's block permutations (the epoch plan uses 0 and 1).
inline constexpr uint64_t kMixtureLevel = 2;

}  // namespace stoker
