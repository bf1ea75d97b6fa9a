// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/status.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace stoker::thrift {

/// The value types of Thrift's compact protocol, as its field and list headers spell them.
enum class Type : uint8_t {
  kStop = 0,
  kTrue = 1,  // a bool field's value is its header's type
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

/// Walks compact-protocol bytes without decoding them into objects: field headers, list
/// headers, integers, strings, and whole values skipped. Every read is bounds-checked and
/// nesting is limited, so any input gives a value or an error, never a crash or a long loop.
class CompactReader {
 public:
  explicit CompactReader(std::string_view bytes) : bytes_(bytes) {}

  /// Offset of the next byte to read.
  int64_t position() const { return pos_; }
  /// The bytes from `begin` to the current position.
  std::string_view Since(int64_t begin) const { return bytes_.substr(begin, pos_ - begin); }

  /// The next field header of a struct whose previous field had id `*last_id` (0 at the
  /// start); `*type` is kStop after the last field. Updates `*last_id`.
  arrow::Status ReadFieldHeader(int16_t* last_id, int16_t* id, Type* type);
  /// A list's (or set's) header: element count and type.
  arrow::Status ReadListHeader(int64_t* size, Type* element);
  /// An i16, i32 or i64 value.
  arrow::Status ReadInt(int64_t* value);
  /// A binary or string value, as a view into the bytes.
  arrow::Status ReadBinary(std::string_view* value);
  /// Skips a value of `type`; `in_container`: a list, set or map element (a bool takes a
  /// byte there, none in a field).
  arrow::Status Skip(Type type, bool in_container = false, int depth = 0);

 private:
  arrow::Status ReadByte(uint8_t* byte);
  arrow::Status ReadVarint(uint64_t* value);
  arrow::Status Malformed(const char* what) const;
  uint64_t Left() const { return bytes_.size() - static_cast<uint64_t>(pos_); }

  std::string_view bytes_;
  int64_t pos_ = 0;
};

/// Writes compact-protocol bytes: what a skimmed struct is reassembled with.
class CompactWriter {
 public:
  /// A field header for field `id` of `type` after the previous field of this struct; ids
  /// must increase within a struct.
  void FieldHeader(int16_t id, Type type);
  void ListHeader(int64_t size, Type element);
  void Int(int64_t value);
  /// Bytes copied as they are (a value skimmed from other compact bytes).
  void Raw(std::string_view bytes) { out_.append(bytes); }
  void Stop() { out_.push_back(0); }
  std::string Finish() && { return std::move(out_); }

 private:
  void Varint(uint64_t value);

  std::string out_;
  int16_t last_id_ = 0;
};

}  // namespace stoker::thrift
