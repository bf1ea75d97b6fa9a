// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/transform_kernels.h"

#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/util/bitmap_ops.h>

#include <algorithm>

namespace stoker {

arrow::Result<std::shared_ptr<arrow::Array>> CastArray(const std::shared_ptr<arrow::Array>& values,
                                                       const std::shared_ptr<arrow::DataType>& type,
                                                       arrow::compute::ExecContext* exec,
                                                       bool safe) {
  if (values->type()->Equals(*type)) return values;
  auto options =
      safe ? arrow::compute::CastOptions::Safe(type) : arrow::compute::CastOptions::Unsafe(type);
  return arrow::compute::Cast(*values, type, options, exec);
}

arrow::Result<std::shared_ptr<arrow::Array>> CallArrayFunction(
    const std::string& function, const std::vector<arrow::Datum>& args,
    const arrow::compute::FunctionOptions* options, arrow::compute::ExecContext* exec) {
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::compute::CallFunction(function, args, options, exec));
  return out.make_array();
}

arrow::Result<std::shared_ptr<arrow::Array>> WithValidityOf(const arrow::Array& like,
                                                            std::shared_ptr<arrow::DataType> type,
                                                            std::shared_ptr<arrow::Buffer> values,
                                                            arrow::MemoryPool* pool) {
  std::shared_ptr<arrow::Buffer> validity;
  if (like.null_count() > 0) {
    ARROW_ASSIGN_OR_RAISE(validity, arrow::internal::CopyBitmap(pool, like.null_bitmap_data(),
                                                                like.offset(), like.length()));
  }
  return arrow::MakeArray(arrow::ArrayData::Make(std::move(type), like.length(),
                                                 {validity, std::move(values)}, like.null_count()));
}

namespace kernels_internal {

arrow::Result<std::shared_ptr<arrow::Buffer>> ZeroedInt64s(int64_t length,
                                                           arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values,
                        arrow::AllocateBuffer(length * sizeof(int64_t), pool));
  auto* out = reinterpret_cast<int64_t*>(values->mutable_data());
  std::fill(out, out + length, 0);
  return values;
}

}  // namespace kernels_internal

}  // namespace stoker
