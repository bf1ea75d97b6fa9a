// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/thrift_compact.h"

namespace stoker::thrift {

namespace {

// Deeper nesting than Parquet's metadata ever has (a few levels) is refused.
constexpr int kMaxDepth = 64;

int64_t Unzigzag(uint64_t n) { return static_cast<int64_t>(n >> 1) ^ -static_cast<int64_t>(n & 1); }

uint64_t Zigzag(int64_t n) {
  return (static_cast<uint64_t>(n) << 1) ^ static_cast<uint64_t>(n >> 63);
}

}  // namespace

arrow::Status CompactReader::Malformed(const char* what) const {
  return arrow::Status::Invalid("malformed Thrift metadata at byte ", pos_, " of ", bytes_.size(),
                                ": ", what);
}

arrow::Status CompactReader::ReadByte(uint8_t* byte) {
  if (Left() == 0) return Malformed("truncated");
  *byte = static_cast<uint8_t>(bytes_[pos_++]);
  return arrow::Status::OK();
}

arrow::Status CompactReader::ReadVarint(uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    uint8_t byte;
    ARROW_RETURN_NOT_OK(ReadByte(&byte));
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return arrow::Status::OK();
  }
  return Malformed("a varint longer than 10 bytes");
}

arrow::Status CompactReader::ReadInt(int64_t* value) {
  uint64_t raw;
  ARROW_RETURN_NOT_OK(ReadVarint(&raw));
  *value = Unzigzag(raw);
  return arrow::Status::OK();
}

arrow::Status CompactReader::ReadFieldHeader(int16_t* last_id, int16_t* id, Type* type) {
  uint8_t byte;
  ARROW_RETURN_NOT_OK(ReadByte(&byte));
  *type = static_cast<Type>(byte & 0x0f);
  if (*type == Type::kStop) return arrow::Status::OK();
  if (*type > Type::kStruct) return Malformed("an unknown field type");
  const int delta = byte >> 4;
  if (delta != 0) {
    *id = static_cast<int16_t>(*last_id + delta);
  } else {
    int64_t explicit_id;
    ARROW_RETURN_NOT_OK(ReadInt(&explicit_id));
    if (explicit_id < INT16_MIN || explicit_id > INT16_MAX) return Malformed("a field id");
    *id = static_cast<int16_t>(explicit_id);
  }
  *last_id = *id;
  return arrow::Status::OK();
}

arrow::Status CompactReader::ReadListHeader(int64_t* size, Type* element) {
  uint8_t byte;
  ARROW_RETURN_NOT_OK(ReadByte(&byte));
  *element = static_cast<Type>(byte & 0x0f);
  if (*element == Type::kStop || *element > Type::kStruct) {
    return Malformed("an unknown element type");
  }
  uint64_t count = byte >> 4;
  if (count == 15) ARROW_RETURN_NOT_OK(ReadVarint(&count));
  // Every element takes at least one byte: a longer list cannot fit in what is left.
  if (count > Left()) return Malformed("a list longer than the bytes left");
  *size = static_cast<int64_t>(count);
  return arrow::Status::OK();
}

arrow::Status CompactReader::ReadBinary(std::string_view* value) {
  uint64_t length;
  ARROW_RETURN_NOT_OK(ReadVarint(&length));
  if (length > Left()) return Malformed("a string longer than the bytes left");
  *value = bytes_.substr(static_cast<size_t>(pos_), length);
  pos_ += static_cast<int64_t>(length);
  return arrow::Status::OK();
}

arrow::Status CompactReader::Skip(Type type, bool in_container, int depth) {
  if (depth > kMaxDepth) return Malformed("nesting too deep");
  uint8_t byte;
  int64_t integer;
  std::string_view binary;
  switch (type) {
    case Type::kTrue:
    case Type::kFalse:
      return in_container ? ReadByte(&byte) : arrow::Status::OK();
    case Type::kByte:
      return ReadByte(&byte);
    case Type::kI16:
    case Type::kI32:
    case Type::kI64:
      return ReadInt(&integer);
    case Type::kDouble:
      if (Left() < 8) return Malformed("truncated");
      pos_ += 8;
      return arrow::Status::OK();
    case Type::kBinary:
      return ReadBinary(&binary);
    case Type::kList:
    case Type::kSet: {
      int64_t size;
      Type element;
      ARROW_RETURN_NOT_OK(ReadListHeader(&size, &element));
      for (int64_t i = 0; i < size; ++i) ARROW_RETURN_NOT_OK(Skip(element, true, depth + 1));
      return arrow::Status::OK();
    }
    case Type::kMap: {
      uint64_t size;
      ARROW_RETURN_NOT_OK(ReadVarint(&size));
      if (size == 0) return arrow::Status::OK();
      if (size > Left()) return Malformed("a map longer than the bytes left");
      ARROW_RETURN_NOT_OK(ReadByte(&byte));
      const auto key = static_cast<Type>(byte >> 4);
      const auto value = static_cast<Type>(byte & 0x0f);
      if (key == Type::kStop || key > Type::kStruct || value == Type::kStop ||
          value > Type::kStruct) {
        return Malformed("an unknown map element type");
      }
      for (uint64_t i = 0; i < size; ++i) {
        ARROW_RETURN_NOT_OK(Skip(key, true, depth + 1));
        ARROW_RETURN_NOT_OK(Skip(value, true, depth + 1));
      }
      return arrow::Status::OK();
    }
    case Type::kStruct: {
      int16_t last_id = 0, id;
      Type field;
      while (true) {
        ARROW_RETURN_NOT_OK(ReadFieldHeader(&last_id, &id, &field));
        if (field == Type::kStop) return arrow::Status::OK();
        ARROW_RETURN_NOT_OK(Skip(field, false, depth + 1));
      }
    }
    case Type::kStop:
      break;
  }
  return Malformed("an unknown type");
}

void CompactWriter::Varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void CompactWriter::Int(int64_t value) { Varint(Zigzag(value)); }

void CompactWriter::FieldHeader(int16_t id, Type type) {
  const int delta = id - last_id_;
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>((delta << 4) | static_cast<int>(type)));
  } else {
    out_.push_back(static_cast<char>(type));
    Int(id);
  }
  last_id_ = id;
}

void CompactWriter::ListHeader(int64_t size, Type element) {
  if (size < 15) {
    out_.push_back(static_cast<char>((size << 4) | static_cast<int>(element)));
  } else {
    out_.push_back(static_cast<char>(0xf0 | static_cast<int>(element)));
    Varint(static_cast<uint64_t>(size));
  }
}

}  // namespace stoker::thrift
