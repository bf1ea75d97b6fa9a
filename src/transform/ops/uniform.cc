// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// uniform: a new float32 (or float64) column, uniform in [low, high) for each row. Drawn per
// epoch from the row's id (draw 0): low + (high - low) * u with u in [0, 1) of 53 bits.
#include <arrow/builder.h>

#include <cmath>

#include "transform/canonical_writer.h"
#include "transform/ops/draw_op.h"

namespace stoker {

namespace {

constexpr char kName[] = "uniform";

// Values of `T` in [low, high): the draw in double, rounded to T and kept below high.
template <typename Builder, typename T>
arrow::Result<std::shared_ptr<arrow::Array>> Draw(const std::vector<uint64_t>& ids,
                                                  const RowDraws& random, double low, double high,
                                                  arrow::MemoryPool* pool) {
  const T top = static_cast<T>(high);
  const T below_top = std::nextafter(top, static_cast<T>(low));
  Builder builder(pool);
  ARROW_RETURN_NOT_OK(builder.Reserve(static_cast<int64_t>(ids.size())));
  for (const uint64_t id : ids) {
    const T x = static_cast<T>(low + (high - low) * random.Uniform(id, 0));
    builder.UnsafeAppend(x < top ? x : below_top);  // rounding may reach high
  }
  std::shared_ptr<arrow::Array> out;
  ARROW_RETURN_NOT_OK(builder.Finish(&out));
  return out;
}

class Uniform final : public DrawingOp {
 public:
  Uniform(TransformOp op, bool as_double) : DrawingOp(std::move(op)), as_double_(as_double) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("low", op().low);
    w->Field("high", op().high);
    w->Field("dtype", as_double_ ? "float64" : "float32");
    WriteKey(w);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& draws,
                      arrow::compute::ExecContext* exec) const override {
    ARROW_ASSIGN_OR_RAISE(const auto ids, Ids(*columns, draws));
    const RowDraws random(draws);
    std::shared_ptr<arrow::Array> out;
    if (as_double_) {
      ARROW_ASSIGN_OR_RAISE(out, (Draw<arrow::DoubleBuilder, double>(
                                     ids, random, op().low, op().high, exec->memory_pool())));
    } else {
      ARROW_ASSIGN_OR_RAISE(out, (Draw<arrow::FloatBuilder, float>(ids, random, op().low, op().high,
                                                                   exec->memory_pool())));
    }
    AddColumn(columns, std::move(out));
    return arrow::Status::OK();
  }

 private:
  bool as_double_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  if (!std::isfinite(op.low) || !std::isfinite(op.high) || !(op.low < op.high)) {
    return arrow::Status::Invalid("needs finite low < high, got low ", op.low, ", high ", op.high);
  }
  if (!op.dtype.empty() && op.dtype != "float32" && op.dtype != "float64") {
    return arrow::Status::Invalid("dtype must be float32 or float64, got '", op.dtype, "'");
  }
  const bool as_double = op.dtype == "float64";
  if (!as_double && static_cast<float>(op.low) >= static_cast<float>(op.high)) {
    return arrow::Status::Invalid("low ", op.low, " and high ", op.high,
                                  " are the same float32: use dtype float64");
  }
  ARROW_RETURN_NOT_OK(
      AddDrawnColumn(op, kName, as_double ? arrow::float64() : arrow::float32(), step));
  return std::make_unique<Uniform>(op, as_double);
}

constexpr OpParam kParams[] = {
    {"column", true}, {"low", true}, {"high", true}, {"dtype", false}, {"key", false}};

}  // namespace

extern constinit const OpDescriptor kUniformOp{TransformKind::kUniform, kName, kParams, &Compile};

}  // namespace stoker
