// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <cstdint>
#include <functional>

namespace stoker {

/// An image's size as its header gives it; channels is 1 (grey) or 3 (RGB).
struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;
};

/// Where a decoder writes an image of `size`: height * width * channels bytes, rows top to
/// bottom, channels interleaved (HWC). Returning null (with the reason in `error`) stops it.
using ImageTarget = std::function<uint8_t*(const ImageSize& size, arrow::Status* error)>;

/// Decodes png bytes (libpng) to 8-bit grey or RGB, as OpenCV's IMREAD_UNCHANGED and
/// Petastorm's CompressedImageCodec do: palettes expand to RGB; an alpha channel or 16-bit
/// samples are refused. Malformed bytes give Invalid, never a crash.
arrow::Status DecodePng(const uint8_t* data, int64_t size, const ImageTarget& target);

/// Decodes jpeg bytes (libjpeg-turbo) to 8-bit grey or RGB. Malformed bytes give Invalid.
arrow::Status DecodeJpeg(const uint8_t* data, int64_t size, const ImageTarget& target);

}  // namespace stoker
