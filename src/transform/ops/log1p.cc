// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// log1p: a numeric column -> log(1 + x) as float32 (float64 stays float64), computed by
// PortableLog1p rather than Arrow's kernel, which calls the platform's libm (glibc 2.36 and 2.41
// give different bits).
#include <arrow/array.h>
#include <arrow/buffer.h>
#include <arrow/type_traits.h>

#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/portable_math.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "log1p";

// log1p of each valid value of `x`, an array of ArrowType (float or double); a null's slot
// holds 0, so the values buffer is the same bytes whatever the input held under the null.
template <typename ArrowType>
arrow::Result<std::shared_ptr<arrow::Array>> Log1pOf(const arrow::Array& x,
                                                     arrow::MemoryPool* pool) {
  using T = typename ArrowType::c_type;
  const auto& in = static_cast<const arrow::NumericArray<ArrowType>&>(x);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(x.length() * sizeof(T), pool));
  auto* out = reinterpret_cast<T*>(values->mutable_data());
  for (int64_t i = 0; i < x.length(); ++i) {
    out[i] = in.IsValid(i) ? PortableLog1p(in.Value(i)) : T{0};
  }
  return WithValidityOf(x, x.type(), std::move(values), pool);
}

class Log1p final : public CompiledOp {
 public:
  Log1p(TransformOp op, std::shared_ptr<arrow::DataType> to)
      : CompiledOp(std::move(op)), to_(std::move(to)) {}

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    ARROW_ASSIGN_OR_RAISE(x, CastArray(x, to_, exec));
    if (to_->id() == arrow::Type::DOUBLE) {
      ARROW_ASSIGN_OR_RAISE(x, Log1pOf<arrow::DoubleType>(*x, exec->memory_pool()));
    } else {
      ARROW_ASSIGN_OR_RAISE(x, Log1pOf<arrow::FloatType>(*x, exec->memory_pool()));
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::DataType> to_;  // the float type it computes in: float32 or float64
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
