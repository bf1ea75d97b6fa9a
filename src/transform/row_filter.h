// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <parquet/metadata.h>

#include <memory>
#include <string>
#include <vector>

namespace stoker {

/// A row filter: an Arrow compute expression (from pyarrow.compute), evaluated in the
/// workers. Row groups whose statistics prove that no row can match are skipped unread.
class RowFilter {
 public:
  /// Binds `expression` to the columns read; an unknown field or a non-boolean expression is
  /// an error that names it.
  static arrow::Result<std::shared_ptr<RowFilter>> Make(
      arrow::compute::Expression expression, const std::shared_ptr<arrow::Schema>& schema);

  /// An expression in Arrow's serialized form (arrow::compute::Serialize; what
  /// stoker.Loader(filter=...) hands the engine). Malformed bytes are an error naming the
  /// filter option: Arrow's Deserialize trusts its input, and may throw on it.
  static arrow::Result<arrow::compute::Expression> Deserialize(
      std::shared_ptr<arrow::Buffer> serialized);

  /// Names of the columns the expression reads.
  static arrow::Result<std::vector<std::string>> ColumnsOf(
      const arrow::compute::Expression& expression);

  /// False when the row group's statistics prove that no row matches. `leaves[i]` is the
  /// leaf column of schema field i in this file (-1 when it is not a single leaf).
  bool MayMatch(const parquet::RowGroupMetaData& row_group, const std::vector<int>& leaves) const;

  /// The rows of `batch` for which the expression is true (null counts as false).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const;

  /// Rows of `batch` that match.
  arrow::Result<int64_t> Count(const std::shared_ptr<arrow::RecordBatch>& batch,
                               arrow::MemoryPool* pool) const;

  /// The expression as text, and the digest of its serialized form.
  std::string ToString() const { return bound_.ToString(); }
  const std::string& digest() const { return digest_; }

 private:
  arrow::Result<std::shared_ptr<arrow::Array>> Mask(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const;

  arrow::compute::Expression bound_;
  std::shared_ptr<arrow::Schema> schema_;
  std::string digest_;
};

}  // namespace stoker
