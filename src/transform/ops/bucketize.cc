// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// bucketize: a numeric column -> int32 index i with boundaries[i-1] <= x < boundaries[i]
// (NumPy's searchsorted(..., side="right")).
#include <arrow/builder.h>

#include <algorithm>
#include <cmath>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "bucketize";

arrow::Result<std::shared_ptr<arrow::Array>> Bucketize(const std::shared_ptr<arrow::Array>& values,
                                                       const std::vector<double>& boundaries,
                                                       arrow::compute::ExecContext* exec) {
  ARROW_ASSIGN_OR_RAISE(auto doubles, CastArray(values, arrow::float64(), exec));
  const auto& x = static_cast<const arrow::DoubleArray&>(*doubles);
  arrow::Int32Builder builder(exec->memory_pool());
  ARROW_RETURN_NOT_OK(builder.Reserve(x.length()));
  for (int64_t i = 0; i < x.length(); ++i) {
    if (x.IsNull(i)) {
      builder.UnsafeAppendNull();
      continue;
    }
    const auto it = std::upper_bound(boundaries.begin(), boundaries.end(), x.Value(i));
    builder.UnsafeAppend(static_cast<int32_t>(it - boundaries.begin()));
  }
  return builder.Finish();
}

class BucketizeOp final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  void WriteParams(CanonicalWriter* w) const override { w->Field("boundaries", op().boundaries); }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    ARROW_ASSIGN_OR_RAISE(x, Bucketize(x, op().boundaries, exec));
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(op.columns[0], kName, kNumbers));
  if (op.boundaries.empty()) return arrow::Status::Invalid("needs at least one boundary");
  for (size_t k = 0; k < op.boundaries.size(); ++k) {
    if (std::isnan(op.boundaries[k]) || (k > 0 && op.boundaries[k] <= op.boundaries[k - 1])) {
      return arrow::Status::Invalid("boundaries must be strictly increasing numbers (position ", k,
                                    ")");
    }
  }
  step->columns.values[i] = arrow::int32();
  return std::make_unique<BucketizeOp>(op);
}

constexpr OpParam kParams[] = {{"column", true}, {"boundaries", true}};

}  // namespace

extern constinit const OpDescriptor kBucketizeOp{TransformKind::kBucketize, kName, kParams,
                                                 &Compile};

}  // namespace stoker
