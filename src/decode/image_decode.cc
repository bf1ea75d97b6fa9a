// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/image_decode.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE declared first
#include <csetjmp>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <string>

namespace stoker {

namespace {

// --- png: libpng's simplified API, which reports errors through image.message ------------------

struct PngImage {
  png_image image{};
  PngImage() { image.version = PNG_IMAGE_VERSION; }
  ~PngImage() { png_image_free(&image); }
};

arrow::Status PngError(const png_image& image) {
  return arrow::Status::Invalid("not a decodable png: ", image.message);
}

// --- jpeg: libjpeg reports errors through error_exit, which must not return ---------------------

struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}

void JpegSilence(j_common_ptr /*info*/) {}  // warnings go unprinted (OpenCV ignores them too)

// The steps between setjmp and a longjmp hold no C++ objects with destructors: each step is a
// function of plain data that returns false after an error.
struct Jpeg {
  jpeg_decompress_struct info{};
  JpegErrors errors{};
};

bool JpegReadHeader(Jpeg* jpeg, const uint8_t* data, unsigned long size) {
  if (setjmp(jpeg->errors.jump) != 0) return false;
  jpeg_mem_src(&jpeg->info, data, size);
  jpeg_read_header(&jpeg->info, TRUE);
  jpeg->info.out_color_space = jpeg->info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&jpeg->info);
  return true;
}

bool JpegReadRows(Jpeg* jpeg, uint8_t* out, size_t row_bytes) {
  if (setjmp(jpeg->errors.jump) != 0) return false;
  while (jpeg->info.output_scanline < jpeg->info.output_height) {
    JSAMPROW row = out + row_bytes * jpeg->info.output_scanline;
    jpeg_read_scanlines(&jpeg->info, &row, 1);
  }
  jpeg_finish_decompress(&jpeg->info);
  return true;
}

}  // namespace

arrow::Status DecodePng(const uint8_t* data, int64_t size, const ImageTarget& target) {
  PngImage png;
  if (png_image_begin_read_from_memory(&png.image, data, static_cast<size_t>(size)) == 0) {
    return PngError(png.image);
  }
  const png_uint_32 format = png.image.format;
  if ((format & PNG_FORMAT_FLAG_ALPHA) != 0) {
    return arrow::Status::Invalid("the png has an alpha channel; images decode to grey or RGB");
  }
  if ((format & PNG_FORMAT_FLAG_LINEAR) != 0) {
    return arrow::Status::NotImplemented("the png has 16-bit samples; images decode to uint8");
  }
  const bool color = (format & PNG_FORMAT_FLAG_COLOR) != 0;
  png.image.format = color ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  const ImageSize image{png.image.height, png.image.width, color ? 3 : 1};
  arrow::Status error;
  uint8_t* out = target(image, &error);
  if (out == nullptr) return error;
  if (png_image_finish_read(&png.image, nullptr, out, 0, nullptr) == 0) {
    return PngError(png.image);
  }
  return arrow::Status::OK();
}

arrow::Status DecodeJpeg(const uint8_t* data, int64_t size, const ImageTarget& target) {
  Jpeg jpeg;
  jpeg.info.err = jpeg_std_error(&jpeg.errors.manager);
  jpeg.errors.manager.error_exit = JpegErrorExit;
  jpeg.errors.manager.output_message = JpegSilence;
  jpeg_create_decompress(&jpeg.info);
  arrow::Status status;
  if (!JpegReadHeader(&jpeg, data, static_cast<unsigned long>(size))) {
    status = arrow::Status::Invalid("not a decodable jpeg: ", jpeg.errors.message);
  } else if (jpeg.info.output_components != 1 && jpeg.info.output_components != 3) {
    status = arrow::Status::Invalid("the jpeg decodes to ", jpeg.info.output_components,
                                    " channels; images decode to grey or RGB");
  } else {
    const ImageSize image{jpeg.info.output_height, jpeg.info.output_width,
                          jpeg.info.output_components};
    uint8_t* out = target(image, &status);
    if (out != nullptr &&
        !JpegReadRows(&jpeg, out, static_cast<size_t>(image.width * image.channels))) {
      status = arrow::Status::Invalid("not a decodable jpeg: ", jpeg.errors.message);
    }
  }
  jpeg_destroy_decompress(&jpeg.info);
  return status;
}

}  // namespace stoker
