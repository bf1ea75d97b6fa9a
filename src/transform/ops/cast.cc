// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// cast: column -> dtype, a safe cast (overflow and truncation are errors at apply).
#include <arrow/compute/cast.h>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "cast";

class Cast final : public CompiledOp {
 public:
  Cast(TransformOp op, std::shared_ptr<arrow::DataType> to)
      : CompiledOp(std::move(op)), to_(std::move(to)) {}

  void WriteParams(CanonicalWriter* w) const override { w->Field("dtype", op().dtype); }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    ARROW_ASSIGN_OR_RAISE(x, CastArray(x, to_, exec));
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::DataType> to_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  const std::string& name = op.columns[0];
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(name));
  ARROW_ASSIGN_OR_RAISE(auto to, ParseDtype(op.dtype));
  if (!arrow::compute::CanCast(*step->columns.values[i], *to)) {
    return WrongType(kName, name, *step->columns.values[i], "a type castable to " + op.dtype);
  }
  step->columns.values[i] = to;
  return std::make_unique<Cast>(op, std::move(to));
}

constexpr OpParam kParams[] = {{"column", true}, {"dtype", true}};

}  // namespace

extern constinit const OpDescriptor kCastOp{TransformKind::kCast, kName, kParams, &Compile};

}  // namespace stoker
