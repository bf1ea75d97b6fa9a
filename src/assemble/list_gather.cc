// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/list_gather.h"

#include <arrow/buffer.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/logging.h>

#include <cstring>
#include <limits>

#include "assemble/column_types.h"

namespace stoker {

namespace {

// Rows ahead whose offsets (first pass) or values (second pass) are prefetched: a shuffled
// row's offsets and values are each a DRAM miss, a few nanoseconds of work apart.
constexpr size_t kPrefetchRows = 16;

// One unit's list array, ready for random access.
template <typename Offset>
struct ListSource {
  const Offset* offsets = nullptr;    // row 0's offset (the array's offset applied)
  const uint8_t* validity = nullptr;  // null when no list is null
  int64_t validity_offset = 0;
};

// The list array of `type` over `n` rows with these offsets and innermost values.
std::shared_ptr<arrow::ArrayData> MakeList(const std::shared_ptr<arrow::DataType>& type, int64_t n,
                                           std::shared_ptr<arrow::Buffer> validity,
                                           int64_t null_count,
                                           std::shared_ptr<arrow::Buffer> offsets, int64_t total,
                                           std::shared_ptr<arrow::Buffer> values) {
  const auto& value_type = type->field(0)->type();
  std::shared_ptr<arrow::ArrayData> child;
  if (value_type->id() == arrow::Type::FIXED_SIZE_LIST) {
    // Nested fixed-size lists: rebuild each level over the one values buffer.
    std::vector<std::shared_ptr<arrow::DataType>> levels{value_type};
    while (levels.back()->id() == arrow::Type::FIXED_SIZE_LIST) {
      levels.push_back(levels.back()->field(0)->type());
    }
    int64_t length = total;
    for (size_t k = 0; k + 1 < levels.size(); ++k) {
      length *= static_cast<const arrow::FixedSizeListType&>(*levels[k]).list_size();
    }
    child = arrow::ArrayData::Make(levels.back(), length, {nullptr, std::move(values)}, 0);
    for (size_t k = levels.size() - 1; k-- > 0;) {
      length /= static_cast<const arrow::FixedSizeListType&>(*levels[k]).list_size();
      child = arrow::ArrayData::Make(levels[k], length, {nullptr}, {std::move(child)}, 0);
    }
  } else {
    child = arrow::ArrayData::Make(value_type, total, {nullptr, std::move(values)}, 0);
  }
  return arrow::ArrayData::Make(type, n, {std::move(validity), std::move(offsets)},
                                {std::move(child)}, null_count);
}

// One column's first pass: output offsets, validity and where each row's values start.
struct ListPass {
  std::shared_ptr<arrow::Buffer> offsets;
  std::shared_ptr<arrow::Buffer> validity;  // null when no list is null
  int64_t null_count = 0;
  int64_t total = 0;                   // values in the batch's lists
  int64_t value_bytes = 0;             // bytes of one value (a fixed-size list's whole row)
  int64_t align = 1;                   // the innermost value's width
  std::vector<int64_t> begin;          // each row's first value in its unit's child array
  std::vector<const uint8_t*> values;  // each unit's child value 0
};

template <typename Offset>
arrow::Result<ListPass> FirstPass(std::span<const uint32_t> units, std::span<const int64_t> rows,
                                  const std::vector<const arrow::ArrayData*>& arrays,
                                  arrow::MemoryPool* pool) {
  const auto n = static_cast<int64_t>(rows.size());
  ListPass pass;
  ARROW_ASSIGN_OR_RAISE(auto layout, GetFixedWidthLayout(*arrays[0]->type->field(0)->type()));
  pass.value_bytes = layout.row_bytes;
  pass.align = layout.value_type->byte_width();
  std::vector<ListSource<Offset>> sources(arrays.size());
  bool any_null = false;
  pass.values.resize(arrays.size());
  for (size_t u = 0; u < arrays.size(); ++u) {
    const arrow::ArrayData& a = *arrays[u];
    sources[u].offsets = a.GetValues<Offset>(1);
    // An array of empty (or null) lists may have no values buffer at all.
    const arrow::ArrayData& child = *a.child_data[0];
    pass.values[u] = child.length > 0 ? GetFixedWidthValues(child).first : nullptr;
    if (a.GetNullCount() > 0) {
      sources[u].validity = a.buffers[0]->data();
      sources[u].validity_offset = a.offset;
      any_null = true;
    }
  }
  ARROW_ASSIGN_OR_RAISE(pass.offsets, arrow::AllocateBuffer((n + 1) * sizeof(Offset), pool));
  auto* out_offsets = reinterpret_cast<Offset*>(pass.offsets->mutable_data());
  uint8_t* out_validity = nullptr;
  if (any_null) {
    ARROW_ASSIGN_OR_RAISE(pass.validity, arrow::AllocateBitmap(n, pool));
    out_validity = pass.validity->mutable_data();
    std::memset(out_validity, 0xff, pass.validity->size());
  }
  pass.begin.resize(n);
  int64_t total = 0;
  out_offsets[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<size_t>(i) + kPrefetchRows < rows.size()) {
      const auto j = static_cast<size_t>(i) + kPrefetchRows;
      __builtin_prefetch(sources[units[j]].offsets + rows[j]);
    }
    const ListSource<Offset>& s = sources[units[i]];
    const int64_t r = rows[i];
    int64_t length = static_cast<int64_t>(s.offsets[r + 1]) - s.offsets[r];
    pass.begin[i] = s.offsets[r];
    if (s.validity != nullptr && !arrow::bit_util::GetBit(s.validity, s.validity_offset + r)) {
      arrow::bit_util::ClearBit(out_validity, i);
      ++pass.null_count;
      length = 0;  // a null list holds no values
    }
    total += length;
    if (total > std::numeric_limits<Offset>::max()) {
      return arrow::Status::CapacityError("a batch of ", n, " lists holds more than ",
                                          std::numeric_limits<Offset>::max(),
                                          " values, past what list offsets hold");
    }
    out_offsets[i + 1] = static_cast<Offset>(total);
  }
  pass.total = total;
  return pass;
}

// The second pass: the values of `pass` into `out`, one memcpy per run of rows adjacent in
// one unit (an unshuffled batch is a run per unit).
template <typename Offset>
void CopyValues(std::span<const uint32_t> units, const ListPass& pass, uint8_t* out) {
  const auto n = static_cast<int64_t>(pass.begin.size());
  const auto* offsets = reinterpret_cast<const Offset*>(pass.offsets->data());
  const int64_t width = pass.value_bytes;
  int64_t i = 0;
  while (i < n) {
    const uint32_t unit = units[i];
    const int64_t run_begin = pass.begin[i];
    int64_t run_end = run_begin + (offsets[i + 1] - offsets[i]);
    int64_t j = i + 1;
    while (j < n && units[j] == unit && pass.begin[j] == run_end) {
      run_end += offsets[j + 1] - offsets[j];
      ++j;
    }
    if (j + static_cast<int64_t>(kPrefetchRows) < n) {
      const int64_t k = j + static_cast<int64_t>(kPrefetchRows);
      if (pass.values[units[k]] != nullptr) {
        __builtin_prefetch(pass.values[units[k]] + pass.begin[k] * width);
      }
    }
    if (run_end > run_begin) {
      std::memcpy(out + static_cast<int64_t>(offsets[i]) * width,
                  pass.values[unit] + run_begin * width,
                  static_cast<size_t>((run_end - run_begin) * width));
    }
    i = j;
  }
}

arrow::Result<ListPass> FirstPassOf(std::span<const uint32_t> units, std::span<const int64_t> rows,
                                    const std::vector<const arrow::ArrayData*>& arrays,
                                    arrow::MemoryPool* pool) {
  if (arrays[0]->type->id() == arrow::Type::LARGE_LIST) {
    return FirstPass<int64_t>(units, rows, arrays, pool);
  }
  return FirstPass<int32_t>(units, rows, arrays, pool);
}

}  // namespace

bool IsGatherableList(const arrow::ArrayData& data) {
  const auto id = data.type->id();
  if (id != arrow::Type::LIST && id != arrow::Type::LARGE_LIST) return false;
  const arrow::ArrayData& child = *data.child_data[0];
  return GetFixedWidthLayout(*child.type).ok() && !HasNulls(child);
}

arrow::Result<std::vector<std::shared_ptr<arrow::ArrayData>>> GatherListGroup(
    std::span<const uint32_t> units, std::span<const int64_t> rows,
    const std::vector<std::vector<const arrow::ArrayData*>>& columns, arrow::MemoryPool* pool) {
  ARROW_DCHECK(units.size() == rows.size());
  std::vector<ListPass> passes;
  std::vector<int64_t> starts;  // each column's first byte in the shared values buffer
  int64_t bytes = 0;
  for (const auto& arrays : columns) {
    ARROW_DCHECK(!arrays.empty());
    ARROW_ASSIGN_OR_RAISE(ListPass pass, FirstPassOf(units, rows, arrays, pool));
    bytes = (bytes + pass.align - 1) / pass.align * pass.align;
    starts.push_back(bytes);
    bytes += pass.total * pass.value_bytes;
    passes.push_back(std::move(pass));
  }
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> values, arrow::AllocateBuffer(bytes, pool));
  std::vector<std::shared_ptr<arrow::ArrayData>> out;
  for (size_t k = 0; k < columns.size(); ++k) {
    const auto& type = columns[k][0]->type;
    ListPass& pass = passes[k];
    uint8_t* region = values->mutable_data() + starts[k];
    if (type->id() == arrow::Type::LARGE_LIST) {
      CopyValues<int64_t>(units, pass, region);
    } else {
      CopyValues<int32_t>(units, pass, region);
    }
    const int64_t region_bytes = pass.total * pass.value_bytes;
    out.push_back(MakeList(type, static_cast<int64_t>(rows.size()), std::move(pass.validity),
                           pass.null_count, std::move(pass.offsets), pass.total,
                           arrow::SliceMutableBuffer(values, starts[k], region_bytes)));
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherLists(
    std::span<const uint32_t> units, std::span<const int64_t> rows,
    const std::vector<const arrow::ArrayData*>& arrays, arrow::MemoryPool* pool) {
  ARROW_ASSIGN_OR_RAISE(auto gathered, GatherListGroup(units, rows, {arrays}, pool));
  return std::move(gathered[0]);
}

}  // namespace stoker
