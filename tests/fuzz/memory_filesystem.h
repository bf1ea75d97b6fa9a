// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace stoker::fuzz {

/// Sources named "mem:///<name>" resolve to an in-memory filesystem shared by the whole
/// process (Arrow's MockFileSystem, read through BufferReaders), so a fuzz input reaches the
/// loader through its real source resolution without touching the disk.
inline constexpr std::string_view kMemoryScheme = "mem";

/// Registers the "mem" scheme with Arrow's filesystem registry (once; later calls do nothing).
arrow::Status RegisterMemoryFileSystem();

/// Puts `size` bytes at "mem:///<name>", replacing what was there; returns the source URI.
arrow::Result<std::string> PutMemoryFile(const std::string& name, const uint8_t* data, size_t size);

}  // namespace stoker::fuzz
