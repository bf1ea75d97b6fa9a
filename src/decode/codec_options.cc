// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/codec_options.h"

namespace stoker {

const char* ValueCodecName(ValueCodec codec) {
  switch (codec) {
    case ValueCodec::kNdarray:
      return "ndarray";
    case ValueCodec::kCompressedNdarray:
      return "compressed_ndarray";
    case ValueCodec::kPng:
      return "png";
    case ValueCodec::kJpeg:
      return "jpeg";
  }
  return "?";
}

arrow::Result<ValueCodec> ParseValueCodec(const std::string& name) {
  for (auto codec : {ValueCodec::kNdarray, ValueCodec::kCompressedNdarray, ValueCodec::kPng,
                     ValueCodec::kJpeg}) {
    if (name == ValueCodecName(codec)) return codec;
  }
  return arrow::Status::Invalid("codec '", name,
                                "' is not one of ndarray, compressed_ndarray, png, jpeg");
}

}  // namespace stoker
