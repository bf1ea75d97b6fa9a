// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/recycling_pool.h"

#include <mutex>

#include "util/sanitizers.h"

namespace stoker {

RecyclingPool* RecyclingPool::Default(arrow::MemoryPool* base) {
  // One per base pool, alive until the process exits: batches may outlive every loader.
  static Mutex mutex;
  static auto* pools = new std::map<arrow::MemoryPool*, RecyclingPool*>();
  MutexLock lock(mutex);
  auto& pool = (*pools)[base];
  if (pool == nullptr) pool = new RecyclingPool(base, int64_t{64} << 20);
  return pool;
}

RecyclingPool::~RecyclingPool() {
  MutexLock lock(mutex_);
  for (auto& [key, blocks] : free_) {
    for (uint8_t* block : blocks) {
      UnpoisonMemory(block, key.first);
      base_->Free(block, key.first, key.second);
    }
  }
}

arrow::Status RecyclingPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  if (size >= kMinRecycledBytes) {
    MutexLock lock(mutex_);
    auto it = free_.find({size, alignment});
    if (it != free_.end() && !it->second.empty()) {
      *out = it->second.back();
      it->second.pop_back();
      UnpoisonMemory(*out, size);
      cached_bytes_ -= size;
      Count(size);
      return arrow::Status::OK();
    }
  }
  ARROW_RETURN_NOT_OK(base_->Allocate(size, alignment, out));
  Count(size);
  return arrow::Status::OK();
}

void RecyclingPool::Free(uint8_t* buffer, int64_t size, int64_t alignment) {
  Count(-size);
  if (size >= kMinRecycledBytes) {
    MutexLock lock(mutex_);
    if (cached_bytes_ + size <= max_cached_bytes_) {
      PoisonMemory(buffer, size);
      free_[{size, alignment}].push_back(buffer);
      cached_bytes_ += size;
      return;
    }
  }
  base_->Free(buffer, size, alignment);
}

int64_t RecyclingPool::cached_bytes() const {
  MutexLock lock(mutex_);
  return cached_bytes_;
}

}  // namespace stoker
