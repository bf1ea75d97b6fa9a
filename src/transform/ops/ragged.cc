// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// ragged: a variable-length list of numbers reaches tensors as its values and
// "<column>_offsets" (the assembler does that; here the column is only checked and marked).
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"

namespace stoker {

namespace {

constexpr char kName[] = "ragged";

class Ragged final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  arrow::Status Apply(ArrayColumns* /*columns*/, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* /*exec*/) const override {
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  const std::string& name = op.columns[0];
  ARROW_RETURN_NOT_OK(step->Require(name, kName, kNumericLists).status());
  step->ragged.push_back(name);
  return std::make_unique<Ragged>(op);
}

constexpr OpParam kParams[] = {{"column", true}};

}  // namespace

extern constinit const OpDescriptor kRaggedOp{TransformKind::kRagged, kName, kParams, &Compile};

}  // namespace stoker
