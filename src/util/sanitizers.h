// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <cstdint>

// What the sanitizer builds (`make test-asan`, `make test-tsan`, `make fuzz`) need from the
// engine. Both sanitizers see memory only through malloc and free, so their builds allocate
// with the system pool (LoaderOptions::ResolvedMemoryPool), never jemalloc or mimalloc.
// Under ASan, pools that keep freed blocks for reuse (RecyclingPool, ChunkPool) would hide a
// use after free: the block is still allocated as far as malloc knows. So they mark a parked
// block unaddressable ("poison" it) and addressable again when they hand it out.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STOKER_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(STOKER_ADDRESS_SANITIZER)
#define STOKER_ADDRESS_SANITIZER 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STOKER_THREAD_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(STOKER_THREAD_SANITIZER)
#define STOKER_THREAD_SANITIZER 1
#endif

#ifdef STOKER_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace stoker {

/// True in a build with AddressSanitizer.
#ifdef STOKER_ADDRESS_SANITIZER
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

/// True in a build with ThreadSanitizer.
#ifdef STOKER_THREAD_SANITIZER
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

/// Marks [data, data + size) unaddressable: a block parked in a pool. No-op without ASan.
inline void PoisonMemory([[maybe_unused]] const void* data, [[maybe_unused]] int64_t size) {
#ifdef STOKER_ADDRESS_SANITIZER
  ASAN_POISON_MEMORY_REGION(data, static_cast<size_t>(size));
#endif
}

/// Marks [data, data + size) addressable again: a parked block handed out or freed.
inline void UnpoisonMemory([[maybe_unused]] const void* data, [[maybe_unused]] int64_t size) {
#ifdef STOKER_ADDRESS_SANITIZER
  ASAN_UNPOISON_MEMORY_REGION(data, static_cast<size_t>(size));
#endif
}

}  // namespace stoker
