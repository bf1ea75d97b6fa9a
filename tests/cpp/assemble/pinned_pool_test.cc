// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The pinned pool loads the CUDA runtime once per process and keeps that first answer, so
// each runtime the tests present (none; fake_cudart.cc, whole, refusing every allocation, or
// missing an entry point) is met in a process of its own: a death-test child that re-runs
// this binary ("threadsafe" style), reporting its findings on stderr and its verdict in the
// exit code. The fake runtime is loaded by path before the pool is first asked for; the pool
// finds it as a runtime the process has loaded already, by its soname.
#include "assemble/pinned_pool.h"

#include <arrow/buffer.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>

namespace stoker {
namespace {

// What a check found wrong; empty when nothing.
class Findings {
 public:
  template <typename T, typename U>
  void Equal(const T& actual, const U& expected, const char* what) {
    if (actual == expected) return;
    out_ << what << ": got " << actual << ", expected " << expected << "\n";
  }
  void True(bool condition, const char* what) {
    if (!condition) out_ << what << "\n";
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// Runs `check` in a fresh process and expects it to find nothing wrong.
void ExpectInFreshProcess(const std::function<std::string()>& check) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const std::string findings = check();
        std::fputs(findings.c_str(), stderr);
        std::fflush(stderr);
        std::_Exit(findings.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The fake runtime's controls, found in the library loaded from `path`.
struct FakeRuntime {
  void (*fail)(int error) = nullptr;
  long (*live_blocks)() = nullptr;
  long (*alloc_calls)() = nullptr;
  size_t (*last_size)() = nullptr;
  unsigned (*last_flags)() = nullptr;

  static FakeRuntime Load(const char* path) {
    void* handle = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
      std::_Exit(2);
    }
    FakeRuntime fake;
    fake.fail = reinterpret_cast<void (*)(int)>(dlsym(handle, "stoker_fake_cudart_fail"));
    fake.live_blocks =
        reinterpret_cast<long (*)()>(dlsym(handle, "stoker_fake_cudart_live_blocks"));
    fake.alloc_calls =
        reinterpret_cast<long (*)()>(dlsym(handle, "stoker_fake_cudart_alloc_calls"));
    fake.last_size = reinterpret_cast<size_t (*)()>(dlsym(handle, "stoker_fake_cudart_last_size"));
    fake.last_flags =
        reinterpret_cast<unsigned (*)()>(dlsym(handle, "stoker_fake_cudart_last_flags"));
    return fake;
  }
};

// The first of the names the pool tries that loads on this machine; empty when none does.
std::string InstalledRuntime() {
  for (const char* name :
       {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) {
    if (void* handle = dlopen(name, RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(handle);
      return name;
    }
  }
  return "";
}

TEST(PinnedMemoryPoolTest, WithoutACudaRuntimeDefaultSaysWhatItTried) {
  if (const std::string name = InstalledRuntime(); !name.empty()) {
    GTEST_SKIP() << name << " loads here: this machine has a CUDA runtime";
  }
  ExpectInFreshProcess([] {
    Findings findings;
    const auto pool = PinnedMemoryPool::Default();
    findings.True(pool.status().IsNotImplemented(), "a NotImplemented error");
    const std::string message = pool.status().message();
    findings.Equal(message,
                   "pinned memory needs the CUDA runtime, and none could be loaded (tried "
                   "libcudart.so, libcudart.so.13, libcudart.so.12, libcudart.so.11.0): install "
                   "a CUDA build of PyTorch, or the CUDA toolkit",
                   "message");
    // The answer is kept: asking again tries nothing new.
    findings.Equal(PinnedMemoryPool::Default().status().message(), message, "second answer");
    return findings.str();
  });
}

// A CUDA toolkit on a machine without a GPU: the runtime loads, and Default() refuses it at
// once, naming it and CUDA's reason; with a GPU, the pool allocates.
TEST(PinnedMemoryPoolTest, TheInstalledRuntimeIsProbedBeforeItIsUsed) {
  const std::string name = InstalledRuntime();
  if (name.empty()) GTEST_SKIP() << "no CUDA runtime loads here";
  ExpectInFreshProcess([name] {
    Findings findings;
    const auto pool = PinnedMemoryPool::Default();
    if (!pool.ok()) {
      findings.True(pool.status().IsNotImplemented(), "a NotImplemented error");
      const std::string prefix = "pinned memory: " + name + " loaded, but cudaHostAlloc failed: ";
      const std::string message = pool.status().message();
      findings.Equal(message.substr(0, prefix.size()), prefix, "message");
      findings.True(message.size() > prefix.size(), "CUDA's reason");
      return findings.str();
    }
    uint8_t* block = nullptr;
    findings.True((*pool)->Allocate(8192, 64, &block).ok(), "Allocate(8192)");
    findings.Equal(reinterpret_cast<uintptr_t>(block) % 4096, uintptr_t{0}, "page alignment");
    (*pool)->Free(block, 8192, 64);
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, AllocatesPageAlignedPortableBlocksFromTheRuntime) {
  ExpectInFreshProcess([] {
    Findings findings;
    const FakeRuntime fake = FakeRuntime::Load(STOKER_FAKE_CUDART_COMPLETE);
    const auto loaded = PinnedMemoryPool::Default();
    if (!loaded.ok()) return "Default() failed: " + loaded.status().ToString() + "\n";
    arrow::MemoryPool* pool = *loaded;
    findings.Equal(*PinnedMemoryPool::Default(), pool, "the same pool every call");
    findings.Equal(pool->backend_name(), std::string("recycling(cuda_pinned)"), "backend");
    // Default() probed the runtime with one block, and gave it back.
    findings.Equal(fake.alloc_calls(), 1L, "probe allocations");
    findings.Equal(fake.live_blocks(), 0L, "blocks after the probe");

    uint8_t* block = nullptr;
    findings.True(pool->Allocate(10000, 64, &block).ok(), "Allocate(10000)");
    findings.Equal(reinterpret_cast<uintptr_t>(block) % 4096, uintptr_t{0}, "page alignment");
    findings.Equal(fake.last_size(), size_t{10000}, "bytes asked of the runtime");
    findings.Equal(fake.last_flags(), 1u, "cudaHostAllocPortable");
    findings.Equal(pool->bytes_allocated(), int64_t{10000}, "bytes allocated");
    std::memset(block, 0x5a, 10000);
    pool->Free(block, 10000, 64);
    findings.Equal(pool->bytes_allocated(), int64_t{0}, "bytes allocated after Free");
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, FreedBlocksAreReusedAndSmallOnesGoBackToTheRuntime) {
  ExpectInFreshProcess([] {
    Findings findings;
    const FakeRuntime fake = FakeRuntime::Load(STOKER_FAKE_CUDART_COMPLETE);
    arrow::MemoryPool* pool = PinnedMemoryPool::Default().ValueOrDie();
    const long calls = fake.alloc_calls();

    uint8_t* first = nullptr;
    findings.True(pool->Allocate(65536, 64, &first).ok(), "Allocate(65536)");
    pool->Free(first, 65536, 64);
    findings.Equal(fake.live_blocks(), 1L, "a freed block is kept, not given back");
    uint8_t* again = nullptr;
    findings.True(pool->Allocate(65536, 64, &again).ok(), "Allocate(65536) again");
    findings.Equal(static_cast<void*>(again), static_cast<void*>(first), "the kept block");
    findings.Equal(fake.alloc_calls(), calls + 1, "cudaHostAlloc calls");
    pool->Free(again, 65536, 64);

    // Blocks too small to be worth keeping go straight back to the runtime.
    uint8_t* small = nullptr;
    findings.True(pool->Allocate(100, 64, &small).ok(), "Allocate(100)");
    findings.Equal(fake.live_blocks(), 2L, "live blocks with the small one");
    pool->Free(small, 100, 64);
    findings.Equal(fake.live_blocks(), 1L, "live blocks after freeing the small one");

    // At most 256 MiB are kept: of two freed 160 MiB blocks, the second goes back.
    constexpr int64_t kBig = int64_t{160} << 20;
    uint8_t* big[2] = {nullptr, nullptr};
    for (auto& b : big) findings.True(pool->Allocate(kBig, 64, &b).ok(), "Allocate(160 MiB)");
    findings.Equal(fake.live_blocks(), 3L, "live blocks with the big ones");
    for (auto* b : big) pool->Free(b, kBig, 64);
    findings.Equal(fake.live_blocks(), 2L, "live blocks once both big ones are freed");
    findings.Equal(pool->bytes_allocated(), int64_t{0}, "bytes allocated");
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, BuffersKeepTheirBytesThroughResize) {
  ExpectInFreshProcess([] {
    Findings findings;
    FakeRuntime::Load(STOKER_FAKE_CUDART_COMPLETE);
    arrow::MemoryPool* pool = PinnedMemoryPool::Default().ValueOrDie();
    auto buffer = arrow::AllocateResizableBuffer(5000, pool).ValueOrDie();
    for (int i = 0; i < 5000; ++i) buffer->mutable_data()[i] = static_cast<uint8_t>(i % 251);
    findings.True(buffer->Resize(50000).ok(), "Resize to 50000");
    for (int i = 0; i < 5000; ++i) {
      if (buffer->data()[i] != static_cast<uint8_t>(i % 251)) {
        findings.Equal(static_cast<int>(buffer->data()[i]), i % 251, "a byte kept by Resize");
        break;
      }
    }
    findings.True(buffer->size() == 50000, "size after Resize");
    buffer.reset();
    findings.Equal(pool->bytes_allocated(), int64_t{0}, "bytes allocated after release");
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, BadRequestsAndFailedAllocationsAreErrors) {
  ExpectInFreshProcess([] {
    Findings findings;
    const FakeRuntime fake = FakeRuntime::Load(STOKER_FAKE_CUDART_COMPLETE);
    arrow::MemoryPool* pool = PinnedMemoryPool::Default().ValueOrDie();
    uint8_t* out = nullptr;

    const auto negative = pool->Allocate(-1, 64, &out);
    findings.True(negative.IsInvalid(), "negative size: Invalid");
    findings.Equal(negative.message(), std::string("negative allocation size -1"), "message");

    const auto aligned = pool->Allocate(8192, 8192, &out);
    findings.True(aligned.IsInvalid(), "alignment past a page: Invalid");
    findings.Equal(aligned.message(), std::string("pinned memory is page aligned; 8192 asked for"),
                   "message");
    findings.True(pool->Allocate(8192, 4096, &out).ok(), "page alignment is served");
    pool->Free(out, 8192, 4096);

    // A zero-byte request gets a block of its own (one byte asked of the runtime).
    uint8_t* empty = nullptr;
    findings.True(pool->Allocate(0, 64, &empty).ok(), "Allocate(0)");
    findings.True(empty != nullptr, "a block for zero bytes");
    findings.Equal(fake.last_size(), size_t{1}, "bytes asked of the runtime for zero");
    findings.Equal(pool->bytes_allocated(), int64_t{0}, "zero bytes counted");
    const long live = fake.live_blocks();
    pool->Free(empty, 0, 64);
    findings.Equal(fake.live_blocks(), live - 1, "the zero-byte block given back");

    fake.fail(2);
    const auto failed = pool->Allocate(1 << 20, 64, &out);
    findings.True(failed.IsOutOfMemory(), "failed cudaHostAlloc: OutOfMemory");
    findings.Equal(failed.message(),
                   std::string("cudaHostAlloc of 1048576 bytes failed: out of memory (fake)"),
                   "message");
    findings.Equal(pool->bytes_allocated(), int64_t{0}, "nothing counted for a failure");
    fake.fail(0);
    findings.True(pool->Allocate(1 << 20, 64, &out).ok(), "allocates again once it can");
    pool->Free(out, 1 << 20, 64);
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, ARuntimeWithoutADeviceIsRefusedAtTheFirstAsk) {
  ExpectInFreshProcess([] {
    Findings findings;
    const FakeRuntime fake = FakeRuntime::Load(STOKER_FAKE_CUDART_COMPLETE);
    fake.fail(100);
    const auto pool = PinnedMemoryPool::Default();
    findings.True(pool.status().IsNotImplemented(), "a NotImplemented error");
    findings.Equal(pool.status().message(),
                   std::string("pinned memory: libcudart.so.12 loaded, but cudaHostAlloc "
                               "failed: no CUDA-capable device is detected (fake)"),
                   "message");
    // The first answer stands, even once the runtime would allocate.
    fake.fail(0);
    findings.True(PinnedMemoryPool::Default().status().IsNotImplemented(), "answer kept");
    findings.Equal(fake.alloc_calls(), 1L, "the runtime probed once");
    return findings.str();
  });
}

TEST(PinnedMemoryPoolTest, ARuntimeMissingAnEntryPointIsRefused) {
  ExpectInFreshProcess([] {
    Findings findings;
    FakeRuntime::Load(STOKER_FAKE_CUDART_INCOMPLETE);
    const auto pool = PinnedMemoryPool::Default();
    findings.True(pool.status().IsIOError(), "an IOError");
    findings.Equal(pool.status().message(),
                   std::string("libcudart.so.13 has no cudaHostAlloc/cudaFreeHost"), "message");
    return findings.str();
  });
}

}  // namespace
}  // namespace stoker
