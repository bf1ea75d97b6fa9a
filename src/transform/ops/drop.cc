// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// drop: the named columns are removed.
#include <algorithm>

#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"

namespace stoker {

namespace {

constexpr char kName[] = "drop";

class Drop final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* /*exec*/) const override {
    for (const auto& column : op().columns) columns->Remove(columns->Find(column));
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  for (const auto& column : op.columns) {
    ARROW_ASSIGN_OR_RAISE(int i, step->Require(column));
    step->columns.Remove(i);
    step->ragged.erase(std::remove(step->ragged.begin(), step->ragged.end(), column),
                       step->ragged.end());
  }
  return std::make_unique<Drop>(op);
}

// {"op": "drop", "column": "x"} is accepted for {"op": "drop", "columns": ["x"]}.
constexpr OpParam kParams[] = {{"columns", true, "column"}};

}  // namespace

extern constinit const OpDescriptor kDropOp{TransformKind::kDrop, kName, kParams, &Compile};

}  // namespace stoker
