// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/array/data.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace stoker {

/// True when `data` is a list or large list whose values are fixed-width numbers (or
/// fixed-size lists of them) with no null value: the lists GatherLists takes. Null lists are
/// allowed.
bool IsGatherableList(const arrow::ArrayData& data);

/// One batch's column of variable-length lists: output row i is row `rows[i]` of
/// `arrays[units[i]]` (each IsGatherableList, all of one type). Offsets are computed once
/// and the values copied with one memcpy per run of adjacent source rows (a whole unshuffled
/// batch is one run per unit); a null list stays null, with no values. The result's offsets
/// start at 0. CapacityError when a `list` (int32 offsets) batch would hold more than 2^31-1
/// values.
arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherLists(
    std::span<const uint32_t> units, std::span<const int64_t> rows,
    const std::vector<const arrow::ArrayData*>& arrays, arrow::MemoryPool* pool);

/// Several list columns of one batch, each gathered as by GatherLists, their values laid out
/// one after another in one allocation, in the order given (each column's region aligned to
/// its value width): column k's values are a slice of that buffer. How a KeyedJaggedTensor's
/// key-major values come out of the engine with no further copy (python/kjt.cc).
arrow::Result<std::vector<std::shared_ptr<arrow::ArrayData>>> GatherListGroup(
    std::span<const uint32_t> units, std::span<const int64_t> rows,
    const std::vector<std::vector<const arrow::ArrayData*>>& columns, arrow::MemoryPool* pool);

}  // namespace stoker
