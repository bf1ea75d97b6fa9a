// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/thrift_compact.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace stoker::thrift {
namespace {

// Expects `status` to be the reader's "malformed" error at `byte` of `size`, saying `what`.
void ExpectMalformed(const arrow::Status& status, int64_t byte, size_t size, const char* what) {
  ASSERT_TRUE(status.IsInvalid()) << status.ToString();
  EXPECT_EQ(status.message(), "malformed Thrift metadata at byte " + std::to_string(byte) + " of " +
                                  std::to_string(size) + ": " + what);
}

TEST(ThriftCompactTest, IntegersRoundTripThroughZigzagVarints) {
  const int64_t values[] = {0,
                            1,
                            -1,
                            63,
                            -64,
                            64,
                            300,
                            -300,
                            int64_t{1} << 40,
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::min()};
  CompactWriter writer;
  for (int64_t value : values) writer.Int(value);
  const std::string bytes = std::move(writer).Finish();
  // Zigzag: 0 -> 0, 1 -> 2, -1 -> 1; one byte each up to 63 and down to -64.
  EXPECT_EQ(bytes.substr(0, 3), std::string("\x00\x02\x01", 3));
  CompactReader reader(bytes);
  for (int64_t value : values) {
    int64_t read = 0;
    ASSERT_TRUE(reader.ReadInt(&read).ok());
    EXPECT_EQ(read, value);
  }
  EXPECT_EQ(reader.position(), static_cast<int64_t>(bytes.size()));
  int64_t more = 0;
  ExpectMalformed(reader.ReadInt(&more), static_cast<int64_t>(bytes.size()), bytes.size(),
                  "truncated");
}

TEST(ThriftCompactTest, FieldHeadersUseADeltaUpToFifteenAndAnExplicitIdOtherwise) {
  CompactWriter writer;
  writer.FieldHeader(1, Type::kI32);   // delta 1: one byte
  writer.FieldHeader(16, Type::kI64);  // delta 15: one byte
  writer.FieldHeader(40, Type::kBinary);
  writer.FieldHeader(-2, Type::kStruct);  // ids going down are written explicitly
  writer.Stop();
  const std::string bytes = std::move(writer).Finish();
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x15);
  EXPECT_EQ(static_cast<uint8_t>(bytes[1]), 0xf6);
  EXPECT_EQ(static_cast<uint8_t>(bytes[2]), 0x08);  // type only, then zigzag(40) = 80
  EXPECT_EQ(static_cast<uint8_t>(bytes[3]), 80);

  CompactReader reader(bytes);
  int16_t last = 0, id = 0;
  Type type = Type::kStop;
  const std::pair<int16_t, Type> expected[] = {
      {1, Type::kI32}, {16, Type::kI64}, {40, Type::kBinary}, {-2, Type::kStruct}};
  for (const auto& [want_id, want_type] : expected) {
    ASSERT_TRUE(reader.ReadFieldHeader(&last, &id, &type).ok());
    EXPECT_EQ(id, want_id);
    EXPECT_EQ(type, want_type);
    EXPECT_EQ(last, want_id);
  }
  ASSERT_TRUE(reader.ReadFieldHeader(&last, &id, &type).ok());
  EXPECT_EQ(type, Type::kStop);
  EXPECT_EQ(reader.position(), static_cast<int64_t>(bytes.size()));
}

TEST(ThriftCompactTest, ListHeadersHoldShortSizesInlineAndLongOnesAfter) {
  CompactWriter writer;
  writer.ListHeader(3, Type::kI32);
  for (int i = 0; i < 3; ++i) writer.Int(i);
  writer.ListHeader(20, Type::kByte);
  writer.Raw(std::string(20, 'x'));
  const std::string bytes = std::move(writer).Finish();
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x35);
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), 0xf3);
  EXPECT_EQ(static_cast<uint8_t>(bytes[5]), 20);

  CompactReader reader(bytes);
  int64_t size = 0;
  Type element = Type::kStop;
  ASSERT_TRUE(reader.ReadListHeader(&size, &element).ok());
  EXPECT_EQ(size, 3);
  EXPECT_EQ(element, Type::kI32);
  ASSERT_TRUE(reader.Skip(Type::kI32, true).ok());
  ASSERT_TRUE(reader.Skip(Type::kI32, true).ok());
  ASSERT_TRUE(reader.Skip(Type::kI32, true).ok());
  const int64_t list_at = reader.position();
  ASSERT_TRUE(reader.ReadListHeader(&size, &element).ok());
  EXPECT_EQ(size, 20);
  EXPECT_EQ(element, Type::kByte);
  reader = CompactReader(bytes);
  ASSERT_TRUE(reader.Skip(Type::kList).ok());
  EXPECT_EQ(reader.position(), list_at);
  ASSERT_TRUE(reader.Skip(Type::kList).ok());
  EXPECT_EQ(reader.position(), static_cast<int64_t>(bytes.size()));
}

TEST(ThriftCompactTest, BinaryIsAViewOfItsBytesAndSinceGivesWhatWasWalked) {
  const std::string bytes = std::string("\x05hello\x00", 7);
  CompactReader reader(bytes);
  std::string_view value;
  ASSERT_TRUE(reader.ReadBinary(&value).ok());
  EXPECT_EQ(value, "hello");
  EXPECT_EQ(value.data(), bytes.data() + 1);
  EXPECT_EQ(reader.Since(0), std::string_view(bytes).substr(0, 6));
  ASSERT_TRUE(reader.ReadBinary(&value).ok());  // length 0
  EXPECT_TRUE(value.empty());
}

TEST(ThriftCompactTest, SkipWalksAWholeStructOfEveryType) {
  CompactWriter writer;
  writer.FieldHeader(1, Type::kTrue);  // a bool field: no value byte
  writer.FieldHeader(2, Type::kByte);
  writer.Raw("\x7f");
  writer.FieldHeader(3, Type::kDouble);
  writer.Raw(std::string(8, '\0'));
  writer.FieldHeader(4, Type::kBinary);
  writer.Raw("\x02hi");
  writer.FieldHeader(5, Type::kList);
  writer.ListHeader(2, Type::kTrue);  // bools in a list take a byte each
  writer.Raw("\x01\x02");
  writer.FieldHeader(6, Type::kMap);
  writer.Raw("\x01");  // one entry
  writer.Raw(std::string(
      1, static_cast<char>((static_cast<int>(Type::kBinary) << 4) | static_cast<int>(Type::kI32))));
  writer.Raw("\x01k");
  writer.Int(-7);
  writer.FieldHeader(7, Type::kMap);
  writer.Raw(std::string(1, '\0'));  // an empty map: its size only
  writer.FieldHeader(8, Type::kStruct);
  // The writer's last id runs on from the outer struct's 8: this id 1 is written explicitly.
  writer.FieldHeader(1, Type::kI16);
  writer.Int(5);
  writer.Stop();
  writer.Stop();
  const std::string bytes = std::move(writer).Finish() + "tail";
  CompactReader reader(bytes);
  ASSERT_TRUE(reader.Skip(Type::kStruct).ok());
  EXPECT_EQ(reader.position(), static_cast<int64_t>(bytes.size() - 4));
}

TEST(ThriftCompactTest, MalformedBytesAreErrorsNamingTheByte) {
  int16_t last = 0, id = 0;
  Type type = Type::kStop;
  {
    const std::string bytes = "\x1d";  // type 13 does not exist
    CompactReader reader(bytes);
    ExpectMalformed(reader.ReadFieldHeader(&last, &id, &type), 1, 1, "an unknown field type");
  }
  {
    // An explicit id beyond int16: type byte, then zigzag(40000) as a varint.
    CompactWriter writer;
    writer.Raw(std::string(1, static_cast<char>(Type::kI32)));
    writer.Int(40000);
    const std::string bytes = std::move(writer).Finish();
    CompactReader reader(bytes);
    last = 0;
    ExpectMalformed(reader.ReadFieldHeader(&last, &id, &type), static_cast<int64_t>(bytes.size()),
                    bytes.size(), "a field id");
  }
  {
    const std::string bytes(11, '\x80');
    CompactReader reader(bytes);
    int64_t value = 0;
    ExpectMalformed(reader.ReadInt(&value), 10, 11, "a varint longer than 10 bytes");
  }
  {
    const std::string bytes("\x35\x00", 2);  // three i32s, one byte left
    CompactReader reader(bytes);
    int64_t size = 0;
    Type element = Type::kStop;
    ExpectMalformed(reader.ReadListHeader(&size, &element), 1, 2,
                    "a list longer than the bytes left");
  }
  {
    const std::string bytes = "\x30";  // element type 0
    CompactReader reader(bytes);
    int64_t size = 0;
    Type element = Type::kStop;
    ExpectMalformed(reader.ReadListHeader(&size, &element), 1, 1, "an unknown element type");
  }
  {
    const std::string bytes =
        "\x09"
        "ab";
    CompactReader reader(bytes);
    std::string_view value;
    ExpectMalformed(reader.ReadBinary(&value), 1, 3, "a string longer than the bytes left");
  }
  {
    const std::string bytes = "\x01\xf5";  // one map entry of unknown key type 15
    CompactReader reader(bytes);
    ExpectMalformed(reader.Skip(Type::kMap), 2, 2, "an unknown map element type");
  }
  {
    const std::string bytes = "\x05\x01";  // five entries cannot fit in one byte
    CompactReader reader(bytes);
    ExpectMalformed(reader.Skip(Type::kMap), 1, 2, "a map longer than the bytes left");
  }
  {
    const std::string bytes(7, '\0');
    CompactReader reader(bytes);
    ExpectMalformed(reader.Skip(Type::kDouble), 0, 7, "truncated");
  }
  {
    CompactReader reader("");
    ExpectMalformed(reader.Skip(Type::kStop), 0, 0, "an unknown type");
  }
}

TEST(ThriftCompactTest, NestingDeeperThanParquetEverHasIsRefused) {
  // Structs in structs: field 1 of type struct, 100 deep.
  std::string bytes(100, static_cast<char>(0x10 | static_cast<int>(Type::kStruct)));
  bytes += std::string(101, '\0');
  CompactReader reader(bytes);
  const auto status = reader.Skip(Type::kStruct);
  ASSERT_TRUE(status.IsInvalid());
  EXPECT_NE(status.message().find("nesting too deep"), std::string::npos) << status.message();
  // 60 deep is fine.
  std::string shallow(60, static_cast<char>(0x10 | static_cast<int>(Type::kStruct)));
  shallow += std::string(61, '\0');
  CompactReader ok(shallow);
  ASSERT_TRUE(ok.Skip(Type::kStruct).ok());
  EXPECT_EQ(ok.position(), static_cast<int64_t>(shallow.size()));
}

}  // namespace
}  // namespace stoker::thrift
