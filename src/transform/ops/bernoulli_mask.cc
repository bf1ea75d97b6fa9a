// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// bernoulli_mask: a new column, true (1) with probability p for each row, false (0) otherwise;
// bool, or int8 with dtype "int8". Drawn per epoch from the row's id (draw 0).
#include <arrow/builder.h>

#include "transform/canonical_writer.h"
#include "transform/ops/draw_op.h"

namespace stoker {

namespace {

constexpr char kName[] = "bernoulli_mask";

class BernoulliMask final : public DrawingOp {
 public:
  BernoulliMask(TransformOp op, bool as_int8) : DrawingOp(std::move(op)), as_int8_(as_int8) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("p", op().p);
    w->Field("dtype", as_int8_ ? "int8" : "bool");
    WriteKey(w);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& draws,
                      arrow::compute::ExecContext* exec) const override {
    ARROW_ASSIGN_OR_RAISE(const auto ids, Ids(*columns, draws));
    const RowDraws random(draws);
    std::shared_ptr<arrow::Array> out;
    if (as_int8_) {
      arrow::Int8Builder builder(exec->memory_pool());
      ARROW_RETURN_NOT_OK(builder.Reserve(draws.num_rows));
      for (const uint64_t id : ids) builder.UnsafeAppend(random.Uniform(id, 0) < op().p ? 1 : 0);
      ARROW_RETURN_NOT_OK(builder.Finish(&out));
    } else {
      arrow::BooleanBuilder builder(exec->memory_pool());
      ARROW_RETURN_NOT_OK(builder.Reserve(draws.num_rows));
      for (const uint64_t id : ids) builder.UnsafeAppend(random.Uniform(id, 0) < op().p);
      ARROW_RETURN_NOT_OK(builder.Finish(&out));
    }
    AddColumn(columns, std::move(out));
    return arrow::Status::OK();
  }

 private:
  bool as_int8_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_RETURN_NOT_OK(CheckProbability(op.p));
  if (!op.dtype.empty() && op.dtype != "bool" && op.dtype != "int8") {
    return arrow::Status::Invalid("dtype must be bool or int8, got '", op.dtype, "'");
  }
  const bool as_int8 = op.dtype == "int8";
  ARROW_RETURN_NOT_OK(AddDrawnColumn(op, kName, as_int8 ? arrow::int8() : arrow::boolean(), step));
  return std::make_unique<BernoulliMask>(op, as_int8);
}

constexpr OpParam kParams[] = {{"column", true}, {"p", true}, {"dtype", false}, {"key", false}};

}  // namespace

extern constinit const OpDescriptor kBernoulliMaskOp{TransformKind::kBernoulliMask, kName, kParams,
                                                     &Compile};

}  // namespace stoker
