// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "stoker/storage_options.h"
#include "stoker/transform_options.h"

namespace stoker {

/// What the cache does when it is full.
enum class CachePolicy {
  /// Evict the least recently used entries to stay under the limit.
  kLru,
  /// Store until the limit is reached, then keep what is there (a fixed part of every epoch
  /// is served locally when the dataset is larger than the disk).
  kFill,
};

/// The name options spell a cache policy with: "lru" or "fill".
const char* CachePolicyName(CachePolicy policy);
/// The policy called `name`; otherwise an error naming the option and the allowed values.
arrow::Result<CachePolicy> ParseCachePolicy(const std::string& name);

/// What kind of batch the consumer receives; decides which column types are allowed.
enum class OutputKind {
  /// Fixed-width numbers, bool and fixed-size lists of numbers, no nulls (numpy, torch).
  kTensor,
  /// Any Arrow type, nulls allowed (pyarrow.RecordBatch).
  kArrow,
};

/// Default for LoaderOptions::shuffle_window: rows mixed together by the shuffle.
inline constexpr int64_t kDefaultShuffleWindowRows = 262144;
/// Default for LoaderOptions::prefetch when it is 0: finished batches per worker thread.
inline constexpr int kDefaultPrefetchPerThread = 2;

/// Checks that `rank` is one of `world_size` (>= 1) ranks; the message names the option.
arrow::Status ValidateRank(int rank, int world_size);

/// Everything that configures a Loader. Plain data; Validate() checks it.
struct LoaderOptions {
  /// Files, directories (searched recursively for *.parquet), globs or a mix; resolved to
  /// files in sorted path order. Required.
  std::vector<std::string> sources;
  /// Columns to read, in output order. Empty means every column of the dataset.
  std::vector<std::string> columns;
  /// Rows per batch (>= 1). Every batch has exactly this many rows except possibly the last
  /// one of an epoch, which is dropped when drop_last is set. Required.
  int64_t batch_size = 0;
  /// false: file order, row-group order, row order.
  bool shuffle = true;
  /// Key of every random choice the plan makes. Same seed and epoch: same batches.
  uint64_t seed = 0;
  /// Rows whose decoded data is mixed together by the shuffle (rounded up to whole row
  /// groups). Larger mixes better and uses more memory: about this many decoded rows
  /// (up to twice as many at window boundaries) stay resident. 0 means
  /// kDefaultShuffleWindowRows. Ignored when shuffle is false.
  int64_t shuffle_window = 0;
  /// This process's place among world_size data-parallel ranks; 0 <= rank < world_size.
  int rank = 0;
  /// Number of data-parallel ranks sharing the epoch (>= 1). Ranks see disjoint rows and
  /// the same number of batches; at most world_size - 1 rows of an epoch are left out.
  int world_size = 1;
  /// Drop the last batch of an epoch when it is shorter than batch_size.
  bool drop_last = false;
  /// Worker threads that read, decode and assemble. 0 means the machine's cores.
  int num_threads = 0;
  /// Finished batches kept ready ahead of the consumer (>= 1). 0 means
  /// kDefaultPrefetchPerThread * num_threads.
  int prefetch = 0;
  /// Which column types are allowed (see OutputKind).
  OutputKind output = OutputKind::kTensor;
  /// Local directory caching finished units (src/cache/disk_cache.h); empty: no cache. The cache
  /// never changes what is delivered.
  std::string cache_dir;
  /// Bytes the cache may hold (0: no limit).
  int64_t cache_limit_bytes = 0;
  /// What a full cache does (CachePolicy).
  CachePolicy cache_policy = CachePolicy::kLru;
  /// How to reach object storage for s3:// sources (storage_options.h).
  StorageOptions storage;
  /// Feature transforms applied to each row group in the workers, in order (transform_options.h).
  std::vector<TransformOp> transforms;
  /// Rows kept: those for which this boolean expression is true (null counts as false).
  /// May name columns outside `columns`; they are read for the filter only. Unset: all rows.
  std::optional<arrow::compute::Expression> filter;
  /// Where decoded row groups and output batches are allocated (the allocator hook: a GPU
  /// build can pass a pinned-memory pool). nullptr means ResolvedMemoryPool()'s choice.
  arrow::MemoryPool* memory_pool = nullptr;

  /// Checks ranges, required fields and the storage options: the one place they are checked
  /// (the Python binding only converts types). The message names the option.
  arrow::Status Validate() const;

  /// num_threads with 0 resolved.
  int ResolvedThreads() const;
  /// prefetch with 0 resolved.
  int ResolvedPrefetch() const;
  /// shuffle_window with 0 resolved.
  int64_t ResolvedShuffleWindow() const;
  /// memory_pool, or when it is null Arrow's jemalloc pool where the build has it (freed
  /// row groups are reused without page faults; several times faster to decode into than
  /// the wheel's default mimalloc pool here), else Arrow's default pool. An AddressSanitizer
  /// build takes the system pool instead, so that ASan checks every buffer.
  arrow::MemoryPool* ResolvedMemoryPool() const;
};

}  // namespace stoker
