// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// A flat fixed-width column chunk decoded by Parquet's column reader straight into one Arrow
// buffer, without the Arrow reader's per-file schema (rebuilt for every FileReader, with the
// stored Arrow schema decoded from base64) and per-column record readers: for row groups of
// a few thousand rows those fixed costs, not the values, were most of the decoding.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/type.h>
#include <parquet/file_reader.h>

#include <memory>

namespace stoker {

/// Whether DecodeFlatColumn can decode a column described by `column` as `type`: a top-level
/// column of numbers (int8 to int64, unsigned, float16/32/64) whose Arrow type is the one its
/// Parquet types map to, no more than one definition level and no repetition.
bool DecodesFlat(const parquet::ColumnDescriptor& column, const arrow::DataType& type);

/// Leaf `leaf` of `row_group` (which holds `num_rows` rows) as an array of `type`, its
/// buffer from `pool`; null when the chunk holds a null or other than `num_rows` values, or
/// cannot be read: the caller then decodes it with Parquet's Arrow reader, which says what is
/// wrong. Requires DecodesFlat. May throw parquet::ParquetException (CatchAll it).
arrow::Result<std::shared_ptr<arrow::ArrayData>> DecodeFlatColumn(
    parquet::RowGroupReader* row_group, int leaf, const std::shared_ptr<arrow::DataType>& type,
    int64_t num_rows, arrow::MemoryPool* pool);

}  // namespace stoker
