// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// pad: a variable-length list of numbers -> fixed_size_list[length] (longer lists cut to
// their first `length` values, or their last with keep="last", in order; shorter ones
// filled with value after their values, a null list all value) plus int32 "<column>_length", the
// count of real values, inserted right after it.
#include <arrow/builder.h>
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <cstring>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "pad";

std::string LengthsColumn(const std::string& column) { return column + "_length"; }

// The padded lists and the int32 count of real values of each.
arrow::Result<std::pair<std::shared_ptr<arrow::Array>, std::shared_ptr<arrow::Array>>> PadLists(
    const std::shared_ptr<arrow::Array>& lists, int64_t length, double pad, bool keep_last,
    arrow::compute::ExecContext* exec) {
  arrow::MemoryPool* pool = exec->memory_pool();
  const bool large = lists->type_id() == arrow::Type::LARGE_LIST;
  const auto& value_type = lists->type()->field(0)->type();
  const int64_t width = value_type->byte_width();
  const int64_t rows = lists->length();
  std::shared_ptr<arrow::Array> flat =
      large ? static_cast<const arrow::LargeListArray&>(*lists).values()
            : static_cast<const arrow::ListArray&>(*lists).values();
  auto offset_of = [&](int64_t i) -> int64_t {
    return large ? static_cast<const arrow::LargeListArray&>(*lists).value_offset(i)
                 : static_cast<const arrow::ListArray&>(*lists).value_offset(i);
  };
  // The pad value, in the list's value type, as bytes.
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Array> pad_double,
                        arrow::MakeArrayFromScalar(arrow::DoubleScalar(pad), 1, pool));
  ARROW_ASSIGN_OR_RAISE(auto pad_array, CastArray(pad_double, value_type, exec));
  const uint8_t* pad_bytes = pad_array->data()->buffers[1]->data();

  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(rows * length * width, pool));
  std::shared_ptr<arrow::Buffer> validity;
  if (flat->null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(rows * length, pool));
    std::memset(validity->mutable_data(), 0xff, validity->size());
  }
  arrow::Int32Builder lengths(pool);
  ARROW_RETURN_NOT_OK(lengths.Reserve(rows));
  const uint8_t* src = flat->data()->buffers[1]->data() + flat->offset() * width;
  uint8_t* dst = values->mutable_data();
  for (int64_t i = 0; i < rows; ++i) {
    int64_t n = 0;
    if (lists->IsValid(i)) {
      const int64_t end = offset_of(i + 1);
      n = std::min(end - offset_of(i), length);
      const int64_t begin = keep_last ? end - n : offset_of(i);
      std::memcpy(dst + i * length * width, src + begin * width, n * width);
      if (validity != nullptr) {
        for (int64_t j = 0; j < n; ++j) {
          if (flat->IsNull(begin + j)) {
            arrow::bit_util::ClearBit(validity->mutable_data(), i * length + j);
          }
        }
      }
    }
    for (int64_t j = n; j < length; ++j) {
      std::memcpy(dst + (i * length + j) * width, pad_bytes, width);
    }
    lengths.UnsafeAppend(static_cast<int32_t>(n));
  }
  auto child = arrow::ArrayData::Make(value_type, rows * length, {validity, values},
                                      validity != nullptr ? arrow::kUnknownNullCount : 0);
  auto padded = arrow::MakeArray(arrow::ArrayData::Make(
      arrow::fixed_size_list(value_type, static_cast<int>(length)), rows, {nullptr}, {child}, 0));
  ARROW_ASSIGN_OR_RAISE(auto counts, lengths.Finish());
  return std::make_pair(padded, counts);
}

class Pad final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("length", static_cast<double>(op().length));
    w->Field("value", op().number);
    // Written only when not the default, so specs from before `keep` keep their digest.
    if (op().keep != "first") w->Field("keep", op().keep);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    const int i = Position(*columns);
    ARROW_ASSIGN_OR_RAISE(auto padded, PadLists(columns->values[i], op().length, op().number,
                                                op().keep == "last", exec));
    columns->values[i] = std::move(padded.first);
    columns->Insert(i + 1, LengthsColumn(op().columns[0]), std::move(padded.second));
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  const std::string& name = op.columns[0];
  ARROW_ASSIGN_OR_RAISE(int i, step->Require(name, kName, kNumericLists));
  if (op.length < 1) return arrow::Status::Invalid("length must be >= 1, got ", op.length);
  ARROW_RETURN_NOT_OK(CheckKeep(op));
  const auto value_type = step->columns.values[i]->field(0)->type();
  ARROW_RETURN_NOT_OK(Representable(op.number, value_type, "pad value").status());
  const std::string lengths = LengthsColumn(name);
  if (step->columns.Find(lengths) >= 0) {
    return arrow::Status::Invalid("'", lengths, "' already exists");
  }
  step->columns.values[i] = arrow::fixed_size_list(value_type, static_cast<int>(op.length));
  step->columns.Insert(i + 1, lengths, arrow::int32());
  return std::make_unique<Pad>(op);
}

constexpr OpParam kParams[] = {
    {"column", true}, {"length", true}, {"value", false}, {"keep", false}};

}  // namespace

extern constinit const OpDescriptor kPadOp{TransformKind::kPad, kName, kParams, &Compile};

}  // namespace stoker
