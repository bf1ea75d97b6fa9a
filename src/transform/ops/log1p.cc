// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// log1p: a numeric column -> log(1 + x) as float32 (float64 stays float64).
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "log1p";

class Log1p final : public CompiledOp {
 public:
  Log1p(TransformOp op, std::shared_ptr<arrow::DataType> to)
      : CompiledOp(std::move(op)), to_(std::move(to)) {}

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    ARROW_ASSIGN_OR_RAISE(x, CastArray(x, to_, exec));
    ARROW_ASSIGN_OR_RAISE(x, CallArrayFunction("log1p", {x}, nullptr, exec));
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::DataType> to_;  // the float type it computes in
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kNumbers));
  auto& type = step->columns.values[i];
  type = FloatFor(*type);
  return std::make_unique<Log1p>(op, type);
}

constexpr OpParam kParams[] = {{"column", true}};

}  // namespace

extern constinit const OpDescriptor kLog1pOp{TransformKind::kLog1p, kName, kParams, &Compile};

}  // namespace stoker
