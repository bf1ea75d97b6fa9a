// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

/// The bytes of the member `name` of the zip archive `data` (np.savez_compressed writes one
/// member per array, "arr.npy" for Petastorm's CompressedNdarrayCodec), inflated with zlib.
/// The member's uncompressed size, from the central directory, must be at most `max_size`
/// and match what inflates. Malformed bytes give Invalid, never a crash.
arrow::Result<std::vector<uint8_t>> ReadZipMember(const uint8_t* data, int64_t size,
                                                  const std::string& name, int64_t max_size);

}  // namespace stoker
