// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// fill_null: nulls of a column -> a value (a number for numbers and bool, text for strings).
#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "fill_null";

class FillNull final : public CompiledOp {
 public:
  FillNull(TransformOp op, std::shared_ptr<arrow::Scalar> fill)
      : CompiledOp(std::move(op)), fill_(std::move(fill)) {}

  void WriteParams(CanonicalWriter* w) const override {
    if (op().is_text) {
      w->Field("value", op().text);
    } else {
      w->Field("value", op().number);
    }
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    auto& x = Column(columns);
    if (x->null_count() > 0) {
      ARROW_ASSIGN_OR_RAISE(x, CallArrayFunction("coalesce", {x, fill_}, nullptr, exec));
    }
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::Scalar> fill_;  // the value, in the column's type
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  const std::string& name = op.columns[0];
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(name));
  const auto& type = step->columns.values[i];
  std::shared_ptr<arrow::Scalar> fill;
  if (op.is_text) {
    if (!IsText(*type)) return WrongType(kName, name, *type, "a number here (the value is text)");
    ARROW_ASSIGN_OR_RAISE(fill, CastScalar(arrow::MakeScalar(op.text), type));
  } else if (IsNumberOrBool(*type)) {
    ARROW_ASSIGN_OR_RAISE(fill, Representable(op.number, type, "fill value"));
  } else {
    return WrongType(kName, name, *type, "numbers, bool or strings");
  }
  return std::make_unique<FillNull>(op, std::move(fill));
}

constexpr OpParam kParams[] = {{"column", true}, {"value", true}};

}  // namespace

extern constinit const OpDescriptor kFillNullOp{TransformKind::kFillNull, kName, kParams, &Compile};

}  // namespace stoker
