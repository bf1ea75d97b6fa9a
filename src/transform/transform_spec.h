// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/transform_options.h"

namespace stoker {

class CompiledOp;

/// A validated transform spec: the ops, compiled against the schema they will see.
///
/// Make() checks every op against the columns and types it will meet (a missing column, an
/// op on a type it cannot take, bad parameters, an unreadable vocabulary file are errors that
/// name the op's position, its kind and the column) and computes the output schema. Apply()
/// runs the ops on one decoded row group, in a worker thread.
class TransformSpec {
 public:
  static arrow::Result<std::shared_ptr<TransformSpec>> Make(
      std::vector<TransformOp> ops, const std::shared_ptr<arrow::Schema>& input_schema);

  /// Columns of the transformed batches.
  const std::shared_ptr<arrow::Schema>& output_schema() const { return output_schema_; }
  /// Output columns that reach tensors as values + offsets (ragged ops).
  const std::vector<std::string>& ragged_columns() const { return ragged_; }
  /// Input columns no op touches (they pass through unchanged).
  std::vector<std::string> UntouchedColumns() const;
  /// A canonical text form: the same spec always serializes the same way; vocabulary files
  /// are named by the digest of their content.
  const std::string& canonical() const { return canonical_; }
  /// 32 hex digits of the canonical form's digest ("" spec: the empty spec's digest).
  const std::string& digest() const { return digest_; }

  /// Transforms one batch (whose schema is the input schema).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const;

 private:
  // An op compiled against the columns it meets, and its place in errors: "transform 3 (log1p)".
  struct Step {
    std::string label;
    std::shared_ptr<const CompiledOp> op;
  };
  std::vector<Step> steps_;
  std::shared_ptr<arrow::Schema> input_schema_;
  std::shared_ptr<arrow::Schema> output_schema_;
  std::vector<std::string> ragged_;
  std::string canonical_;
  std::string digest_;
};

}  // namespace stoker
