// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/value_check.h"

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <optional>

namespace stoker {
namespace {

// Strings of `type` (utf8 or large_utf8) holding `values` as raw bytes, valid UTF-8 or not.
std::shared_ptr<arrow::Array> RawStrings(
    const std::vector<std::optional<std::string>>& values,
    const std::shared_ptr<arrow::DataType>& type = arrow::utf8()) {
  const bool large = type->id() == arrow::Type::LARGE_STRING;
  std::unique_ptr<arrow::ArrayBuilder> builder;
  EXPECT_TRUE(arrow::MakeBuilder(arrow::default_memory_pool(),
                                 large ? arrow::large_binary() : arrow::binary(), &builder)
                  .ok());
  for (const auto& value : values) {
    if (!value.has_value()) {
      EXPECT_TRUE(builder->AppendNull().ok());
    } else if (large) {
      EXPECT_TRUE(static_cast<arrow::LargeBinaryBuilder&>(*builder).Append(*value).ok());
    } else {
      EXPECT_TRUE(static_cast<arrow::BinaryBuilder&>(*builder).Append(*value).ok());
    }
  }
  return builder->Finish().ValueOrDie()->View(type).ValueOrDie();
}

arrow::Status Check(const std::shared_ptr<arrow::Array>& column, const std::string& name = "s") {
  return CheckValues(*arrow::RecordBatch::Make(
      arrow::schema({arrow::field("id", arrow::int32()), arrow::field(name, column->type())}),
      column->length(),
      {arrow::MakeArrayFromScalar(arrow::Int32Scalar(1), column->length()).ValueOrDie(), column}));
}

constexpr char kBadByte[] = "\xff";

TEST(ValueCheckTest, ValidValuesOfEveryKindPass) {
  EXPECT_TRUE(Check(RawStrings({"caf\xc3\xa9", "", std::nullopt, "\xe2\x82\xac"})).ok());
  EXPECT_TRUE(Check(RawStrings({"ok"}, arrow::large_utf8())).ok());
  EXPECT_TRUE(Check(RawStrings({})).ok());
  EXPECT_TRUE(Check(arrow::json::ArrayFromJSONString(arrow::list(arrow::utf8()),
                                                     R"([["a", "b"], null, []])")
                        .ValueOrDie())
                  .ok());
  EXPECT_TRUE(
      Check(arrow::json::ArrayFromJSONString(arrow::float64(), "[1.5, null, -2]").ValueOrDie())
          .ok());
  EXPECT_TRUE(
      Check(arrow::json::ArrayFromJSONString(arrow::decimal128(3, 1), R"(["12.5"])").ValueOrDie())
          .ok());
}

TEST(ValueCheckTest, BytesThatAreNotUtf8NameTheColumn) {
  const auto status = Check(RawStrings({"fine", std::string("bad") + kBadByte}), "caption");
  ASSERT_TRUE(status.IsInvalid());
  EXPECT_EQ(status.message().rfind("column 'caption' holds a string that is not valid UTF-8 (", 0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("); the file's bytes are not what its schema says"),
            std::string::npos);
  EXPECT_FALSE(Check(RawStrings({std::string(kBadByte)}, arrow::large_utf8())).ok());
  // A character split between two values leaves each invalid, though the bytes together are
  // valid.
  EXPECT_FALSE(Check(RawStrings({"\xc3", "\xa9"})).ok());
  // A character cut short at the end.
  EXPECT_FALSE(Check(RawStrings({"ok", "\xe2\x82"})).ok());
}

TEST(ValueCheckTest, BytesUnderANullSlotAreNotAValue) {
  // The second slot's bytes are invalid, but it is null.
  const auto raw = RawStrings({"a", std::string(kBadByte), "b"});
  auto data = raw->data()->Copy();
  std::shared_ptr<arrow::Buffer> validity = arrow::AllocateBitmap(3).ValueOrDie();
  validity->mutable_data()[0] = 0b101;
  data->buffers[0] = validity;
  data->null_count = 1;
  EXPECT_TRUE(Check(arrow::MakeArray(data)).ok());
  // A slice that leaves the bad value out passes, one that keeps it fails.
  const auto all_valid = RawStrings({"a", std::string(kBadByte), "b"});
  EXPECT_TRUE(Check(all_valid->Slice(2, 1)).ok());
  EXPECT_FALSE(Check(all_valid->Slice(1, 2)).ok());
}

TEST(ValueCheckTest, StringsInsideNestedTypesAreChecked) {
  const auto bad = RawStrings({"x", std::string(kBadByte)});
  // list<string>
  const auto offsets = arrow::json::ArrayFromJSONString(arrow::int32(), "[0, 1, 2]").ValueOrDie();
  const auto list = arrow::ListArray::FromArrays(*offsets, *bad).ValueOrDie();
  EXPECT_NE(Check(list, "tags").message().find("column 'tags' holds a string that is not valid"),
            std::string::npos);
  // struct<n: int32, s: string>
  const auto ints = arrow::json::ArrayFromJSONString(arrow::int32(), "[1, 2]").ValueOrDie();
  const auto structs =
      arrow::StructArray::Make({ints, bad}, std::vector<std::string>{"n", "s"}).ValueOrDie();
  EXPECT_FALSE(Check(structs).ok());
  // dictionary<int32, string>: the dictionary's values
  const auto indices = arrow::json::ArrayFromJSONString(arrow::int32(), "[0, 0]").ValueOrDie();
  const auto dictionary = arrow::DictionaryArray::FromArrays(
                              arrow::dictionary(arrow::int32(), arrow::utf8()), indices, bad)
                              .ValueOrDie();
  EXPECT_FALSE(Check(dictionary).ok());
  // The same shapes with valid strings pass.
  const auto good = RawStrings({"x", "y"});
  EXPECT_TRUE(Check(arrow::ListArray::FromArrays(*offsets, *good).ValueOrDie()).ok());
  EXPECT_TRUE(
      Check(arrow::StructArray::Make({ints, good}, std::vector<std::string>{"n", "s"}).ValueOrDie())
          .ok());
}

TEST(ValueCheckTest, ValuesTheirTypeDoesNotAllowAreNamed) {
  // 12345 does not fit decimal128(3, 0), though its bytes are a valid decimal128.
  arrow::Decimal128Builder builder(arrow::decimal128(3, 0));
  ASSERT_TRUE(builder.Append(arrow::Decimal128(12345)).ok());
  const auto status = Check(builder.Finish().ValueOrDie(), "price");
  ASSERT_TRUE(status.IsInvalid());
  EXPECT_EQ(status.message().rfind(
                "column 'price' holds a value that its type decimal128(3, 0) does not allow (", 0),
            0u)
      << status.message();
  // A dictionary index past its dictionary.
  const auto indices = arrow::json::ArrayFromJSONString(arrow::int32(), "[0, 5]").ValueOrDie();
  const auto values = arrow::json::ArrayFromJSONString(arrow::int64(), "[1, 2]").ValueOrDie();
  auto dictionary = std::make_shared<arrow::DictionaryArray>(
      arrow::dictionary(arrow::int32(), arrow::int64()), indices, values);
  EXPECT_FALSE(Check(dictionary).ok());
}

}  // namespace
}  // namespace stoker
