// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// dropout: a variable-length list column, in place, each element dropped with probability p
// (element j of a row uses draw j of the row's id); a null list stays null. Drawn per epoch.
#include <arrow/array/array_nested.h>
#include <arrow/builder.h>
#include <arrow/compute/api_vector.h>
#include <arrow/util/bit_util.h>

#include <cstring>

#include "transform/canonical_writer.h"
#include "transform/ops/draw_op.h"

namespace stoker {

namespace {

constexpr char kName[] = "dropout";

// The lists with only the kept elements: new offsets and validity, values taken by index.
template <typename ListArrayType>
arrow::Result<std::shared_ptr<arrow::Array>> DropElements(const ListArrayType& lists,
                                                          const std::vector<uint64_t>& ids,
                                                          const RowDraws& random, double p,
                                                          arrow::compute::ExecContext* exec) {
  using Offset = typename ListArrayType::offset_type;
  arrow::MemoryPool* pool = exec->memory_pool();
  const int64_t rows = lists.length();
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> offsets,
                        arrow::AllocateBuffer((rows + 1) * sizeof(Offset), pool));
  auto* out_offsets = reinterpret_cast<Offset*>(offsets->mutable_data());
  std::shared_ptr<arrow::Buffer> validity;
  if (lists.null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::AllocateBitmap(rows, pool));
    std::memset(validity->mutable_data(), 0, validity->size());
  }
  arrow::Int64Builder kept(pool);
  out_offsets[0] = 0;
  for (int64_t i = 0; i < rows; ++i) {
    if (lists.IsValid(i)) {
      if (validity != nullptr) arrow::bit_util::SetBit(validity->mutable_data(), i);
      const int64_t begin = lists.value_offset(i);
      const int64_t length = lists.value_length(i);
      for (int64_t j = 0; j < length; ++j) {
        if (random.Uniform(ids[i], static_cast<uint32_t>(j)) >= p) {
          ARROW_RETURN_NOT_OK(kept.Append(begin + j));
        }
      }
    }
    out_offsets[i + 1] = static_cast<Offset>(kept.length());
  }
  std::shared_ptr<arrow::Array> indices;
  ARROW_RETURN_NOT_OK(kept.Finish(&indices));
  ARROW_ASSIGN_OR_RAISE(auto values,
                        arrow::compute::Take(*lists.values(), *indices,
                                             arrow::compute::TakeOptions::NoBoundsCheck(), exec));
  auto data = arrow::ArrayData::Make(lists.type(), rows, {std::move(validity), std::move(offsets)},
                                     {values->data()}, lists.null_count());
  return arrow::MakeArray(std::move(data));
}

class Dropout final : public DrawingOp {
 public:
  using DrawingOp::DrawingOp;

  void WriteParams(CanonicalWriter* w) const override {
    w->Field("p", op().p);
    WriteKey(w);
  }

  arrow::Status Apply(ArrayColumns* columns, const DrawContext& draws,
                      arrow::compute::ExecContext* exec) const override {
    ARROW_ASSIGN_OR_RAISE(const auto ids, Ids(*columns, draws));
    const RowDraws random(draws);
    auto& x = Column(columns);
    if (x->type_id() == arrow::Type::LARGE_LIST) {
      ARROW_ASSIGN_OR_RAISE(x, DropElements(static_cast<const arrow::LargeListArray&>(*x), ids,
                                            random, op().p, exec));
    } else {
      ARROW_ASSIGN_OR_RAISE(
          x, DropElements(static_cast<const arrow::ListArray&>(*x), ids, random, op().p, exec));
    }
    return arrow::Status::OK();
  }
};

arrow::Result<std::unique_ptr<CompiledOp>> Compile(const TransformOp& op, SchemaStep* step) {
  ARROW_RETURN_NOT_OK(step->Require(op.columns[0], kName, kNumericLists).status());
  ARROW_RETURN_NOT_OK(CheckProbability(op.p));
  ARROW_RETURN_NOT_OK(CheckKey(op, kName, *step));
  return std::make_unique<Dropout>(op);
}

constexpr OpParam kParams[] = {{"column", true}, {"p", true}, {"key", false}};

}  // namespace

extern constinit const OpDescriptor kDropoutOp{TransformKind::kDropout, kName, kParams, &Compile};

}  // namespace stoker
