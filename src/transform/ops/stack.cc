// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// stack: scalar columns -> one fixed_size_list<dtype>[n] column named output (row-major),
// appended after the others; the inputs are consumed.
#include <arrow/util/bit_util.h>

#include <algorithm>
#include <cstring>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"
#include "transform/transform_kernels.h"

namespace stoker {

namespace {

constexpr char kName[] = "stack";

constexpr char kDefaultDtype[] = "float32";
constexpr ColumnKind kScalars{&IsNumberOrBool, "scalar numbers or bool"};

// Interleaves same-typed scalar columns into one fixed_size_list[n] column (row-major).
arrow::Result<std::shared_ptr<arrow::Array>> Interleave(const arrow::ArrayVector& columns,
                                                        arrow::MemoryPool* pool) {
  const auto& type = columns[0]->type();
  const int64_t width = type->byte_width();
  const int64_t rows = columns[0]->length();
  const auto k = static_cast<int64_t>(columns.size());
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(rows * k * width, pool));
  std::shared_ptr<arrow::Buffer> validity;
  int64_t nulls = 0;
  for (const auto& column : columns) nulls += column->null_count();
  if (nulls > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(rows * k, pool));
    std::memset(validity->mutable_data(), 0xff, validity->size());
  }
  for (int64_t j = 0; j < k; ++j) {
    const auto& data = *columns[j]->data();
    const uint8_t* src = data.buffers[1]->data() + data.offset * width;
    uint8_t* dst = values->mutable_data() + j * width;
    for (int64_t i = 0; i < rows; ++i) {
      std::memcpy(dst + i * k * width, src + i * width, width);
    }
    if (columns[j]->null_count() > 0) {
      for (int64_t i = 0; i < rows; ++i) {
        if (columns[j]->IsNull(i)) arrow::bit_util::ClearBit(validity->mutable_data(), i * k + j);
      }
    }
  }
  auto child = arrow::ArrayData::Make(type, rows * k, {validity, values},
                                      nulls > 0 ? arrow::kUnknownNullCount : 0);
  return arrow::MakeArray(arrow::ArrayData::Make(arrow::fixed_size_list(type, static_cast<int>(k)),
                                                 rows, {nullptr}, {child}, 0));
}

class Stack final : public CompiledOp {
 public:
  Stack(TransformOp op, std::shared_ptr<arrow::DataType> to)
      : CompiledOp(std::move(op)), to_(std::move(to)) {}

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("output", op().output);
    w->Field("dtype", op().dtype.empty() ? kDefaultDtype : op().dtype);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    arrow::ArrayVector inputs;
    std::vector<int> positions;
    for (const auto& column : op().columns) {
      const int k = columns->Find(column);
      ARROW_ASSIGN_OR_RAISE(auto cast, CastArray(columns->values[k], to_, exec));
      inputs.push_back(std::move(cast));
      positions.push_back(k);
    }
    ARROW_ASSIGN_OR_RAISE(auto stacked, Interleave(inputs, exec->memory_pool()));
    std::sort(positions.rbegin(), positions.rend());
    for (int k : positions) columns->Remove(k);
    columns->Insert(static_cast<int>(columns->names.size()), op().output, std::move(stacked));
    return arrow::Status::OK();
  }

 private:
  std::shared_ptr<arrow::DataType> to_;  // the value type of the output
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_ASSIGN_OR_RAISE(auto to, ParseDtype(op.dtype.empty() ? kDefaultDtype : op.dtype));
  // Rows are interleaved a value's bytes at a time; bool packs 8 values to a byte.
  if (to->byte_width() <= 0) {
    return arrow::Status::Invalid(
        "dtype '", op.dtype, "' is not a fixed-width number type: ",
        "stack takes int8 to int64, uint8 to uint64 and float16 to float64");
  }
  if (op.output.empty()) return arrow::Status::Invalid("needs an output column name");
  std::vector<int> inputs;
  for (const auto& column : op.columns) {
    ARROW_ASSIGN_OR_RAISE(int i, step->Require(column, kName, kScalars));
    inputs.push_back(i);
  }
  std::sort(inputs.rbegin(), inputs.rend());
  if (std::adjacent_find(inputs.begin(), inputs.end()) != inputs.end()) {
    return arrow::Status::Invalid("lists a column twice");
  }
  for (int i : inputs) step->columns.Remove(i);
  if (step->columns.Find(op.output) >= 0) {
    return arrow::Status::Invalid("output '", op.output, "' already exists");
  }
  step->columns.Insert(static_cast<int>(step->columns.names.size()), op.output,
                       arrow::fixed_size_list(to, static_cast<int>(op.columns.size())));
  return std::make_unique<Stack>(op, std::move(to));
}

constexpr OpParam kParams[] = {{"columns", true}, {"output", true}, {"dtype", false}};

}  // namespace

extern constinit const OpDescriptor kStackOp{TransformKind::kStack, kName, kParams, &Compile};

}  // namespace stoker
