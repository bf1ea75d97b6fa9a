// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// truncate: variable-length lists of numbers, in place, each row cut to its first or last
// `length` elements in order (keep "first" or "last"); every column named is cut alike, so
// paired lists (a user history's ids, timestamps, action types) stay aligned: their rows must
// hold as many elements each (an error naming both columns and the row otherwise). A null
// list stays null. The kept length is each row's list length (its offsets; pad's
// "<column>_length").
#include <arrow/array/array_nested.h>
#include <arrow/buffer.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>
#include <cstring>

#include "transform/canonical_writer.h"
#include "transform/ops/op.h"
#include "transform/ops/schema_step.h"

namespace stoker {

namespace {

constexpr char kName[] = "truncate";

int64_t OffsetAt(const arrow::ArrayData& data, int64_t i) {
  return data.type->id() == arrow::Type::LARGE_LIST ? data.GetValues<int64_t>(1)[i]
                                                    : data.GetValues<int32_t>(1)[i];
}

// `lists` with each valid row cut to `length` elements from its `last` end or its first.
template <typename Offset>
arrow::Result<std::shared_ptr<arrow::Array>> Cut(const arrow::ArrayData& lists, int64_t length,
                                                 bool last, arrow::MemoryPool* pool) {
  const int64_t rows = lists.length;
  // The elements are numbers (compile checked): fixed width, in the child's values buffer.
  const arrow::ArrayData& child = *lists.child_data[0];
  const int64_t width = child.type->byte_width();
  const uint8_t* values =
      child.length > 0 ? child.buffers[1]->data() + child.offset * width : nullptr;
  const Offset* in = lists.GetValues<Offset>(1);
  int64_t total = 0;
  for (int64_t i = 0; i < rows; ++i) total += std::min<int64_t>(in[i + 1] - in[i], length);
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> offsets,
                        arrow::AllocateBuffer((rows + 1) * sizeof(Offset), pool));
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> out_values,
                        arrow::AllocateBuffer(total * width, pool));
  auto* out = reinterpret_cast<Offset*>(offsets->mutable_data());
  uint8_t* dst = out_values->mutable_data();
  out[0] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t n = in[i + 1] - in[i];
    const int64_t kept = std::min(n, length);
    const int64_t first = last ? in[i + 1] - kept : in[i];
    if (kept > 0) {
      std::memcpy(dst + static_cast<int64_t>(out[i]) * width, values + first * width, kept * width);
    }
    out[i + 1] = static_cast<Offset>(out[i] + kept);
  }
  std::shared_ptr<arrow::Buffer> validity;
  if (lists.GetNullCount() > 0) {
    ARROW_ASSIGN_OR_RAISE(
        validity, arrow::internal::CopyBitmap(pool, lists.buffers[0]->data(), lists.offset, rows));
  }
  auto kept_child = arrow::ArrayData::Make(child.type, total, {nullptr, out_values}, 0);
  return arrow::MakeArray(arrow::ArrayData::Make(lists.type, rows, {validity, offsets},
                                                 {kept_child}, lists.GetNullCount()));
}

class Truncate final : public CompiledOp {
 public:
  using CompiledOp::CompiledOp;

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("length", static_cast<double>(op().length));
    w->Field("keep", op().keep);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& /*draws*/,
                      arrow::compute::ExecContext* exec) const override {
    const auto& names = op().columns;
    const arrow::ArrayData& first = *columns->values[columns->Find(names[0])]->data();
    for (size_t k = 1; k < names.size(); ++k) {
      const arrow::ArrayData& other = *columns->values[columns->Find(names[k])]->data();
      for (int64_t i = 0; i < first.length; ++i) {
        const int64_t a = OffsetAt(first, i + 1) - OffsetAt(first, i);
        const int64_t b = OffsetAt(other, i + 1) - OffsetAt(other, i);
        if (a != b && first.IsValid(i) && other.IsValid(i)) {
          return arrow::Status::Invalid("'", names[k], "' is paired with '", names[0], "' but row ",
                                        i, " of the row group holds ", b, " elements against ", a,
                                        ": paired lists must have equal lengths");
        }
      }
    }
    const bool last = op().keep == "last";
    for (const std::string& name : names) {
      auto& column = columns->values[columns->Find(name)];
      const arrow::ArrayData& data = *column->data();
      ARROW_ASSIGN_OR_RAISE(column,
                            data.type->id() == arrow::Type::LARGE_LIST
                                ? Cut<int64_t>(data, op().length, last, exec->memory_pool())
                                : Cut<int32_t>(data, op().length, last, exec->memory_pool()));
    }
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  if (op.length < 1) return arrow::Status::Invalid("length must be >= 1, got ", op.length);
  ARROW_RETURN_NOT_OK(CheckKeep(op));
  for (const std::string& name : op.columns) {
    ARROW_RETURN_NOT_OK(step->Require(name, kName, kNumericLists).status());
  }
  return std::make_unique<Truncate>(op);
}

constexpr OpParam kParams[] = {{"columns", true, "column"}, {"length", true}, {"keep", false}};

}  // namespace

extern constinit const OpDescriptor kTruncateOp{TransformKind::kTruncate, kName, kParams, &Compile};

}  // namespace stoker
