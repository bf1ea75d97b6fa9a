// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/flat_column.h"

#include <arrow/array/data.h>
#include <arrow/buffer.h>
#include <parquet/column_reader.h>
#include <parquet/schema.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace stoker {

namespace {

// Values asked of the column reader at a time: its levels and any narrowing stay in L1/L2.
constexpr int64_t kBatchValues = 4096;

// The Arrow type Parquet's Arrow reader gives a flat column of `column`'s physical and
// logical type (before any stored Arrow schema), or NA when it is not a plain number.
arrow::Type::type FlatTypeOf(const parquet::ColumnDescriptor& column) {
  const auto& logical = *column.logical_type();
  const bool plain = logical.is_none();
  auto int_of = [&](int bits, bool is_signed) {
    if (!logical.is_int()) return false;
    const auto& annotated = static_cast<const parquet::IntLogicalType&>(logical);
    return annotated.bit_width() == bits && annotated.is_signed() == is_signed;
  };
  switch (column.physical_type()) {
    case parquet::Type::FLOAT:
      return plain ? arrow::Type::FLOAT : arrow::Type::NA;
    case parquet::Type::DOUBLE:
      return plain ? arrow::Type::DOUBLE : arrow::Type::NA;
    case parquet::Type::INT32:
      if (plain || int_of(32, true)) return arrow::Type::INT32;
      if (int_of(8, true)) return arrow::Type::INT8;
      if (int_of(16, true)) return arrow::Type::INT16;
      if (int_of(8, false)) return arrow::Type::UINT8;
      if (int_of(16, false)) return arrow::Type::UINT16;
      if (int_of(32, false)) return arrow::Type::UINT32;
      return arrow::Type::NA;
    case parquet::Type::INT64:
      if (plain || int_of(64, true)) return arrow::Type::INT64;
      if (int_of(64, false)) return arrow::Type::UINT64;
      return arrow::Type::NA;
    case parquet::Type::FIXED_LEN_BYTE_ARRAY:
      return logical.is_float16() && column.type_length() == 2 ? arrow::Type::HALF_FLOAT
                                                               : arrow::Type::NA;
    default:
      return arrow::Type::NA;
  }
}

// Reads `num_rows` values of `column`: straight into `direct` when given (num_rows values of
// its type), else in batches handed to `store(values, count, first_row)`. False when a value
// is null or the chunk holds other than num_rows values.
template <typename DType, typename Store>
bool ReadValues(parquet::ColumnReader* column, int64_t num_rows, typename DType::c_type* direct,
                Store store) {
  using In = typename DType::c_type;
  auto* reader = static_cast<parquet::TypedColumnReader<DType>*>(column);
  const int16_t max_definition = column->descr()->max_definition_level();
  std::vector<int16_t> definitions(max_definition > 0 ? kBatchValues : 0);
  std::vector<In> scratch(direct != nullptr ? 0 : kBatchValues);
  int64_t done = 0;
  while (done < num_rows && reader->HasNext()) {
    const int64_t wanted = std::min(kBatchValues, num_rows - done);
    In* target = direct != nullptr ? direct + done : scratch.data();
    int64_t values = 0;
    const int64_t levels = reader->ReadBatch(
        wanted, max_definition > 0 ? definitions.data() : nullptr, nullptr, target, &values);
    if (levels == 0) break;
    if (values != levels) return false;  // a null: the Arrow reader places them
    if (direct == nullptr) store(target, values, done);
    done += values;
  }
  return done == num_rows && !reader->HasNext();
}

// Values stored as they are read (float, double, int32, int64).
template <typename DType>
bool ReadDirect(parquet::ColumnReader* column, int64_t num_rows, uint8_t* out) {
  using In = typename DType::c_type;
  return ReadValues<DType>(column, num_rows, reinterpret_cast<In*>(out),
                           [](const In*, int64_t, int64_t) {});
}

// Integers narrowed or made unsigned as the Arrow reader does: a static_cast of each.
template <typename DType, typename Out>
bool ReadCast(parquet::ColumnReader* column, int64_t num_rows, uint8_t* out) {
  using In = typename DType::c_type;
  auto* typed = reinterpret_cast<Out*>(out);
  return ReadValues<DType>(column, num_rows, nullptr,
                           [typed](const In* values, int64_t count, int64_t first) {
                             for (int64_t i = 0; i < count; ++i) {
                               typed[first + i] = static_cast<Out>(values[i]);
                             }
                           });
}

}  // namespace

bool DecodesFlat(const parquet::ColumnDescriptor& column, const arrow::DataType& type) {
  return column.max_repetition_level() == 0 && column.max_definition_level() <= 1 &&
         column.path()->ToDotVector().size() == 1 && FlatTypeOf(column) == type.id();
}

arrow::Result<std::shared_ptr<arrow::ArrayData>> DecodeFlatColumn(
    parquet::RowGroupReader* row_group, int leaf, const std::shared_ptr<arrow::DataType>& type,
    int64_t num_rows, arrow::MemoryPool* pool) {
  const int width = type->byte_width();
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(num_rows * width, pool));
  uint8_t* out = values->mutable_data();
  const std::shared_ptr<parquet::ColumnReader> column = row_group->Column(leaf);
  parquet::ColumnReader* reader = column.get();
  bool read = false;
  switch (type->id()) {
    case arrow::Type::FLOAT:
      read = ReadDirect<parquet::FloatType>(reader, num_rows, out);
      break;
    case arrow::Type::DOUBLE:
      read = ReadDirect<parquet::DoubleType>(reader, num_rows, out);
      break;
    case arrow::Type::INT32:
      read = ReadDirect<parquet::Int32Type>(reader, num_rows, out);
      break;
    case arrow::Type::INT64:
      read = ReadDirect<parquet::Int64Type>(reader, num_rows, out);
      break;
    case arrow::Type::UINT32:
      read = ReadCast<parquet::Int32Type, uint32_t>(reader, num_rows, out);
      break;
    case arrow::Type::INT16:
      read = ReadCast<parquet::Int32Type, int16_t>(reader, num_rows, out);
      break;
    case arrow::Type::UINT16:
      read = ReadCast<parquet::Int32Type, uint16_t>(reader, num_rows, out);
      break;
    case arrow::Type::INT8:
      read = ReadCast<parquet::Int32Type, int8_t>(reader, num_rows, out);
      break;
    case arrow::Type::UINT8:
      read = ReadCast<parquet::Int32Type, uint8_t>(reader, num_rows, out);
      break;
    case arrow::Type::UINT64:
      read = ReadCast<parquet::Int64Type, uint64_t>(reader, num_rows, out);
      break;
    case arrow::Type::HALF_FLOAT:
      // float16 stays two bytes: each value's bytes as the page holds them (little-endian).
      read = ReadValues<parquet::FLBAType>(
          reader, num_rows, nullptr,
          [out](const parquet::FixedLenByteArray* values, int64_t count, int64_t first) {
            for (int64_t i = 0; i < count; ++i)
              std::memcpy(out + (first + i) * 2, values[i].ptr, 2);
          });
      break;
    default:
      break;
  }
  if (!read) return nullptr;
  return arrow::ArrayData::Make(type, num_rows, {nullptr, std::move(values)}, /*null_count=*/0);
}

}  // namespace stoker
