// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/decode/codec_options.cc.
#pragma once

#include <arrow/result.h>

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

/// How the values of a binary column are encoded: Petastorm's codecs (docs/petastorm.md).
enum class ValueCodec {
  kNdarray,            ///< np.save bytes: a .npy header (dtype, shape, order), then the values
  kCompressedNdarray,  ///< np.savez_compressed(arr=...) bytes: a zip holding arr.npy, deflated
  kPng,                ///< a png image -> uint8 (H, W) or (H, W, 3) RGB
  kJpeg,               ///< a jpeg image -> uint8 (H, W) or (H, W, 3) RGB
};

/// The name options spell a codec with: "ndarray", "compressed_ndarray", "png" or "jpeg".
const char* ValueCodecName(ValueCodec codec);
/// The codec called `name`; otherwise an error naming the allowed values.
arrow::Result<ValueCodec> ParseValueCodec(const std::string& name);

/// One encoded column decoded in the workers, per row group, before the filter's survivors are
/// transformed and cached: the cache stores decoded tensors.
struct ColumnCodec {
  /// The binary column holding the encoded values.
  std::string column;
  ValueCodec codec = ValueCodec::kNdarray;
  /// The element type every value must decode to: bool, int8..int64, uint8..uint64,
  /// float16/32/64 (images: uint8).
  std::string dtype;
  /// The shape every value must decode to, outermost first; -1 for a dimension of unknown
  /// size. The column becomes one nested level per dimension: a fixed-size list where the
  /// size is known (all known: a tensor of shape (rows, *shape)), a list where it is not
  /// (output="arrow", or a pad transform for one unknown dimension). Empty: a scalar. One
  /// value decodes to at most 1 GiB.
  std::vector<int64_t> shape;
};

}  // namespace stoker
