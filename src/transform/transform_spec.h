// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/transform_options.h"
#include "transform/row_draws.h"

namespace stoker {

class CompiledOp;

/// A validated transform spec: the ops, compiled against the schema they will see.
///
/// Make() checks every op against the columns and types it will meet (a missing column, an
/// op on a type it cannot take, bad parameters, an unreadable vocabulary file are errors that
/// name the op's position, its kind and the column) and computes the output schema. Apply()
/// runs the ops on one decoded row group, in a worker thread.
///
/// Ops that draw random numbers draw anew each epoch, so a unit is transformed in two parts:
/// ApplyBeforeDraws (the ops before the first op that draws: what the disk cache stores, the
/// whole spec when no op draws) and ApplyDraws (that op and all after it, per epoch).
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

  /// Whether some op draws random numbers (then ApplyDraws has work to do).
  bool draws() const { return first_draw_ < steps_.size(); }

  /// Transforms one batch (whose schema is the input schema): every op, drawing from `draws`
  /// (its num_rows and op_index are set here).
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Apply(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool,
      DrawContext draws = {}) const;
  /// The ops before the first that draws: what the disk cache stores.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> ApplyBeforeDraws(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const;
  /// The first op that draws and every op after it, on ApplyBeforeDraws' output; returns
  /// `batch` itself when no op draws.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> ApplyDraws(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool,
      DrawContext draws) const;

 private:
  // Ops [from, to) on `batch`; the output schema when `to` is the end.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> ApplySteps(
      const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool, DrawContext draws,
      size_t from, size_t to) const;

  // An op compiled against the columns it meets, and its place in errors: "transform 3 (log1p)".
  struct Step {
    std::string label;
    std::shared_ptr<const CompiledOp> op;
  };
  std::vector<Step> steps_;
  // The index of the first op that draws; steps_.size() when none does.
  size_t first_draw_ = 0;
  std::shared_ptr<arrow::Schema> input_schema_;
  std::shared_ptr<arrow::Schema> output_schema_;
  std::vector<std::string> ragged_;
  std::string canonical_;
  std::string digest_;
};

}  // namespace stoker
