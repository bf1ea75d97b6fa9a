// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/codec_options.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

TEST(CodecOptionsTest, EachCodecParsesFromTheNameItPrintsAs) {
  const std::pair<ValueCodec, const char*> codecs[] = {
      {ValueCodec::kNdarray, "ndarray"},
      {ValueCodec::kCompressedNdarray, "compressed_ndarray"},
      {ValueCodec::kPng, "png"},
      {ValueCodec::kJpeg, "jpeg"}};
  for (const auto& [codec, name] : codecs) {
    EXPECT_STREQ(ValueCodecName(codec), name);
    EXPECT_EQ(ParseValueCodec(name).ValueOrDie(), codec);
  }
}

TEST(CodecOptionsTest, AnUnknownNameListsTheAllowedOnes) {
  for (const char* name : {"", "PNG", "jpg", "npy"}) {
    const auto parsed = ParseValueCodec(name);
    ASSERT_TRUE(parsed.status().IsInvalid());
    EXPECT_EQ(parsed.status().message(), std::string("codec '") + name +
                                             "' is not one of ndarray, compressed_ndarray, png, "
                                             "jpeg");
  }
}

}  // namespace
}  // namespace stoker
