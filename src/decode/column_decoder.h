// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/codec_options.h"

namespace stoker {

/// Decodes the encoded columns of a row group (LoaderOptions::codecs) into tensors: each value
/// of a ColumnCodec's column must decode to its dtype and shape, else the unit fails with an
/// error naming the column, the row and what disagreed. Immutable once made: worker threads
/// share it.
class ColumnDecoder {
 public:
  /// Checks `codecs` against the columns a unit is read with (`input`): each names a binary
  /// column once, a known dtype and a shape its codec can produce. Errors name the column.
  static arrow::Result<std::shared_ptr<const ColumnDecoder>> Make(std::vector<ColumnCodec> codecs,
                                                                  const arrow::Schema& input);

  /// `input` with each encoded column's type replaced by its decoded type.
  const std::shared_ptr<arrow::Schema>& output_schema() const { return output_schema_; }
  /// Digest of the codecs (part of the cache key); empty when there are none, so a loader
  /// without codecs keeps the cache keys it had before codecs existed.
  const std::string& digest() const { return digest_; }
  bool empty() const { return codecs_.empty(); }

  /// Decodes the encoded columns of `batch` (the others pass through); allocates from `pool`.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      std::shared_ptr<arrow::RecordBatch> batch, arrow::MemoryPool* pool) const;

 private:
  struct Column {
    ColumnCodec codec;
    std::shared_ptr<arrow::DataType> value_type;  // the dtype
    std::shared_ptr<arrow::DataType>
        output_type;       // a level per dimension: fixed-size list, or list where unknown
    int64_t elements = 0;  // values per row when every dimension is known; -1 otherwise
  };

  ColumnDecoder() = default;

  arrow::Result<std::shared_ptr<arrow::Array>> DecodeColumn(const Column& column,
                                                            const arrow::Array& encoded,
                                                            arrow::MemoryPool* pool) const;

  std::vector<Column> codecs_;
  std::shared_ptr<arrow::Schema> output_schema_;
  std::string digest_;
};

}  // namespace stoker
