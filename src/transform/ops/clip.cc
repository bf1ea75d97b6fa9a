// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// clip: a numeric column -> min(max(x, min), max); either bound may be infinite (absent).
#include <arrow/compute/api_scalar.h>

#include <cmath>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "clip";

class Clip final : public CompiledOp {
 public:
  Clip(TransformOp op, std::shared_ptr<arrow::Scalar> low, std::shared_ptr<arrow::Scalar> high)
      : CompiledOp(std::move(op)), low_(std::move(low)), high_(std::move(high)) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("min", op().low);
    w->Field("max", op().high);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    const arrow::compute::ElementWiseAggregateOptions keep_nulls(/*skip_nulls=*/false);
    if (low_) {
      ARROW_ASSIGN_OR_RAISE(x, CallArrayFunction("max_element_wise", {x, low_}, &keep_nulls, exec));
    }
    if (high_) {
      ARROW_ASSIGN_OR_RAISE(x,
                            CallArrayFunction("min_element_wise", {x, high_}, &keep_nulls, exec));
    }
    return arrow::Status::OK();
  }

 private:
  // The finite bounds in the column's type; null for an infinite one.
  std::shared_ptr<arrow::Scalar> low_, high_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kNumbers));
  const auto& type = step->columns.values[i];
  if (std::isnan(op.low) || std::isnan(op.high) || op.low > op.high) {
    return arrow::Status::Invalid("needs min <= max, got min ", op.low, ", max ", op.high);
  }
  std::shared_ptr<arrow::Scalar> low, high;
  if (std::isfinite(op.low)) {
    ARROW_ASSIGN_OR_RAISE(low, Representable(op.low, type, "min"));
  }
  if (std::isfinite(op.high)) {
    ARROW_ASSIGN_OR_RAISE(high, Representable(op.high, type, "max"));
  }
  return std::make_unique<Clip>(op, std::move(low), std::move(high));
}

constexpr OpParam kParams[] = {{"column", true}, {"min", false}, {"max", false}};

}  // namespace

extern constinit const OpDescriptor kClipOp{TransformKind::kClip, kName, kParams, &Compile};

}  // namespace stoker
