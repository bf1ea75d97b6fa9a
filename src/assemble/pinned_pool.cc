// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/pinned_pool.h"

#include <dlfcn.h>

#include <string>

#include "assemble/recycling_pool.h"

namespace stoker {

namespace {

// cudaHostAlloc hands out page-aligned blocks; larger alignments are never asked for.
constexpr int64_t kPageAlignment = 4096;
// cudaHostAllocPortable: pinned for every CUDA context, not only the current one.
constexpr unsigned kHostAllocPortable = 1;
constexpr int64_t kMaxCachedBytes = int64_t{256} << 20;

// The CUDA runtime's names: the unversioned one (a CUDA toolkit install), then the sonames
// CUDA 13, 12 and 11 wheels ship.
constexpr const char* kRuntimeNames[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                         "libcudart.so.11.0"};

struct OpenedRuntime {
  void* handle = nullptr;  // null: none could be loaded
  std::string name;        // the name it was found by; without a handle, every name tried
};

// The runtime the process has loaded already (a CUDA build of torch or jax loads its own at
// import), else the first of kRuntimeNames that loads. The loaded one comes first because
// "libcudart.so" can resolve to a system toolkit's copy while torch uses the one its wheel
// ships: two runtimes in one process, and torch, asked about blocks the other one allocated,
// need not call them pinned (Tensor.is_pinned() was False on a GPU machine).
OpenedRuntime OpenRuntime() {
  for (const char* name : kRuntimeNames) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD)) return {handle, name};
  }
  std::string tried;
  for (const char* name : kRuntimeNames) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_GLOBAL)) return {handle, name};
    tried += std::string(tried.empty() ? "" : ", ") + name;
  }
  return {nullptr, tried};
}

}  // namespace

// The three runtime entry points the pool calls, found with dlsym.
struct PinnedMemoryPool::Runtime {
  int (*host_alloc)(void** ptr, size_t size, unsigned flags) = nullptr;
  int (*free_host)(void* ptr) = nullptr;
  const char* (*error_string)(int error) = nullptr;

  // The process's runtime (OpenRuntime), checked once: the first call's answer is every call's.
  static arrow::Result<const Runtime*> Load() {
    static const arrow::Result<const Runtime*> loaded = []() -> arrow::Result<const Runtime*> {
      const auto [handle, name] = OpenRuntime();
      if (handle == nullptr) {
        return arrow::Status::NotImplemented(
            "pinned memory needs the CUDA runtime, and none could be loaded (tried ", name,
            "): install a CUDA build of PyTorch, or the CUDA toolkit");
      }
      auto* runtime = new Runtime();  // alive with the process, as the pool is
      runtime->host_alloc =
          reinterpret_cast<decltype(runtime->host_alloc)>(dlsym(handle, "cudaHostAlloc"));
      runtime->free_host =
          reinterpret_cast<decltype(runtime->free_host)>(dlsym(handle, "cudaFreeHost"));
      runtime->error_string =
          reinterpret_cast<decltype(runtime->error_string)>(dlsym(handle, "cudaGetErrorString"));
      if (!runtime->host_alloc || !runtime->free_host || !runtime->error_string) {
        delete runtime;
        return arrow::Status::IOError(name, " has no cudaHostAlloc/cudaFreeHost");
      }
      // A runtime without a usable device (a CUDA install on a CPU machine) loads, then
      // fails every allocation: find out now, at Make, rather than at the first batch.
      void* probe = nullptr;
      if (const int error = runtime->host_alloc(&probe, 64, kHostAllocPortable); error != 0) {
        const std::string why = runtime->error_string(error);
        delete runtime;
        return arrow::Status::NotImplemented("pinned memory: ", name,
                                             " loaded, but cudaHostAlloc failed: ", why);
      }
      runtime->free_host(probe);
      return runtime;
    }();
    return loaded;
  }
};

arrow::Result<arrow::MemoryPool*> PinnedMemoryPool::Default() {
  ARROW_ASSIGN_OR_RAISE(const Runtime* runtime, Runtime::Load());
  static arrow::MemoryPool* const pool =
      new RecyclingPool(new PinnedMemoryPool(runtime), kMaxCachedBytes);
  return pool;
}

arrow::Status PinnedMemoryPool::Allocate(int64_t size, int64_t alignment, uint8_t** out) {
  if (size < 0) return arrow::Status::Invalid("negative allocation size ", size);
  if (alignment > kPageAlignment) {
    return arrow::Status::Invalid("pinned memory is page aligned; ", alignment, " asked for");
  }
  void* ptr = nullptr;
  // A zero-byte request still gets a block of its own, so Free can hand it back.
  const int error =
      runtime_->host_alloc(&ptr, static_cast<size_t>(size > 0 ? size : 1), kHostAllocPortable);
  if (error != 0) {
    return arrow::Status::OutOfMemory("cudaHostAlloc of ", size,
                                      " bytes failed: ", runtime_->error_string(error));
  }
  *out = static_cast<uint8_t*>(ptr);
  Count(size);
  return arrow::Status::OK();
}

void PinnedMemoryPool::Free(uint8_t* buffer, int64_t size, int64_t /*alignment*/) {
  runtime_->free_host(buffer);
  Count(-size);
}

}  // namespace stoker
