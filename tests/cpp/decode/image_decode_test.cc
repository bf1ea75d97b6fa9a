// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/image_decode.h"

#include <gtest/gtest.h>
#include <png.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// jpeglib.h needs size_t and FILE declared before it.
#include <jpeglib.h>

namespace stoker {
namespace {

// `pixels` (height rows of width * channels bytes) as a png of `format`.
std::string EncodePng(const std::string& pixels, int height, int width, png_uint_32 format) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(width);
  image.height = static_cast<png_uint_32>(height);
  image.format = format;
  png_alloc_size_t size = 0;
  EXPECT_NE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr), 0);
  std::string out(size, '\0');
  EXPECT_NE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels.data(), 0, nullptr), 0);
  out.resize(size);
  return out;
}

// `pixels` as a jpeg of `channels` (1: grey, 3: RGB) at quality 100.
std::string EncodeJpeg(const std::string& pixels, int height, int width, int channels) {
  jpeg_compress_struct info{};
  jpeg_error_mgr errors{};
  info.err = jpeg_std_error(&errors);
  jpeg_create_compress(&info);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(width);
  info.image_height = static_cast<JDIMENSION>(height);
  info.input_components = channels;
  info.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, 100, TRUE);
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = reinterpret_cast<JSAMPROW>(const_cast<char*>(pixels.data())) +
                   info.next_scanline * width * channels;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  std::string out(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&info);
  free(buffer);
  return out;
}

// Decodes with `decode` into a buffer of the size the header gives.
struct Decoded {
  arrow::Status status;
  ImageSize size;
  std::string pixels;
};
template <typename Decode>
Decoded DecodeWith(Decode decode, const std::string& bytes) {
  Decoded out;
  out.status =
      decode(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int64_t>(bytes.size()),
             [&](const ImageSize& size, arrow::Status*) -> uint8_t* {
               out.size = size;
               out.pixels.assign(size.height * size.width * size.channels, '\0');
               return reinterpret_cast<uint8_t*>(out.pixels.data());
             });
  return out;
}

std::string Gradient(int height, int width, int channels) {
  std::string pixels;
  for (int i = 0; i < height * width * channels; ++i) pixels += static_cast<char>(i * 7 % 256);
  return pixels;
}

TEST(ImageDecodeTest, PngDecodesToItsExactGreyOrRgbPixels) {
  const std::string rgb = Gradient(4, 5, 3);
  const Decoded colour = DecodeWith(DecodePng, EncodePng(rgb, 4, 5, PNG_FORMAT_RGB));
  ASSERT_TRUE(colour.status.ok()) << colour.status.ToString();
  EXPECT_EQ(colour.size.height, 4);
  EXPECT_EQ(colour.size.width, 5);
  EXPECT_EQ(colour.size.channels, 3);
  EXPECT_EQ(colour.pixels, rgb);
  const std::string grey = Gradient(3, 2, 1);
  const Decoded gray = DecodeWith(DecodePng, EncodePng(grey, 3, 2, PNG_FORMAT_GRAY));
  ASSERT_TRUE(gray.status.ok());
  EXPECT_EQ(gray.size.channels, 1);
  EXPECT_EQ(gray.pixels, grey);
}

TEST(ImageDecodeTest, PngWithAlphaOrSixteenBitSamplesIsRefused) {
  const Decoded alpha = DecodeWith(DecodePng, EncodePng(Gradient(2, 2, 4), 2, 2, PNG_FORMAT_RGBA));
  ASSERT_TRUE(alpha.status.IsInvalid());
  EXPECT_EQ(alpha.status.message(), "the png has an alpha channel; images decode to grey or RGB");
  const Decoded wide =
      DecodeWith(DecodePng, EncodePng(std::string(2 * 2 * 2, '\x10'), 2, 2, PNG_FORMAT_LINEAR_Y));
  EXPECT_TRUE(wide.status.IsNotImplemented());
  EXPECT_EQ(wide.status.message(), "the png has 16-bit samples; images decode to uint8");
}

TEST(ImageDecodeTest, JpegDecodesToTheImagesSizeAndNearlyItsPixels) {
  const std::string flat(6 * 8 * 3, '\x80');  // a flat colour survives jpeg's loss
  const Decoded colour = DecodeWith(DecodeJpeg, EncodeJpeg(flat, 6, 8, 3));
  ASSERT_TRUE(colour.status.ok()) << colour.status.ToString();
  EXPECT_EQ(colour.size.height, 6);
  EXPECT_EQ(colour.size.width, 8);
  EXPECT_EQ(colour.size.channels, 3);
  for (char c : colour.pixels) EXPECT_NEAR(static_cast<uint8_t>(c), 0x80, 1);
  const Decoded grey = DecodeWith(DecodeJpeg, EncodeJpeg(std::string(4 * 4, '\x20'), 4, 4, 1));
  ASSERT_TRUE(grey.status.ok());
  EXPECT_EQ(grey.size.channels, 1);
  for (char c : grey.pixels) EXPECT_NEAR(static_cast<uint8_t>(c), 0x20, 1);
}

TEST(ImageDecodeTest, MalformedBytesAreInvalidAndATargetsErrorStopsTheDecoder) {
  const std::string png = EncodePng(Gradient(4, 4, 3), 4, 4, PNG_FORMAT_RGB);
  const std::string jpeg = EncodeJpeg(Gradient(4, 4, 3), 4, 4, 3);
  for (const std::string& bytes : {std::string("not an image"), std::string()}) {
    const Decoded bad_png = DecodeWith(DecodePng, bytes);
    ASSERT_TRUE(bad_png.status.IsInvalid());
    EXPECT_EQ(bad_png.status.message().rfind("not a decodable png: ", 0), 0u);
    const Decoded bad_jpeg = DecodeWith(DecodeJpeg, bytes);
    ASSERT_TRUE(bad_jpeg.status.IsInvalid());
    EXPECT_EQ(bad_jpeg.status.message().rfind("not a decodable jpeg: ", 0), 0u);
  }
  // Cut short after the header: the pixels cannot all be read.
  EXPECT_FALSE(DecodeWith(DecodePng, png.substr(0, png.size() / 2)).status.ok());
  EXPECT_FALSE(DecodeWith(DecodePng, jpeg).status.ok());
  EXPECT_FALSE(DecodeWith(DecodeJpeg, png).status.ok());
  // The target refuses the size: its error is the decoder's, and nothing is written.
  for (const auto& [decode, bytes] : {std::pair{&DecodePng, png}, std::pair{&DecodeJpeg, jpeg}}) {
    const arrow::Status refused =
        decode(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int64_t>(bytes.size()),
               [](const ImageSize&, arrow::Status* error) -> uint8_t* {
                 *error = arrow::Status::Invalid("too big");
                 return nullptr;
               });
    EXPECT_EQ(refused.message(), "too big");
  }
}

}  // namespace
}  // namespace stoker
