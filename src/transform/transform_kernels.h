// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace stoker {

/// The array functions behind the transform ops that Arrow's compute functions do not
/// already provide. Each keeps nulls as nulls unless documented otherwise.

/// Stable 64-bit hash of a string id: SplitMix64's finalizer over FNV-1a 64 of its bytes.
uint64_t HashBytes(const uint8_t* data, int64_t length);
/// Stable 64-bit hash of an integer id (its int64 value): SplitMix64's finalizer.
uint64_t HashInteger(int64_t value);

/// int32 bucket i such that boundaries[i-1] <= x < boundaries[i] (numeric input).
arrow::Result<std::shared_ptr<arrow::Array>> Bucketize(const arrow::Array& values,
                                                       const std::vector<double>& boundaries,
                                                       arrow::MemoryPool* pool);

/// int64 hash bucket in [0, num_buckets) of string/binary or integer ids.
arrow::Result<std::shared_ptr<arrow::Array>> HashIds(const arrow::Array& ids, int64_t num_buckets,
                                                     arrow::MemoryPool* pool);

/// A vocabulary: token -> id, for string ids or for integer ids.
struct Vocabulary {
  std::unordered_map<std::string, int64_t> by_text;
  std::unordered_map<int64_t, int64_t> by_integer;
  bool integer_keys = false;
  /// Digest of the file's bytes (names the vocabulary in the canonical spec).
  std::string digest;
};

/// Reads a vocabulary file (one token per line; line i, from 0, has id i). With
/// integer_keys every line must be an integer. Duplicate tokens are errors.
arrow::Result<std::shared_ptr<Vocabulary>> LoadVocabulary(const std::string& path,
                                                          bool integer_keys);

/// int64 ids of string/binary or integer tokens; unknown tokens get default_id.
arrow::Result<std::shared_ptr<arrow::Array>> LookupVocabulary(const arrow::Array& ids,
                                                              const Vocabulary& vocabulary,
                                                              int64_t default_id,
                                                              arrow::MemoryPool* pool);

/// Interleaves same-typed scalar columns into one fixed_size_list[n] column (row-major).
arrow::Result<std::shared_ptr<arrow::Array>> Stack(const arrow::ArrayVector& columns,
                                                   arrow::MemoryPool* pool);

/// A variable-length list column as fixed_size_list[length] (longer lists truncated, shorter
/// ones filled with `pad`; a null list is all pad) and the int32 count of real values.
arrow::Result<std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>>> PadLists(
    const arrow::Array& lists, int64_t length, double pad, arrow::MemoryPool* pool);

}  // namespace stoker
