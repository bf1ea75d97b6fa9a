// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/npy_format.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace stoker {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicSize = 6;

uint32_t ReadLittleEndian(const uint8_t* p, int bytes) {
  uint32_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

// The text after `key` ('descr': ...) in the header dict; npos when missing.
size_t ValueAfter(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return at;
  size_t i = header.find(':', at + key.size());
  if (i == std::string_view::npos) return i;
  ++i;
  while (i < header.size() && header[i] == ' ') ++i;
  return i;
}

arrow::Status Malformed(const std::string& what) {
  return arrow::Status::Invalid("not a valid .npy array: ", what);
}

// numpy's type string ("<f4", "|u1", ">i8") as an Arrow type and whether to swap bytes.
arrow::Status ParseDescr(std::string_view descr, NpyArray* out) {
  if (descr.size() < 3) return Malformed("dtype '" + std::string(descr) + "'");
  const char order = descr[0];
  const char kind = descr[1];
  const std::string_view width = descr.substr(2);
  static const struct {
    char kind;
    std::string_view width;
    const std::shared_ptr<arrow::DataType>& (*type)();
  } kTypes[] = {
      {'i', "1", arrow::int8},    {'i', "2", arrow::int16},   {'i', "4", arrow::int32},
      {'i', "8", arrow::int64},   {'u', "1", arrow::uint8},   {'u', "2", arrow::uint16},
      {'u', "4", arrow::uint32},  {'u', "8", arrow::uint64},  {'f', "2", arrow::float16},
      {'f', "4", arrow::float32}, {'f', "8", arrow::float64},
  };
  for (const auto& t : kTypes) {
    if (t.kind == kind && t.width == width) {
      if (order != '<' && order != '|' && order != '=' && order != '>') break;
      out->type = t.type();
      out->swap_bytes = order == '>' && width != "1";
      return arrow::Status::OK();
    }
  }
  return arrow::Status::TypeError("arrays of numpy dtype '", std::string(descr),
                                  "' cannot be decoded (integers and floats can)");
}

// "(3, 4)", "(3,)", "()" into dimensions.
arrow::Status ParseShape(std::string_view text, std::vector<int64_t>* shape) {
  if (text.empty() || text[0] != '(') return Malformed("shape");
  size_t i = 1;
  while (true) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size()) return Malformed("shape");
    if (text[i] == ')') return arrow::Status::OK();
    int64_t dim = 0;
    int digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (++digits > 15) return Malformed("shape dimension too large");
      dim = dim * 10 + (text[i] - '0');
      ++i;
    }
    if (digits == 0 || shape->size() >= 32) return Malformed("shape");
    shape->push_back(dim);
  }
}

}  // namespace

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

arrow::Result<NpyArray> ParseNpy(const uint8_t* data, int64_t size) {
  if (size < kMagicSize + 4 || std::memcmp(data, kMagic, kMagicSize) != 0) {
    return Malformed("the bytes do not start with the .npy magic");
  }
  const int major = data[6];
  if (major < 1 || major > 3) return Malformed("version " + std::to_string(major));
  const int length_bytes = major == 1 ? 2 : 4;
  const int64_t header_start = 8 + length_bytes;
  if (size < header_start) return Malformed("truncated header");
  const int64_t header_size = ReadLittleEndian(data + 8, length_bytes);
  if (header_size > size - header_start) return Malformed("truncated header");
  const std::string_view header(reinterpret_cast<const char*>(data + header_start),
                                static_cast<size_t>(header_size));

  NpyArray out;
  size_t at = ValueAfter(header, "'descr'");
  if (at == std::string_view::npos || at >= header.size() || header[at] != '\'') {
    return Malformed("no descr (a structured dtype cannot be decoded)");
  }
  const size_t end = header.find('\'', at + 1);
  if (end == std::string_view::npos) return Malformed("descr");
  ARROW_RETURN_NOT_OK(ParseDescr(header.substr(at + 1, end - at - 1), &out));

  at = ValueAfter(header, "'fortran_order'");
  if (at == std::string_view::npos) return Malformed("no fortran_order");
  if (header.substr(at, 4) == "True") {
    out.fortran_order = true;
  } else if (header.substr(at, 5) != "False") {
    return Malformed("fortran_order");
  }

  at = ValueAfter(header, "'shape'");
  if (at == std::string_view::npos) return Malformed("no shape");
  ARROW_RETURN_NOT_OK(ParseShape(header.substr(at), &out.shape));

  // The product of at most 32 dimensions of at most 15 digits may overflow: checked per step
  // against what the bytes can hold.
  const int64_t available = size - header_start - header_size;
  const int width = out.type->byte_width();
  int64_t bytes = width;
  for (int64_t dim : out.shape) {
    if (dim != 0 && bytes > available / dim) {
      return Malformed("shape " + ShapeText(out.shape) + " needs more bytes than the " +
                       std::to_string(available) + " that follow the header");
    }
    bytes *= dim;
  }
  if (bytes != available) {
    return Malformed("shape " + ShapeText(out.shape) + " of " + out.type->ToString() + " needs " +
                     std::to_string(bytes) + " bytes, " + std::to_string(available) +
                     " follow the header");
  }
  out.values = data + header_start + header_size;
  out.num_bytes = bytes;
  return out;
}

void CopyNpyValues(const NpyArray& array, uint8_t* out) {
  const int width = array.type->byte_width();
  const int64_t n = array.num_elements();
  if (!array.fortran_order || array.shape.size() < 2) {
    std::memcpy(out, array.values, static_cast<size_t>(array.num_bytes));
  } else {
    // Row-major index i of element (i_0, ..., i_k) is read from the column-major offset
    // sum(i_j * stride_j), stride_j = prod(shape[0..j)); the multi-index counts up like an
    // odometer, last dimension fastest.
    const size_t dims = array.shape.size();
    std::vector<int64_t> stride(dims), index(dims, 0);
    int64_t s = 1;
    for (size_t j = 0; j < dims; ++j) {
      stride[j] = s;
      s *= array.shape[j];
    }
    int64_t from = 0;
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(out + i * width, array.values + from * width, width);
      for (size_t j = dims; j-- > 0;) {
        if (++index[j] < array.shape[j]) {
          from += stride[j];
          break;
        }
        from -= stride[j] * (array.shape[j] - 1);
        index[j] = 0;
      }
    }
  }
  if (array.swap_bytes) {
    for (int64_t i = 0; i < n; ++i) std::reverse(out + i * width, out + (i + 1) * width);
  }
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += shape[i] < 0 ? "None" : std::to_string(shape[i]);
    if (i + 1 < shape.size() || shape.size() == 1) out += ",";
    if (i + 1 < shape.size()) out += " ";
  }
  return out + ")";
}

}  // namespace stoker
