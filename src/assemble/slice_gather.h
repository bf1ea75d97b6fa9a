// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace stoker {

/// Rows [offset, offset + length) of `batch`.
struct BatchSlice {
  std::shared_ptr<arrow::RecordBatch> batch;
  int64_t offset = 0;
  int64_t length = 0;
};

/// One allocation from `pool` cut into a mutable buffer per column: column c gets
/// rows * row_bytes[c] bytes (a null buffer where row_bytes[c] is 0), each at a 64-byte
/// aligned start and a cache line past the column before: columns a power of two apart (4,096
/// rows of 8 bytes) would map to the same cache sets, and a scatter that writes a row of
/// every column at once took twice as long into them.
arrow::Result<std::vector<std::shared_ptr<arrow::Buffer>>> AllocateColumns(
    int64_t rows, const std::vector<int64_t>& row_bytes, arrow::MemoryPool* pool);

/// One batch holding the slices' rows in order (a mixture's batch from its sources' batches):
/// column i of the result concatenates column i of every slice, into buffers from `pool`
/// (one copy of each value; the slices are left as they are). Every slice's batch must have
/// `schema`'s column types in `schema`'s order; an error names the first column that does
/// not.
///
/// `into`, when given, holds for each column a buffer for its values (null: none): a column
/// copied as runs of fixed-width values (no nulls in any slice) goes into it when it is the
/// size the rows take, and a slice whose values already lie where they belong in it (a
/// mixture source's engine wrote them there) is not copied at all.
arrow::Result<std::shared_ptr<arrow::RecordBatch>> GatherSlices(
    const std::vector<BatchSlice>& slices, const std::shared_ptr<arrow::Schema>& schema,
    arrow::MemoryPool* pool, const std::vector<std::shared_ptr<arrow::Buffer>>* into = nullptr);

}  // namespace stoker
