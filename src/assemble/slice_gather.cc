// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/slice_gather.h"

#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/array/util.h>
#include <arrow/buffer.h>

#include <cstring>

#include "assemble/column_types.h"

namespace stoker {

namespace {

constexpr int64_t kAlignment = 64;

arrow::Status CheckSlices(const std::vector<BatchSlice>& slices, const arrow::Schema& schema) {
  for (const BatchSlice& slice : slices) {
    if (slice.batch->num_columns() != schema.num_fields()) {
      return arrow::Status::Invalid("a slice has ", slice.batch->num_columns(),
                                    " columns, the batch ", schema.num_fields());
    }
    if (slice.offset < 0 || slice.length < 0 ||
        slice.offset + slice.length > slice.batch->num_rows()) {
      return arrow::Status::Invalid("slice [", slice.offset, ", ", slice.offset + slice.length,
                                    ") of a batch of ", slice.batch->num_rows(), " rows");
    }
    for (int i = 0; i < schema.num_fields(); ++i) {
      const arrow::DataType& type = *slice.batch->column_data(i)->type;
      if (!type.Equals(*schema.field(i)->type())) {
        return arrow::Status::TypeError("column '", schema.field(i)->name(), "' is ",
                                        type.ToString(), " in a slice, ",
                                        schema.field(i)->type()->ToString(), " in the batch");
      }
    }
  }
  return arrow::Status::OK();
}

// Bytes a row of column i takes when it can be copied as one run of values per slice: a
// primitive fixed-width type without nulls in any slice. 0 when it needs arrow::Concatenate.
int64_t RunWidth(const std::vector<BatchSlice>& slices, int i, const arrow::DataType& type) {
  if (!arrow::is_fixed_width(type.id()) || type.id() == arrow::Type::BOOL ||
      type.num_fields() != 0) {
    return 0;
  }
  const auto layout = GetFixedWidthLayout(type);
  if (!layout.ok()) return 0;
  for (const BatchSlice& slice : slices) {
    if (slice.batch->column_data(i)->GetNullCount() != 0) return 0;
  }
  return layout->row_bytes;
}

// True when every slice's values of column i either lie exactly where they belong in
// `into` (rows in slice order from its start) or outside it altogether.
bool InPlaceOrApart(const std::vector<BatchSlice>& slices, int i, int64_t width,
                    const arrow::Buffer& into) {
  const uint8_t* begin = into.data();
  const uint8_t* end = begin + into.size();
  const uint8_t* out = begin;
  for (const BatchSlice& slice : slices) {
    const uint8_t* from =
        GetFixedWidthValues(*slice.batch->column_data(i)).first + slice.offset * width;
    const int64_t bytes = slice.length * width;
    const bool apart = from + bytes <= begin || from >= end;
    if (bytes > 0 && from != out && !apart) return false;
    out += bytes;
  }
  return true;
}

}  // namespace

arrow::Result<std::vector<std::shared_ptr<arrow::Buffer>>> AllocateColumns(
    int64_t rows, const std::vector<int64_t>& row_bytes, arrow::MemoryPool* pool) {
  std::vector<int64_t> start(row_bytes.size());
  int64_t bytes = 0;
  for (size_t c = 0; c < row_bytes.size(); ++c) {
    if (row_bytes[c] == 0) continue;
    start[c] = bytes;
    bytes += (rows * row_bytes[c] + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  }
  std::vector<std::shared_ptr<arrow::Buffer>> columns(row_bytes.size());
  if (bytes == 0) return columns;
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> arena, arrow::AllocateBuffer(bytes, pool));
  for (size_t c = 0; c < row_bytes.size(); ++c) {
    if (row_bytes[c] > 0) {
      columns[c] = arrow::SliceMutableBuffer(arena, start[c], rows * row_bytes[c]);
    }
  }
  return columns;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> GatherSlices(
    const std::vector<BatchSlice>& slices, const std::shared_ptr<arrow::Schema>& schema,
    arrow::MemoryPool* pool, const std::vector<std::shared_ptr<arrow::Buffer>>* into) {
  ARROW_RETURN_NOT_OK(CheckSlices(slices, *schema));
  int64_t rows = 0;
  for (const BatchSlice& slice : slices) rows += slice.length;
  const int n = schema->num_fields();
  // The run-copied columns share one allocation (one pool call a batch, not one a column:
  // per-column allocations and arrow::Concatenate's generic path measured several times the
  // copy itself on narrow columns), less those `into` holds.
  std::vector<int64_t> width(static_cast<size_t>(n));
  std::vector<int64_t> own_width(static_cast<size_t>(n));
  std::vector<std::shared_ptr<arrow::Buffer>> given(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    width[i] = RunWidth(slices, i, *schema->field(i)->type());
    own_width[i] = width[i];
    if (width[i] > 0 && into != nullptr && static_cast<size_t>(i) < into->size()) {
      const auto& buffer = (*into)[i];
      if (buffer != nullptr && buffer->is_mutable() && buffer->size() == rows * width[i]) {
        given[i] = buffer;
        own_width[i] = 0;
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto own, AllocateColumns(rows, own_width, pool));

  arrow::ArrayDataVector columns;  // not boxed as Arrays: the consumer reads the data
  columns.reserve(static_cast<size_t>(n));
  arrow::ArrayVector pieces;
  for (int i = 0; i < n; ++i) {
    const std::shared_ptr<arrow::DataType>& type = schema->field(i)->type();
    if (width[i] > 0) {
      std::shared_ptr<arrow::Buffer> values = given[i];
      if (values != nullptr && !InPlaceOrApart(slices, i, width[i], *values)) {
        // Some slice lies in `into` but elsewhere than it belongs: copying into `into` could
        // overwrite rows not yet copied, so this column gets a buffer of its own.
        ARROW_ASSIGN_OR_RAISE(values, arrow::AllocateBuffer(rows * width[i], pool));
      }
      if (values == nullptr) values = own[i];
      uint8_t* out = values->mutable_data();
      for (const BatchSlice& slice : slices) {
        const FixedWidthValues in = GetFixedWidthValues(*slice.batch->column_data(i));
        const uint8_t* from = in.first + slice.offset * width[i];
        const int64_t bytes = slice.length * width[i];
        if (bytes > 0 && from != out) std::memcpy(out, from, bytes);
        out += bytes;
      }
      columns.push_back(arrow::ArrayData::Make(type, rows, {nullptr, std::move(values)}, 0));
      continue;
    }
    pieces.clear();
    for (const BatchSlice& slice : slices) {
      if (slice.length > 0)
        pieces.push_back(slice.batch->column(i)->Slice(slice.offset, slice.length));
    }
    std::shared_ptr<arrow::Array> column;
    if (pieces.empty()) {
      ARROW_ASSIGN_OR_RAISE(column, arrow::MakeEmptyArray(type, pool));
    } else {
      ARROW_ASSIGN_OR_RAISE(column, arrow::Concatenate(pieces, pool));
    }
    columns.push_back(column->data());
  }
  return arrow::RecordBatch::Make(schema, rows, std::move(columns));
}

}  // namespace stoker
