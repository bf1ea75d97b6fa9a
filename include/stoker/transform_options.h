// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/transform/ops/registry.cc (the names; each op is a file beside it).
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace stoker {

/// The vocabulary of feature transforms (docs/transforms.md has an example of each).
enum class TransformKind {
  kCast,           ///< column -> dtype (safe: overflow and truncation are errors)
  kFillNull,       ///< nulls of column -> value (number or text)
  kClip,           ///< column -> min(max(x, low), high); nulls stay null
  kLog1p,          ///< column -> log(1 + x) as float32 (float64 stays float64)
  kStandardize,    ///< column -> (x - mean) / std as float32 (float64 stays float64)
  kBucketize,      ///< column -> int32 index i with boundaries[i-1] <= x < boundaries[i]
  kHash,           ///< string or integer id -> int64 bucket in [0, num_buckets)
  kVocabulary,     ///< string or integer id -> int64 line number in a file, unknowns -> default
  kStack,          ///< scalar columns -> one fixed_size_list<dtype>[n] column named output
  kRename,         ///< column -> output
  kDrop,           ///< columns are removed
  kPad,            ///< variable list -> fixed_size_list[length] + int32 "<column>_length"
  kRagged,         ///< variable list reaches tensors as values + "<column>_offsets"
  kBernoulliMask,  ///< new column: bool (or int8) true with probability p, per row
  kUniform,        ///< new column: float uniform in [low, high), per row
  kRandint,        ///< new column: int64 uniform in [low, high), per row or `size` per row
  kDropout,        ///< list column: each element dropped with probability p
  kTruncate,       ///< list columns: each row's first or last `length` elements (`keep`)
};

/// One step of a transform spec. Plain data; which fields an op reads is documented per kind.
struct TransformOp {
  TransformKind kind = TransformKind::kCast;
  /// Input column(s): one for most ops, several for stack and drop.
  std::vector<std::string> columns;
  /// New column name (stack, rename); empty for ops that work in place.
  std::string output;
  /// Target type name for cast and stack: bool, int8..int64, uint8..uint64, float16/32/64.
  std::string dtype;
  /// fill_null's value when it is a number (is_text false) or text (is_text true).
  double number = 0;
  std::string text;
  bool is_text = false;
  /// clip's bounds (either may be infinite); uniform's and randint's range [low, high).
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  /// standardize's parameters (std > 0).
  double mean = 0;
  double std = 1;
  /// bucketize's boundaries, strictly increasing.
  std::vector<double> boundaries;
  /// hash's number of buckets (>= 1).
  int64_t num_buckets = 0;
  /// vocabulary's file (one token per line; line i has id i) and the id of unknown tokens.
  std::string path;
  int64_t default_id = 0;
  /// pad's fixed length and truncate's longest list (>= 1); the pad value is `number`.
  int64_t length = 0;
  /// Which elements pad and truncate keep of a longer list: "first" or "last" (a user
  /// history's most recent events).
  std::string keep = "first";
  /// bernoulli_mask's and dropout's probability, in [0, 1].
  double p = 0;
  /// randint's draws per row: 0 gives an int64 column, n >= 1 a fixed_size_list<int64>[n].
  int64_t size = 0;
  /// The integer column whose value keys a random op's draws for a row instead of the row's
  /// position in the dataset; empty: the position.
  std::string key;
};

/// The name of an op kind as the spec writes it ("log1p", "fill_null", ...).
const char* TransformKindName(TransformKind kind);
/// The kind named `name`; an error listing the vocabulary otherwise.
arrow::Result<TransformKind> ParseTransformKind(const std::string& name);

}  // namespace stoker
