// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// randint: a new int64 column uniform in [low, high) for each row — e.g. negatives sampled
// from a vocabulary's id range — or, with size n, a fixed_size_list<int64>[n] of n draws per
// row (draws 0..n-1 of the row's id). Drawn per epoch.
#include <arrow/array/array_nested.h>
#include <arrow/builder.h>

#include <cmath>

#include "transform/canonical_writer.h"
#include "transform/ops/draw_op.h"

namespace stoker {

namespace {

constexpr char kName[] = "randint";
// Bounds are given as doubles: integers up to 2^53 are exact.
constexpr double kMaxBound = 9007199254740992.0;

class Randint final : public DrawingOp {
 public:
  explicit Randint(TransformOp op)
      : DrawingOp(std::move(op)),
        low_(static_cast<int64_t>(this->op().low)),
        span_(static_cast<uint64_t>(static_cast<int64_t>(this->op().high) - low_)) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("low", op().low);
    w->Field("high", op().high);
    w->Field("size", static_cast<double>(op().size));
    WriteKey(w);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& draws,
                      arrow::compute::ExecContext* exec) const override {
    ARROW_ASSIGN_OR_RAISE(const auto ids, Ids(*columns, draws));
    const RowDraws random(draws);
    const int64_t per_row = std::max<int64_t>(op().size, 1);
    arrow::Int64Builder builder(exec->memory_pool());
    ARROW_RETURN_NOT_OK(builder.Reserve(draws.num_rows * per_row));
    for (const uint64_t id : ids) {
      for (int64_t d = 0; d < per_row; ++d) {
        builder.UnsafeAppend(
            low_ + static_cast<int64_t>(random.Below(id, static_cast<uint32_t>(d), span_)));
      }
    }
    std::shared_ptr<arrow::Array> values;
    ARROW_RETURN_NOT_OK(builder.Finish(&values));
    if (op().size == 0) {
      AddColumn(columns, std::move(values));
      return arrow::Status::OK();
    }
    ARROW_ASSIGN_OR_RAISE(auto lists, arrow::FixedSizeListArray::FromArrays(values, op().size));
    AddColumn(columns, std::move(lists));
    return arrow::Status::OK();
  }

 private:
  int64_t low_;
  uint64_t span_;
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  for (const double bound : {op.low, op.high}) {
    if (!(std::fabs(bound) <= kMaxBound) || bound != std::floor(bound)) {
      return arrow::Status::Invalid("low and high must be integers within +-2^53, got low ", op.low,
                                    ", high ", op.high);
    }
  }
  if (!(op.low < op.high)) {
    return arrow::Status::Invalid("needs low < high, got low ", op.low, ", high ", op.high);
  }
  if (op.size < 0 || op.size > (int64_t{1} << 20)) {
    return arrow::Status::Invalid(
        "size must be in [1, 1048576] (or left out for one int64 "
        "per row), got ",
        op.size);
  }
  auto type = op.size == 0 ? arrow::int64()
                           : arrow::fixed_size_list(arrow::int64(), static_cast<int32_t>(op.size));
  ARROW_RETURN_NOT_OK(AddDrawnColumn(op, kName, std::move(type), step));
  return std::make_unique<Randint>(op);
}

constexpr OpParam kParams[] = {
    {"column", true}, {"low", true}, {"high", true}, {"size", false}, {"key", false}};

}  // namespace

extern constinit const OpDescriptor kRandintOp{TransformKind::kRandint, kName, kParams, &Compile};

}  // namespace stoker
