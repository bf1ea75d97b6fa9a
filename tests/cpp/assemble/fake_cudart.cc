// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// A stand-in for the CUDA runtime's pinned-memory entry points, built as a library whose
// soname is one PinnedMemoryPool looks for (pinned_pool_test.cc loads it in a fresh process),
// so the pool's allocation paths run on machines without CUDA. Blocks are page-aligned heap
// memory; the stoker_fake_cudart_* functions let the test make calls fail and count blocks.
// Built without cudaFreeHost (STOKER_FAKE_CUDART_INCOMPLETE) it is a runtime the pool refuses.
#include <atomic>
#include <cstddef>
#include <cstdlib>

namespace {

constexpr int kSuccess = 0;
constexpr size_t kPage = 4096;

std::atomic<int> next_error{kSuccess};
std::atomic<long> live_blocks{0};
std::atomic<long> alloc_calls{0};
std::atomic<size_t> last_size{0};
std::atomic<unsigned> last_flags{0};

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cudaHostAlloc(void** ptr, size_t size, unsigned flags) {
  alloc_calls.fetch_add(1);
  last_size.store(size);
  last_flags.store(flags);
  if (const int error = next_error.load(); error != kSuccess) return error;
  if (posix_memalign(ptr, kPage, size) != 0) return 2;
  live_blocks.fetch_add(1);
  return kSuccess;
}

#ifndef STOKER_FAKE_CUDART_INCOMPLETE
__attribute__((visibility("default"))) int cudaFreeHost(void* ptr) {
  std::free(ptr);
  live_blocks.fetch_sub(1);
  return kSuccess;
}
#endif

__attribute__((visibility("default"))) const char* cudaGetErrorString(int error) {
  switch (error) {
    case 2:
      return "out of memory (fake)";
    case 100:
      return "no CUDA-capable device is detected (fake)";
    default:
      return "unknown error (fake)";
  }
}

// Every later cudaHostAlloc fails with `error` (0: succeeds again).
__attribute__((visibility("default"))) void stoker_fake_cudart_fail(int error) {
  next_error.store(error);
}
// Blocks handed out and not yet freed.
__attribute__((visibility("default"))) long stoker_fake_cudart_live_blocks() {
  return live_blocks.load();
}
// cudaHostAlloc calls so far, and the size and flags of the last.
__attribute__((visibility("default"))) long stoker_fake_cudart_alloc_calls() {
  return alloc_calls.load();
}
__attribute__((visibility("default"))) size_t stoker_fake_cudart_last_size() {
  return last_size.load();
}
__attribute__((visibility("default"))) unsigned stoker_fake_cudart_last_flags() {
  return last_flags.load();
}

}  // extern "C"
