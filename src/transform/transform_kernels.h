// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array.h>
#include <arrow/compute/exec.h>
#include <arrow/datum.h>
#include <arrow/result.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

/// The array functions more than one transform op applies with (an op's own kernel lives in
/// its file under ops/). Each keeps nulls as nulls.

/// `values` as `type` (the array itself when it has that type). A safe cast makes overflow and
/// truncation errors; an unsafe one wraps (integer ids).
arrow::Result<std::shared_ptr<arrow::Array>> CastArray(const std::shared_ptr<arrow::Array>& values,
                                                       const std::shared_ptr<arrow::DataType>& type,
                                                       arrow::compute::ExecContext* exec,
                                                       bool safe = true);

/// Arrow compute function `function` on `args`, its result as an array.
arrow::Result<std::shared_ptr<arrow::Array>> CallArrayFunction(
    const std::string& function, const std::vector<arrow::Datum>& args,
    const arrow::compute::FunctionOptions* options, arrow::compute::ExecContext* exec);

/// An array of `type` (fixed width) over `values` with the validity of `like`.
arrow::Result<std::shared_ptr<arrow::Array>> WithValidityOf(const arrow::Array& like,
                                                            std::shared_ptr<arrow::DataType> type,
                                                            std::shared_ptr<arrow::Buffer> values,
                                                            arrow::MemoryPool* pool);

namespace kernels_internal {
/// A zeroed buffer of `length` int64 values.
arrow::Result<std::shared_ptr<arrow::Buffer>> ZeroedInt64s(int64_t length, arrow::MemoryPool* pool);
}  // namespace kernels_internal

/// An int64 per string/binary or integer id (hash buckets, vocabulary ids), nulls kept:
/// text(std::string_view) for each valid string; integer(int64_t) for every integer id, cast to
/// int64 without overflow checks (uint64 ids wrap).
template <typename Text, typename Integer>
arrow::Result<std::shared_ptr<arrow::Array>> MapIds(const std::shared_ptr<arrow::Array>& ids,
                                                    Text text, Integer integer,
                                                    arrow::compute::ExecContext* exec) {
  arrow::MemoryPool* pool = exec->memory_pool();
  ARROW_ASSIGN_OR_RAISE(auto values, kernels_internal::ZeroedInt64s(ids->length(), pool));
  auto* out = reinterpret_cast<int64_t*>(values->mutable_data());
  auto each_text = [&](const auto& a) {
    for (int64_t i = 0; i < a.length(); ++i) {
      if (a.IsValid(i)) out[i] = text(a.GetView(i));
    }
  };
  switch (ids->type_id()) {
    case arrow::Type::LARGE_STRING:
    case arrow::Type::LARGE_BINARY:
      each_text(static_cast<const arrow::LargeBinaryArray&>(*ids));
      break;
    case arrow::Type::STRING:
    case arrow::Type::BINARY:
      each_text(static_cast<const arrow::BinaryArray&>(*ids));
      break;
    default: {
      ARROW_ASSIGN_OR_RAISE(auto ints, CastArray(ids, arrow::int64(), exec, /*safe=*/false));
      const auto& x = static_cast<const arrow::Int64Array&>(*ints);
      for (int64_t i = 0; i < x.length(); ++i) out[i] = integer(x.Value(i));
    }
  }
  return WithValidityOf(*ids, arrow::int64(), std::move(values), pool);
}

}  // namespace stoker
