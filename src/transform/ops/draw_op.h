// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/row_draws.h"

namespace stoker {

class CanonicalWriter;

/// What the ops that draw random numbers share (bernoulli_mask, uniform, randint, dropout):
/// they say so (the spec runs them per epoch, after the disk cache), draw from RowDraws keyed
/// by each row's id, and write their `key` to the canonical form.
class DrawingOp : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;
  bool draws() const final { return true; }

 protected:
  /// The row id each row draws from: its position in the dataset, or its `key` column value.
  arrow::Result<std::vector<uint64_t>> Ids(const ArrayColumns& columns,
                                           const DrawContext& draws) const {
    return RowIds(columns, op().key, draws);
  }
  /// Writes the `key` column ("" for the row position); every drawing op ends its params so.
  void WriteKey(CanonicalWriter* w) const;
  /// Appends `values` as the op's new column, after every other.
  void AddColumn(ArrayColumns* columns, std::shared_ptr<arrow::Array> values) const;
};

/// Compile checks of an op that adds a column: `op.columns[0]` must not exist at this step,
/// `op.key` (when given) must be an integer column. Adds the new column of `type` to `step`.
arrow::Status AddDrawnColumn(const TransformOp& op, const char* name,
                             std::shared_ptr<arrow::DataType> type, SchemaStep* step);

/// Compile check of `op.key` alone (ops that work in place).
arrow::Status CheckKey(const TransformOp& op, const char* name, const SchemaStep& step);

/// Compile check of a probability: p in [0, 1].
arrow::Status CheckProbability(double p);

}  // namespace stoker
