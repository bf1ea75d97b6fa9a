// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// rename: column -> a new name (a ragged column stays ragged under its new name).
#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"

namespace stoker {

namespace {

constexpr char kName[] = "rename";

class Rename final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  void WriteParams(CanonicalWriter* w) const override { w->Field("to", op().output); }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* /*exec*/) const override {
    columns->names[Position(*columns)] = op().output;
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  const std::string& name = op.columns[0];
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(name));
  if (op.output.empty()) return arrow::Status::Invalid("needs a new name");
  if (step->columns.Find(op.output) >= 0) {
    return arrow::Status::Invalid("'", op.output, "' already exists");
  }
  for (auto& r : step->ragged) {
    if (r == name) r = op.output;
  }
  step->columns.names[i] = op.output;
  return std::make_unique<Rename>(op);
}

// The spec says "to"; TransformOp holds it in `output`.
constexpr OpParam kParams[] = {{"column", true}, {"to", true}};

}  // namespace

extern constinit const OpDescriptor kRenameOp{TransformKind::kRename, kName, kParams, &Compile};

}  // namespace stoker
