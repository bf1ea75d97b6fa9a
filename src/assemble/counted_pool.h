// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/status.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

namespace stoker {

/// An arrow::MemoryPool that keeps the statistics every pool reports (bytes allocated now,
/// the peak, bytes and allocations in all): a pool derived from it calls Count(+size) for
/// each block it hands out and Count(-size) for each it takes back. Thread-safe.
class CountedPool : public arrow::MemoryPool {
 public:
  using arrow::MemoryPool::Reallocate;
  /// A new block from Allocate, the bytes copied, the old block given to Free: neither
  /// derived pool can grow a block in place.
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    uint8_t* fresh = nullptr;
    ARROW_RETURN_NOT_OK(Allocate(new_size, alignment, &fresh));
    std::memcpy(fresh, *ptr, static_cast<size_t>(std::min(old_size, new_size)));
    Free(*ptr, old_size, alignment);
    *ptr = fresh;
    return arrow::Status::OK();
  }

  int64_t bytes_allocated() const override { return bytes_allocated_.load(); }
  int64_t max_memory() const override { return max_memory_.load(); }
  int64_t total_bytes_allocated() const override { return total_bytes_allocated_.load(); }
  int64_t num_allocations() const override { return num_allocations_.load(); }

 protected:
  void Count(int64_t delta) {
    const int64_t now = bytes_allocated_.fetch_add(delta) + delta;
    if (delta <= 0) return;
    total_bytes_allocated_.fetch_add(delta);
    num_allocations_.fetch_add(1);
    int64_t peak = max_memory_.load();
    while (now > peak && !max_memory_.compare_exchange_weak(peak, now)) {
    }
  }

 private:
  std::atomic<int64_t> bytes_allocated_{0}, max_memory_{0}, total_bytes_allocated_{0},
      num_allocations_{0};
};

}  // namespace stoker
