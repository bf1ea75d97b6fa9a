// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/column_decoder.h"

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>
#include <png.h>

#include <optional>

#include "decode/decode_test_util.h"

namespace stoker {
namespace {

using testing::Bytes;
using testing::Npy;

// np.save bytes of int32 `values` of `shape` ("(2, 2)").
std::string NpyInt32(const std::string& shape, const std::vector<int32_t>& values) {
  return Npy("{'descr': '<i4', 'fortran_order': False, 'shape': " + shape + ", }", Bytes(values));
}

// A batch of one binary column "a" (nullopt: null) and an int64 column "id".
std::shared_ptr<arrow::RecordBatch> Batch(
    const std::vector<std::optional<std::string>>& values,
    const std::shared_ptr<arrow::DataType>& type = arrow::binary()) {
  std::unique_ptr<arrow::ArrayBuilder> builder;
  EXPECT_TRUE(arrow::MakeBuilder(arrow::default_memory_pool(), type, &builder).ok());
  arrow::Int64Builder ids;
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_TRUE(ids.Append(static_cast<int64_t>(i)).ok());
    if (!values[i].has_value()) {
      EXPECT_TRUE(builder->AppendNull().ok());
    } else if (type->id() == arrow::Type::LARGE_BINARY) {
      EXPECT_TRUE(static_cast<arrow::LargeBinaryBuilder&>(*builder).Append(*values[i]).ok());
    } else {
      EXPECT_TRUE(static_cast<arrow::BinaryBuilder&>(*builder).Append(*values[i]).ok());
    }
  }
  auto schema = arrow::schema({arrow::field("a", type), arrow::field("id", arrow::int64())});
  return arrow::RecordBatch::Make(schema, static_cast<int64_t>(values.size()),
                                  {builder->Finish().ValueOrDie(), ids.Finish().ValueOrDie()});
}

ColumnCodec Codec(ValueCodec codec, const std::string& dtype, std::vector<int64_t> shape,
                  const std::string& column = "a") {
  return ColumnCodec{column, codec, dtype, std::move(shape)};
}

std::shared_ptr<const ColumnDecoder> Decoder(const ColumnCodec& codec,
                                             const arrow::Schema& schema) {
  auto decoder = ColumnDecoder::Make({codec}, schema);
  EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
  return *decoder;
}

std::shared_ptr<arrow::Array> Expected(const std::shared_ptr<arrow::DataType>& type,
                                       const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

void ExpectError(const arrow::Status& status, const std::string& text) {
  ASSERT_FALSE(status.ok()) << text;
  EXPECT_NE(status.message().find(text), std::string::npos) << status.message();
}

TEST(ColumnDecoderTest, KnownShapesDecodeToNestedFixedSizeListsAndNullsStayNull) {
  const auto batch =
      Batch({NpyInt32("(2, 2)", {1, 2, 3, 4}), std::nullopt, NpyInt32("(2, 2)", {5, 6, 7, 8})});
  const auto decoder = Decoder(Codec(ValueCodec::kNdarray, "int32", {2, 2}), *batch->schema());
  const auto type = arrow::fixed_size_list(arrow::fixed_size_list(arrow::int32(), 2), 2);
  EXPECT_TRUE(decoder->output_schema()->field(0)->type()->Equals(*type));
  EXPECT_TRUE(decoder->output_schema()->field(1)->type()->Equals(*arrow::int64()));
  auto decoded = decoder->Apply(batch, arrow::default_memory_pool()).ValueOrDie();
  ASSERT_TRUE(decoded->ValidateFull().ok());
  EXPECT_TRUE(decoded->schema()->Equals(*decoder->output_schema()));
  EXPECT_TRUE(
      decoded->column(0)->Equals(*Expected(type, "[[[1, 2], [3, 4]], null, [[5, 6], [7, 8]]]")))
      << decoded->column(0)->ToString();
  EXPECT_TRUE(decoded->column(1)->Equals(*batch->column(1)));  // passed through
  // Under the null row: zeros, not garbage.
  const auto& values = static_cast<const arrow::Int32Array&>(
      *static_cast<const arrow::FixedSizeListArray&>(
           *static_cast<const arrow::FixedSizeListArray&>(*decoded->column(0)).values())
           .values());
  EXPECT_EQ(values.Value(4), 0);
  EXPECT_EQ(values.Value(7), 0);
}

TEST(ColumnDecoderTest, AScalarShapeDecodesToThePlainType) {
  const auto batch = Batch({Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                Bytes(std::vector<double>{2.5})),
                            std::nullopt},
                           arrow::large_binary());
  const auto decoder = Decoder(Codec(ValueCodec::kNdarray, "float64", {}), *batch->schema());
  auto decoded = decoder->Apply(batch, arrow::default_memory_pool()).ValueOrDie();
  EXPECT_TRUE(decoded->column(0)->Equals(*Expected(arrow::float64(), "[2.5, null]")))
      << decoded->column(0)->ToString();
}

TEST(ColumnDecoderTest, UnknownDimensionsBecomeListsThatKeepEachRowsShape) {
  const auto batch = Batch({NpyInt32("(2, 3)", {1, 2, 3, 4, 5, 6}), NpyInt32("(1, 3)", {7, 8, 9}),
                            std::nullopt, NpyInt32("(0, 3)", {})});
  const auto decoder = Decoder(Codec(ValueCodec::kNdarray, "int32", {-1, 3}), *batch->schema());
  const auto type = arrow::list(arrow::fixed_size_list(arrow::int32(), 3));
  EXPECT_TRUE(decoder->output_schema()->field(0)->type()->Equals(*type));
  auto decoded = decoder->Apply(batch, arrow::default_memory_pool()).ValueOrDie();
  ASSERT_TRUE(decoded->ValidateFull().ok());
  EXPECT_TRUE(decoded->column(0)->Equals(
      *Expected(type, "[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9]], null, []]")))
      << decoded->column(0)->ToString();

  // Both dimensions unknown, a known one outside them.
  const auto ragged =
      Batch({NpyInt32("(2, 1, 2)", {1, 2, 3, 4}), NpyInt32("(2, 2, 1)", {5, 6, 7, 8})});
  const auto nested = Decoder(Codec(ValueCodec::kNdarray, "int32", {2, -1, -1}), *ragged->schema());
  const auto nested_type = arrow::fixed_size_list(arrow::list(arrow::list(arrow::int32())), 2);
  auto out = nested->Apply(ragged, arrow::default_memory_pool()).ValueOrDie();
  ASSERT_TRUE(out->ValidateFull().ok());
  EXPECT_TRUE(out->column(0)->Equals(
      *Expected(nested_type, "[[[[1, 2]], [[3, 4]]], [[[5], [6]], [[7], [8]]]]")))
      << out->column(0)->ToString();
}

TEST(ColumnDecoderTest, CompressedArraysAreReadFromTheirArchive) {
  const auto batch = Batch({testing::Zip({{"arr.npy", NpyInt32("(3,)", {4, 5, 6}), true}}),
                            testing::Zip({{"other.npy", NpyInt32("(3,)", {4, 5, 6}), true}})});
  const auto decoder =
      Decoder(Codec(ValueCodec::kCompressedNdarray, "int32", {3}), *batch->schema());
  auto first = decoder->Apply(batch->Slice(0, 1), arrow::default_memory_pool()).ValueOrDie();
  EXPECT_TRUE(first->column(0)->Equals(
      *Expected(arrow::fixed_size_list(arrow::int32(), 3), "[[4, 5, 6]]")));
  EXPECT_EQ(decoder->Apply(batch, arrow::default_memory_pool()).status().message(),
            "decoding column 'a' (compressed_ndarray): row 1: the .npz archive holds no "
            "'arr.npy'");
}

TEST(ColumnDecoderTest, AValueOfAnotherDtypeOrShapeNamesTheColumnAndRow) {
  const auto decoder_of = [](const std::vector<int64_t>& shape) {
    return Decoder(Codec(ValueCodec::kNdarray, "int32", shape), *Batch({})->schema());
  };
  auto pool = arrow::default_memory_pool();
  EXPECT_EQ(decoder_of({2})
                ->Apply(Batch({NpyInt32("(2,)", {1, 2}),
                               Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                   Bytes(std::vector<int64_t>{1, 2}))}),
                        pool)
                .status()
                .message(),
            "decoding column 'a' (ndarray): row 1: decodes to dtype int64 where int32 (int32) is "
            "declared");
  EXPECT_EQ(decoder_of({2})->Apply(Batch({NpyInt32("(3,)", {1, 2, 3})}), pool).status().message(),
            "decoding column 'a' (ndarray): row 0: decodes to shape (3,) where (2,) is declared");
  EXPECT_EQ(decoder_of({-1})->Apply(Batch({NpyInt32("(1, 1)", {1})}), pool).status().message(),
            "decoding column 'a' (ndarray): row 0: decodes to shape (1, 1) where (None,) is "
            "declared");
  ExpectError(decoder_of({2})->Apply(Batch({std::string("not npy")}), pool).status(),
              "decoding column 'a' (ndarray): row 0: ");
}

TEST(ColumnDecoderTest, CodecsAreCheckedAgainstTheColumnsRead) {
  const auto schema = Batch({})->schema();
  auto make = [&](const ColumnCodec& codec) {
    return ColumnDecoder::Make({codec}, *schema).status();
  };
  const auto missing = make(Codec(ValueCodec::kNdarray, "int32", {2}, "nope"));
  EXPECT_TRUE(missing.IsKeyError());
  EXPECT_EQ(missing.message(), "codecs: column 'nope' is not among the columns read");
  const auto typed = make(Codec(ValueCodec::kPng, "uint8", {2, 2}, "id"));
  EXPECT_TRUE(typed.IsTypeError());
  EXPECT_EQ(typed.message(),
            "codecs: column 'id' has type int64; a png codec decodes binary values");
  ExpectError(make(Codec(ValueCodec::kNdarray, "complex64", {2})), "codecs: ");
  EXPECT_TRUE(make(Codec(ValueCodec::kNdarray, "bool", {2})).IsNotImplemented());
  EXPECT_EQ(make(Codec(ValueCodec::kNdarray, "int32", {2, 0})).message(),
            "codecs: column 'a': shape (2, 0) has a dimension that is neither a size from 1 to "
            "2**31-1 nor unknown");
  ExpectError(make(Codec(ValueCodec::kNdarray, "int32", {-2})), "has a dimension that is neither");
  ExpectError(make(Codec(ValueCodec::kNdarray, "int32", {int64_t{1} << 31})),
              "has a dimension that is neither");
  EXPECT_EQ(make(Codec(ValueCodec::kNdarray, "float64", {1 << 14, 1 << 14})).message(),
            "codecs: column 'a': a value of shape (16384, 16384) would hold more than the "
            "1073741824 bytes one value may decode to");
  EXPECT_TRUE(make(Codec(ValueCodec::kNdarray, "uint8", {1 << 15, 1 << 15})).ok());
  EXPECT_EQ(make(Codec(ValueCodec::kJpeg, "float32", {4, 4})).message(),
            "codecs: column 'a': a jpeg image decodes to uint8 of shape (H, W) or (H, W, 3), not "
            "float32 of shape (4, 4)");
  ExpectError(make(Codec(ValueCodec::kPng, "uint8", {4, 4, 4})), "a png image decodes to uint8");
  ExpectError(make(Codec(ValueCodec::kPng, "uint8", {4})), "a png image decodes to uint8");
  EXPECT_TRUE(make(Codec(ValueCodec::kPng, "uint8", {-1, -1, 3})).ok());
  EXPECT_EQ(ColumnDecoder::Make({Codec(ValueCodec::kNdarray, "int32", {2}),
                                 Codec(ValueCodec::kNdarray, "int32", {3})},
                                *schema)
                .status()
                .message(),
            "codecs: column 'a' is given twice");
}

TEST(ColumnDecoderTest, TheDigestIsEmptyWithoutCodecsAndFollowsEachOne) {
  const auto schema = Batch({})->schema();
  const auto none = ColumnDecoder::Make({}, *schema).ValueOrDie();
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(none->digest().empty());
  EXPECT_TRUE(none->output_schema()->Equals(*schema));
  const auto a = Decoder(Codec(ValueCodec::kNdarray, "int32", {2}), *schema);
  EXPECT_FALSE(a->empty());
  EXPECT_EQ(a->digest().size(), 32u);
  EXPECT_EQ(Decoder(Codec(ValueCodec::kNdarray, "int32", {2}), *schema)->digest(), a->digest());
  EXPECT_NE(Decoder(Codec(ValueCodec::kNdarray, "int32", {3}), *schema)->digest(), a->digest());
  EXPECT_NE(Decoder(Codec(ValueCodec::kNdarray, "int64", {2}), *schema)->digest(), a->digest());
  EXPECT_NE(Decoder(Codec(ValueCodec::kCompressedNdarray, "int32", {2}), *schema)->digest(),
            a->digest());
  // A column not read in a pass passes through.
  const auto ids = arrow::RecordBatch::Make(arrow::schema({arrow::field("id", arrow::int64())}), 1,
                                            {Expected(arrow::int64(), "[7]")});
  EXPECT_EQ(a->Apply(ids, arrow::default_memory_pool()).ValueOrDie(), ids);
}

TEST(ColumnDecoderTest, PngImagesDecodeToHeightWidthAndChannels) {
  // A 2x3 RGB image, pixel (r, c) = (10r + c, 100 + c, 200 - r).
  std::string pixels;
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) {
      pixels += static_cast<char>(10 * r + c);
      pixels += static_cast<char>(100 + c);
      pixels += static_cast<char>(200 - r);
    }
  }
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = 3;
  image.height = 2;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  ASSERT_NE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, nullptr), 0);
  std::string png(size, '\0');
  ASSERT_NE(png_image_write_to_memory(&image, png.data(), &size, 0, pixels.data(), 0, nullptr), 0);
  png.resize(size);

  const auto batch = Batch({png});
  const auto decoder = Decoder(Codec(ValueCodec::kPng, "uint8", {2, -1, 3}), *batch->schema());
  auto decoded = decoder->Apply(batch, arrow::default_memory_pool()).ValueOrDie();
  const auto type =
      arrow::fixed_size_list(arrow::list(arrow::fixed_size_list(arrow::uint8(), 3)), 2);
  EXPECT_TRUE(
      decoded->column(0)->Equals(*Expected(type,
                                           "[[[[0, 100, 200], [1, 101, 200], [2, 102, 200]], "
                                           "[[10, 100, 199], [11, 101, 199], [12, 102, 199]]]]")))
      << decoded->column(0)->ToString();
  // Grey is asked for, colour decodes: the shapes disagree.
  EXPECT_EQ(Decoder(Codec(ValueCodec::kPng, "uint8", {2, 3}), *batch->schema())
                ->Apply(batch, arrow::default_memory_pool())
                .status()
                .message(),
            "decoding column 'a' (png): row 0: decodes to shape (2, 3, 3) where (2, 3) is "
            "declared");
}

}  // namespace
}  // namespace stoker
