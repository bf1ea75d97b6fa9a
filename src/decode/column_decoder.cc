// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/column_decoder.h"

#include <arrow/array.h>
#include <arrow/buffer_builder.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string_view>

#include "decode/image_decode.h"
#include "decode/npy_format.h"
#include "decode/npz_archive.h"
#include "stoker/error.h"
#include "transform/ops/schema_step.h"
#include "util/digest.h"

namespace stoker {

namespace {

// The most bytes one value may decode to (a known shape must fit it; one with an unknown
// dimension is checked value by value): what a corrupt header or a decompression bomb can
// make a worker allocate.
constexpr int64_t kMaxValueBytes = int64_t{1} << 30;
// Room for the .npy header inside a compressed array on top of its values.
constexpr int64_t kNpyHeaderSlack = int64_t{1} << 20;
// The member np.savez_compressed(arr=...) writes.
constexpr char kNpzMember[] = "arr.npy";

// Where a decoded value goes: checks its dtype and shape, then gives the address for its
// values (num_bytes of them).
using ValueTarget = std::function<arrow::Result<uint8_t*>(
    const arrow::DataType& type, const std::vector<int64_t>& shape, int64_t num_bytes)>;

arrow::Status DecodeNpyInto(const uint8_t* data, int64_t size, const ValueTarget& target) {
  ARROW_ASSIGN_OR_RAISE(const NpyArray array, ParseNpy(data, size));
  ARROW_ASSIGN_OR_RAISE(uint8_t * out, target(*array.type, array.shape, array.num_bytes));
  CopyNpyValues(array, out);
  return arrow::Status::OK();
}

arrow::Status DecodeImageInto(ValueCodec codec, const uint8_t* data, int64_t size,
                              const ValueTarget& target) {
  const ImageTarget image_target = [&](const ImageSize& image, arrow::Status* error) -> uint8_t* {
    std::vector<int64_t> shape{image.height, image.width};
    if (image.channels != 1) shape.push_back(image.channels);
    auto out = target(*arrow::uint8(), shape, image.height * image.width * image.channels);
    if (!out.ok()) {
      *error = out.status();
      return nullptr;
    }
    return *out;
  };
  return codec == ValueCodec::kPng ? DecodePng(data, size, image_target)
                                   : DecodeJpeg(data, size, image_target);
}

// Whether a decoded shape fits the declared one (-1 matches any size).
bool ShapeFits(const std::vector<int64_t>& decoded, const std::vector<int64_t>& declared) {
  if (decoded.size() != declared.size()) return false;
  for (size_t i = 0; i < decoded.size(); ++i) {
    if (declared[i] >= 0 && declared[i] != decoded[i]) return false;
  }
  return true;
}

bool IsBinary(const arrow::DataType& type) {
  return type.id() == arrow::Type::BINARY || type.id() == arrow::Type::LARGE_BINARY;
}

std::string_view ValueView(const arrow::Array& array, int64_t i) {
  if (array.type_id() == arrow::Type::LARGE_BINARY) {
    return static_cast<const arrow::LargeBinaryArray&>(array).GetView(i);
  }
  return static_cast<const arrow::BinaryArray&>(array).GetView(i);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CopyValidity(const arrow::Array& array,
                                                           arrow::MemoryPool* pool) {
  if (array.null_count() == 0) return nullptr;
  return arrow::internal::CopyBitmap(pool, array.null_bitmap_data(), array.offset(),
                                     array.length());
}

arrow::Status CheckCodec(const ColumnCodec& codec, const arrow::Schema& input,
                         std::shared_ptr<arrow::DataType>* value_type) {
  const auto field = input.GetFieldByName(codec.column);
  if (field == nullptr) {
    return arrow::Status::KeyError("column '", codec.column, "' is not among the columns read");
  }
  if (!IsBinary(*field->type())) {
    return arrow::Status::TypeError("column '", codec.column, "' has type ",
                                    field->type()->ToString(), "; a ", ValueCodecName(codec.codec),
                                    " codec decodes binary values");
  }
  ARROW_ASSIGN_OR_RAISE(*value_type, ParseDtype(codec.dtype));
  if ((*value_type)->id() == arrow::Type::BOOL) {
    return arrow::Status::NotImplemented("column '", codec.column,
                                         "': arrays of bool cannot be decoded yet");
  }
  // A value of the declared shape must fit the per-value bound (and each size an Arrow
  // fixed-size list), checked step by step so the product cannot overflow.
  int64_t bytes = (*value_type)->byte_width();
  for (int64_t dim : codec.shape) {
    if (dim < -1 || dim == 0 || dim > std::numeric_limits<int32_t>::max()) {
      return arrow::Status::Invalid("column '", codec.column, "': shape ", ShapeText(codec.shape),
                                    " has a dimension that is neither a size from 1 to 2**31-1 "
                                    "nor unknown");
    }
    if (dim > 0 && bytes > kMaxValueBytes / dim) {
      return arrow::Status::Invalid("column '", codec.column, "': a value of shape ",
                                    ShapeText(codec.shape), " would hold more than the ",
                                    kMaxValueBytes, " bytes one value may decode to");
    }
    if (dim > 0) bytes *= dim;
  }
  const bool image = codec.codec == ValueCodec::kPng || codec.codec == ValueCodec::kJpeg;
  if (image && ((*value_type)->id() != arrow::Type::UINT8 ||
                (codec.shape.size() != 2 && codec.shape.size() != 3) ||
                (codec.shape.size() == 3 && codec.shape[2] != 3 && codec.shape[2] != -1))) {
    return arrow::Status::Invalid("column '", codec.column, "': a ", ValueCodecName(codec.codec),
                                  " image decodes to uint8 of shape (H, W) or (H, W, 3), not ",
                                  codec.dtype, " of shape ", ShapeText(codec.shape));
  }
  return arrow::Status::OK();
}

// Checks what one value decodes to (its dtype, shape and size) against the codec's
// declaration and the most bytes a value may take.
arrow::Status CheckValue(const ColumnCodec& codec, const arrow::DataType& value_type,
                         int64_t max_bytes, const arrow::DataType& type,
                         const std::vector<int64_t>& shape, int64_t num_bytes) {
  if (!type.Equals(value_type)) {
    return arrow::Status::Invalid("decodes to dtype ", type.ToString(), " where ",
                                  value_type.ToString(), " (", codec.dtype, ") is declared");
  }
  if (!ShapeFits(shape, codec.shape)) {
    return arrow::Status::Invalid("decodes to shape ", ShapeText(shape), " where ",
                                  ShapeText(codec.shape), " is declared");
  }
  if (num_bytes > max_bytes) {
    return arrow::Status::Invalid("decodes to ", num_bytes, " bytes, more than the ", max_bytes,
                                  " allowed");
  }
  return arrow::Status::OK();
}

// Decodes one encoded value into `target`; a compressed array's .npy member may hold at
// most `max_encoded` bytes.
arrow::Status DecodeValue(ValueCodec codec, std::string_view bytes, int64_t max_encoded,
                          const ValueTarget& target) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto size = static_cast<int64_t>(bytes.size());
  switch (codec) {
    case ValueCodec::kNdarray:
      return DecodeNpyInto(data, size, target);
    case ValueCodec::kCompressedNdarray: {
      ARROW_ASSIGN_OR_RAISE(auto npy, ReadZipMember(data, size, kNpzMember, max_encoded));
      return DecodeNpyInto(npy.data(), static_cast<int64_t>(npy.size()), target);
    }
    case ValueCodec::kPng:
    case ValueCodec::kJpeg:
      return DecodeImageInto(codec, data, size, target);
  }
  return arrow::Status::OK();
}

// Appends the offsets of one row of `shape` to the list levels: one per dimension, the
// levels of the dimensions `declared` as -1 (unknown) filled.
arrow::Status AppendOffsets(const std::vector<int64_t>& declared, const std::vector<int64_t>& shape,
                            std::vector<arrow::TypedBufferBuilder<int32_t>>* offsets) {
  int64_t entries = 1;  // elements of the level above, for this row
  for (size_t d = 0; d < declared.size(); ++d) {
    if (declared[d] < 0) {
      auto& level = (*offsets)[d];
      int32_t last = level.data()[level.length() - 1];
      for (int64_t e = 0; e < entries; ++e) {
        if (last > std::numeric_limits<int32_t>::max() - shape[d]) {
          return arrow::Status::Invalid("the row group's values exceed 2**31 elements");
        }
        last += static_cast<int32_t>(shape[d]);
        ARROW_RETURN_NOT_OK(level.Append(last));
      }
    }
    entries *= shape[d];
  }
  return arrow::Status::OK();
}

// The decoded column when every dimension of `shape` is known: `rows` values of
// `value_type` (a scalar), else nested fixed-size lists from the innermost level out over
// `values`; only the outermost level carries the nulls.
std::shared_ptr<arrow::Array> NestFixedLevels(const std::shared_ptr<arrow::DataType>& value_type,
                                              const std::vector<int64_t>& shape, int64_t rows,
                                              std::shared_ptr<arrow::Buffer> values,
                                              std::shared_ptr<arrow::Buffer> validity,
                                              int64_t null_count) {
  if (shape.empty()) {
    return arrow::MakeArray(arrow::ArrayData::Make(
        value_type, rows, {std::move(validity), std::move(values)}, null_count));
  }
  int64_t length = rows;
  for (int64_t dim : shape) length *= dim;
  auto level = arrow::ArrayData::Make(value_type, length, {nullptr, std::move(values)}, 0);
  auto type = value_type;
  for (size_t d = shape.size(); d-- > 0;) {
    length /= shape[d];
    type = arrow::fixed_size_list(type, static_cast<int32_t>(shape[d]));
    const bool outermost = d == 0;
    level = arrow::ArrayData::Make(type, length, {outermost ? validity : nullptr}, {level},
                                   outermost ? null_count : 0);
  }
  return arrow::MakeArray(level);
}

// The decoded column when a dimension of `shape` is unknown (-1): over the appended
// `values`, a list level (with its `offsets`) per unknown dimension and a fixed-size list
// level per known one, from the innermost out; only the outermost carries the nulls.
arrow::Result<std::shared_ptr<arrow::Array>> NestListLevels(
    const std::shared_ptr<arrow::DataType>& value_type, const std::vector<int64_t>& shape,
    std::shared_ptr<arrow::Buffer> values, std::vector<arrow::TypedBufferBuilder<int32_t>>* offsets,
    std::shared_ptr<arrow::Buffer> validity, int64_t null_count) {
  const int64_t num_values = values->size() / value_type->byte_width();
  auto level = arrow::ArrayData::Make(value_type, num_values, {nullptr, std::move(values)}, 0);
  auto type = value_type;
  for (size_t d = shape.size(); d-- > 0;) {
    const bool outermost = d == 0;
    std::shared_ptr<arrow::Buffer> nulls = outermost ? validity : nullptr;
    if (shape[d] < 0) {
      type = arrow::list(type);
      const int64_t length = (*offsets)[d].length() - 1;
      ARROW_ASSIGN_OR_RAISE(auto offset_buffer, (*offsets)[d].Finish());
      level = arrow::ArrayData::Make(type, length, {nulls, offset_buffer}, {level},
                                     outermost ? null_count : 0);
    } else {
      type = arrow::fixed_size_list(type, static_cast<int32_t>(shape[d]));
      level = arrow::ArrayData::Make(type, level->length / shape[d], {nulls}, {level},
                                     outermost ? null_count : 0);
    }
  }
  return arrow::MakeArray(level);
}

}  // namespace

arrow::Result<std::shared_ptr<const ColumnDecoder>> ColumnDecoder::Make(
    std::vector<ColumnCodec> codecs, const arrow::Schema& input) {
  std::shared_ptr<ColumnDecoder> decoder(new ColumnDecoder());
  Digest digest;
  std::set<std::string> seen;
  arrow::FieldVector fields = input.fields();
  for (auto& codec : codecs) {
    Column column;
    ARROW_RETURN_NOT_OK(WithContext(CheckCodec(codec, input, &column.value_type), "codecs"));
    if (!seen.insert(codec.column).second) {
      return arrow::Status::Invalid("codecs: column '", codec.column, "' is given twice");
    }
    column.elements = 1;
    column.output_type = column.value_type;
    for (auto dim = codec.shape.rbegin(); dim != codec.shape.rend(); ++dim) {
      if (*dim < 0) {
        column.elements = -1;
        column.output_type = arrow::list(column.output_type);
      } else {
        column.elements *= *dim;
        column.output_type = arrow::fixed_size_list(column.output_type, static_cast<int32_t>(*dim));
      }
    }
    if (column.elements < 0) column.elements = -1;
    const int i = input.GetFieldIndex(codec.column);
    fields[i] = fields[i]->WithType(column.output_type);
    digest.Add(codec.column);
    digest.Add(ValueCodecName(codec.codec));
    digest.Add(codec.dtype);
    for (int64_t dim : codec.shape) digest.Add(static_cast<uint64_t>(dim));
    digest.Add(std::string_view("|"));
    column.codec = std::move(codec);
    decoder->codecs_.push_back(std::move(column));
  }
  decoder->output_schema_ = arrow::schema(std::move(fields), input.metadata());
  if (!decoder->codecs_.empty()) decoder->digest_ = digest.Hex();
  return decoder;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ColumnDecoder::Apply(
    std::shared_ptr<arrow::RecordBatch> batch, arrow::MemoryPool* pool) const {
  for (const Column& column : codecs_) {
    const int i = batch->schema()->GetFieldIndex(column.codec.column);
    if (i < 0) continue;  // not read in this pass (e.g. counting a filter's matches)
    auto decoded = DecodeColumn(column, *batch->column(i), pool);
    if (!decoded.ok()) {
      return WithContext(decoded.status(), "decoding column '" + column.codec.column + "' (" +
                                               ValueCodecName(column.codec.codec) + ")");
    }
    const auto field = batch->schema()->field(i)->WithType(column.output_type);
    ARROW_ASSIGN_OR_RAISE(batch, batch->SetColumn(i, field, *decoded));
  }
  return batch;
}

arrow::Result<std::shared_ptr<arrow::Array>> ColumnDecoder::DecodeColumn(
    const Column& column, const arrow::Array& encoded, arrow::MemoryPool* pool) const {
  const ColumnCodec& codec = column.codec;
  const int64_t rows = encoded.length();
  const bool known = column.elements >= 0;
  const int64_t row_bytes = known ? column.elements * column.value_type->byte_width() : 0;
  const int64_t max_bytes = known ? row_bytes : kMaxValueBytes;

  // Every dimension known: rows of row_bytes, in place. Otherwise values are appended and
  // each dimension of unknown size becomes a list level whose offsets record each row's size
  // there, so every row keeps its own shape.
  std::shared_ptr<arrow::Buffer> fixed;
  arrow::BufferBuilder values(pool);
  std::vector<arrow::TypedBufferBuilder<int32_t>> offsets;
  std::vector<int64_t> decoded_shape;
  if (known) {
    ARROW_ASSIGN_OR_RAISE(fixed, arrow::AllocateBuffer(rows * row_bytes, pool));
    if (fixed->size() > 0) std::memset(fixed->mutable_data(), 0, fixed->size());
  } else {
    for (size_t d = 0; d < codec.shape.size(); ++d) {
      offsets.emplace_back(pool);
      ARROW_RETURN_NOT_OK(offsets.back().Append(0));
    }
  }
  int64_t row = 0;
  const ValueTarget target = [&](const arrow::DataType& type, const std::vector<int64_t>& shape,
                                 int64_t num_bytes) -> arrow::Result<uint8_t*> {
    ARROW_RETURN_NOT_OK(CheckValue(codec, *column.value_type, max_bytes, type, shape, num_bytes));
    if (known) return fixed->mutable_data() + row * row_bytes;
    decoded_shape = shape;
    ARROW_RETURN_NOT_OK(values.Reserve(num_bytes));
    uint8_t* out = values.mutable_data() + values.length();
    values.UnsafeAdvance(num_bytes);
    return out;
  };

  const int64_t max_encoded =
      codec.codec == ValueCodec::kCompressedNdarray ? max_bytes + kNpyHeaderSlack : 0;
  for (row = 0; row < rows; ++row) {
    if (!encoded.IsNull(row)) {
      const arrow::Status status =
          DecodeValue(codec.codec, ValueView(encoded, row), max_encoded, target);
      if (!status.ok()) return WithContext(status, "row " + std::to_string(row));
    } else if (!known) {
      // A null row: the declared sizes, 0 for the unknown ones (no values).
      decoded_shape = codec.shape;
      for (int64_t& dim : decoded_shape) dim = std::max<int64_t>(dim, 0);
    }
    if (!known) ARROW_RETURN_NOT_OK(AppendOffsets(codec.shape, decoded_shape, &offsets));
  }

  ARROW_ASSIGN_OR_RAISE(auto validity, CopyValidity(encoded, pool));
  const int64_t null_count = encoded.null_count();
  if (known) {
    return NestFixedLevels(column.value_type, codec.shape, rows, std::move(fixed),
                           std::move(validity), null_count);
  }
  ARROW_ASSIGN_OR_RAISE(auto value_buffer, values.Finish());
  return NestListLevels(column.value_type, codec.shape, std::move(value_buffer), &offsets,
                        std::move(validity), null_count);
}

}  // namespace stoker
