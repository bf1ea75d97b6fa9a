// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "assemble/counted_pool.h"
#include "util/thread_annotations.h"

namespace stoker {

/// A memory pool for batch output buffers that keeps freed blocks for reuse.
///
/// Every batch allocates the same buffers (same sizes, batch after batch) and the consumer
/// frees them a few batches later. The wheel's jemalloc hands such blocks back to the kernel
/// when many are freed at once (a 500-column batch frees 500 blocks), so the next batch
/// faults every page in again: on a VM that cost a microsecond per wide row, more than the
/// gather itself. This pool keeps freed blocks of the sizes it saw, per size, and serves the
/// next request of that size from them.
///
/// Bound: it holds at most `max_cached_bytes` of freed blocks; beyond that, blocks go back
/// to the base pool. Buffers handed to numpy/torch may outlive any loader, so the process's
/// pool (Default()) is never destroyed. Thread-safe.
class RecyclingPool final : public CountedPool {
 public:
  /// Blocks of fewer bytes are not worth keeping (the allocator's own caches serve them).
  static constexpr int64_t kMinRecycledBytes = 4096;
  /// The process's pool over `base`, holding at most 64 MiB of freed blocks.
  static RecyclingPool* Default(arrow::MemoryPool* base);

  RecyclingPool(arrow::MemoryPool* base, int64_t max_cached_bytes)
      : base_(base), max_cached_bytes_(max_cached_bytes) {}
  ~RecyclingPool() override;

  using arrow::MemoryPool::Allocate;
  using arrow::MemoryPool::Free;
  using CountedPool::Reallocate;
  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;

  std::string backend_name() const override { return "recycling(" + base_->backend_name() + ")"; }
  /// Bytes of freed blocks held for reuse now.
  int64_t cached_bytes() const;

 private:
  // Blocks are kept per (size, alignment).
  using Key = std::pair<int64_t, int64_t>;

  arrow::MemoryPool* const base_;
  const int64_t max_cached_bytes_;
  mutable Mutex mutex_;
  std::map<Key, std::vector<uint8_t*>> free_ GUARDED_BY(mutex_);
  int64_t cached_bytes_ GUARDED_BY(mutex_) = 0;
};

}  // namespace stoker
