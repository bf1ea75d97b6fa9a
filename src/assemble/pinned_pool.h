// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include <cstdint>
#include <string>

#include "assemble/counted_pool.h"

namespace stoker {

/// Page-locked ("pinned") host memory from the CUDA runtime, for batches bound for a GPU: a
/// copy from pinned memory is one DMA, while a copy from pageable memory is staged through a
/// driver buffer first and cannot overlap compute.
///
/// The runtime (libcudart) is loaded when the pool is first asked for, not linked: Stoker
/// builds and runs without CUDA, and a process with a CUDA build of PyTorch or JAX already
/// has it loaded. Allocating pinned memory is slow (it maps and locks pages), so batches take
/// it through a RecyclingPool that keeps freed blocks for the next batch of the same sizes.
class PinnedMemoryPool final : public CountedPool {
 public:
  /// The process's pinned pool, recycling freed blocks (at most 256 MiB kept), alive until
  /// the process exits (batches may outlive every loader); or an error saying that no CUDA
  /// runtime could be loaded.
  static arrow::Result<arrow::MemoryPool*> Default();

  using arrow::MemoryPool::Allocate;
  using arrow::MemoryPool::Free;
  using CountedPool::Reallocate;
  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override;
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override;

  std::string backend_name() const override { return "cuda_pinned"; }

 private:
  struct Runtime;
  explicit PinnedMemoryPool(const Runtime* runtime) : runtime_(runtime) {}

  const Runtime* const runtime_;
};

}  // namespace stoker
