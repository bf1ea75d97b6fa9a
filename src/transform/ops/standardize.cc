// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// standardize: a numeric column -> (x - mean) / std, computed in float32 (float64 stays
// float64).
#include <cmath>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "standardize";

class Standardize final : public CompiledOp {
 public:
  Standardize(TransformOp op, std::shared_ptr<arrow::DataType> to,
              std::shared_ptr<arrow::Scalar> mean, std::shared_ptr<arrow::Scalar> std_dev)
      : CompiledOp(std::move(op)),
        to_(std::move(to)),
        mean_(std::move(mean)),
        std_dev_(std::move(std_dev)) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("mean", op().mean);
    w->Field("std", op().std);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    ARROW_ASSIGN_OR_RAISE(x, CastArray(x, to_, exec));
    ARROW_ASSIGN_OR_RAISE(x, CallArrayFunction("subtract", {x, mean_}, nullptr, exec));
    ARROW_ASSIGN_OR_RAISE(x, CallArrayFunction("divide", {x, std_dev_}, nullptr, exec));
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::DataType> to_;            // the float type it computes in
  std::shared_ptr<arrow::Scalar> mean_, std_dev_;  // in that type
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kNumbers));
  auto to = FloatFor(*step->columns.values[i]);
  if (!(op.std > 0) || !std::isfinite(op.std) || !std::isfinite(op.mean)) {
    return arrow::Status::Invalid("needs a finite mean and std > 0, got mean ", op.mean, ", std ",
                                  op.std);
  }
  ARROW_ASSIGN_OR_RAISE(auto mean, CastScalar(arrow::MakeScalar(op.mean), to));
  ARROW_ASSIGN_OR_RAISE(auto std_dev, CastScalar(arrow::MakeScalar(op.std), to));
  step->columns.values[i] = to;
  return std::make_unique<Standardize>(op, std::move(to), std::move(mean), std::move(std_dev));
}

constexpr OpParam kParams[] = {{"column", true}, {"mean", true}, {"std", true}};

}  // namespace

extern constinit const OpDescriptor kStandardizeOp{TransformKind::kStandardize, kName, kParams,
                                                   &Compile};

}  // namespace stoker
