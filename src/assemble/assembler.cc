// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/assembler.h"

#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/buffer.h>
#include <arrow/builder.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/exec.h>
#include <arrow/util/bit_util.h>
#include <arrow/util/logging.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "assemble/column_types.h"
#include "assemble/list_gather.h"
#include "util/digest.h"

namespace stoker {

namespace {

// For each output row: which unit (flat index over the batch's windows) and which row of it.
struct Gather {
  std::vector<uint32_t> unit;
  std::vector<int64_t> row;
};

template <typename Word>
void CopyRows(const Gather& g, const std::vector<const uint8_t*>& bases, uint8_t* out) {
  auto* dst = reinterpret_cast<Word*>(out);
  for (size_t i = 0; i < g.row.size(); ++i) {
    std::memcpy(dst + i, bases[g.unit[i]] + g.row[i] * sizeof(Word), sizeof(Word));
  }
}

// The output array for `type` over `length` rows whose innermost values are `values`.
std::shared_ptr<arrow::ArrayData> WrapValues(const std::shared_ptr<arrow::DataType>& type,
                                             int64_t length,
                                             std::shared_ptr<arrow::Buffer> values) {
  if (type->id() != arrow::Type::FIXED_SIZE_LIST) {
    return arrow::ArrayData::Make(type, length, {nullptr, std::move(values)}, 0);
  }
  const auto& list = static_cast<const arrow::FixedSizeListType&>(*type);
  auto child = WrapValues(list.value_type(), length * list.list_size(), std::move(values));
  return arrow::ArrayData::Make(type, length, {nullptr}, {std::move(child)}, 0);
}

// The buffer of `bytes` bytes a column's values go into: `given` when it is one of exactly
// that size that may be written, else a new one from `pool`.
arrow::Result<std::shared_ptr<arrow::Buffer>> OutputBuffer(
    const std::shared_ptr<arrow::Buffer>& given, int64_t bytes, arrow::MemoryPool* pool) {
  if (given != nullptr && given->is_mutable() && given->size() == bytes) return given;
  return arrow::AllocateBuffer(bytes, pool);
}

arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherFixedWidth(
    const std::shared_ptr<arrow::DataType>& type, int64_t row_bytes, const Gather& g,
    const std::vector<const arrow::ArrayData*>& arrays, const std::shared_ptr<arrow::Buffer>& given,
    arrow::MemoryPool* pool) {
  const auto n = static_cast<int64_t>(g.row.size());
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> buffer,
                        OutputBuffer(given, n * row_bytes, pool));
  std::vector<const uint8_t*> bases(arrays.size());
  for (size_t u = 0; u < arrays.size(); ++u) bases[u] = GetFixedWidthValues(*arrays[u]).first;
  uint8_t* out = buffer->mutable_data();
  switch (row_bytes) {
    case 1:
      CopyRows<uint8_t>(g, bases, out);
      break;
    case 2:
      CopyRows<uint16_t>(g, bases, out);
      break;
    case 4:
      CopyRows<uint32_t>(g, bases, out);
      break;
    case 8:
      CopyRows<uint64_t>(g, bases, out);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * row_bytes, bases[g.unit[i]] + g.row[i] * row_bytes, row_bytes);
      }
  }
  return WrapValues(type, n, std::move(buffer));
}

// Any type: take each unit's rows, concatenate, then restore the batch's row order.
arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherGeneric(
    const Gather& g, const std::vector<const arrow::ArrayData*>& arrays, arrow::MemoryPool* pool) {
  arrow::compute::ExecContext context(pool);
  const auto n = static_cast<int64_t>(g.row.size());
  std::vector<int64_t> start(arrays.size() + 1, 0);
  for (uint32_t u : g.unit) ++start[u + 1];
  for (size_t u = 0; u < arrays.size(); ++u) start[u + 1] += start[u];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int64_t> by_unit(n), order(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t slot = fill[g.unit[i]]++;
    by_unit[slot] = g.row[i];
    order[i] = slot;
  }
  arrow::ArrayVector pieces;
  for (size_t u = 0; u < arrays.size(); ++u) {
    if (start[u + 1] == start[u]) continue;
    arrow::Int64Array indices(
        start[u + 1] - start[u],
        arrow::Buffer::Wrap(by_unit.data() + start[u], start[u + 1] - start[u]));
    ARROW_ASSIGN_OR_RAISE(
        auto piece,
        arrow::compute::Take(*arrow::MakeArray(std::make_shared<arrow::ArrayData>(*arrays[u])),
                             indices, arrow::compute::TakeOptions::Defaults(), &context));
    pieces.push_back(std::move(piece));
  }
  std::shared_ptr<arrow::Array> grouped = pieces[0];
  if (pieces.size() > 1) {
    ARROW_ASSIGN_OR_RAISE(grouped, arrow::Concatenate(pieces, pool));
  }
  arrow::Int64Array reorder(n, arrow::Buffer::Wrap(order));
  ARROW_ASSIGN_OR_RAISE(
      auto result,
      arrow::compute::Take(*grouped, reorder, arrow::compute::TakeOptions::Defaults(), &context));
  return result->data();
}

// Cache lines prefetched per record (larger records rely on the hardware's streamer).
constexpr int64_t kMaxPrefetchLines = 32;
// Rows per tile of the scatter (see GatherRecords): a tile's records (at most 32 lines each)
// stay in L1/L2 while every column is copied out of them, and the next tile's are fetched.
constexpr size_t kTileRows = 32;

// One staged column's output while the batch is scattered.
struct ScatterTarget {
  const RowLayout::Column* column = nullptr;
  uint8_t* values = nullptr;
  uint8_t* validity = nullptr;  // null when the column has no validity flag
  std::shared_ptr<arrow::Buffer> values_buffer;
  std::shared_ptr<arrow::Buffer> validity_buffer;
  int64_t null_count = 0;
};

// The output array of a scattered column.
std::shared_ptr<arrow::ArrayData> FinishTarget(const std::shared_ptr<arrow::DataType>& type,
                                               int64_t length, ScatterTarget target) {
  std::shared_ptr<arrow::ArrayData> data;
  if (target.column->is_bool) {
    data = arrow::ArrayData::Make(type, length, {nullptr, std::move(target.values_buffer)}, 0);
  } else {
    data = WrapValues(type, length, std::move(target.values_buffer));
  }
  if (target.null_count > 0) {
    data->buffers[0] = std::move(target.validity_buffer);
    data->null_count = target.null_count;
  }
  return data;
}

// Rows [begin, end)'s values of one column of `Word`-sized values at `offset` in their
// records: the width fixed at compile time, so the loop is a load and a store a row.
template <typename Word>
void ScatterWords(const uint8_t* const* records, size_t begin, size_t end, int64_t offset,
                  uint8_t* out) {
  auto* dst = reinterpret_cast<Word*>(out);
  for (size_t i = begin; i < end; ++i) std::memcpy(dst + i, records[i] + offset, sizeof(Word));
}

// Copies rows [begin, end) of one staged column from their records into its output.
void ScatterColumn(const uint8_t* const* records, size_t begin, size_t end, ScatterTarget* t) {
  const RowLayout::Column& c = *t->column;
  if (c.is_bool) {
    for (size_t i = begin; i < end; ++i) {
      arrow::bit_util::SetBitTo(t->values, static_cast<int64_t>(i), records[i][c.offset] != 0);
    }
  } else {
    switch (c.width) {
      case 1:
        ScatterWords<uint8_t>(records, begin, end, c.offset, t->values);
        break;
      case 2:
        ScatterWords<uint16_t>(records, begin, end, c.offset, t->values);
        break;
      case 4:
        ScatterWords<uint32_t>(records, begin, end, c.offset, t->values);
        break;
      case 8:
        ScatterWords<uint64_t>(records, begin, end, c.offset, t->values);
        break;
      default:
        for (size_t i = begin; i < end; ++i) {
          std::memcpy(t->values + i * c.width, records[i] + c.offset, c.width);
        }
    }
  }
  if (t->validity != nullptr) {
    int64_t nulls = 0;
    for (size_t i = begin; i < end; ++i) {
      const bool valid = records[i][c.valid_offset] != 0;
      arrow::bit_util::SetBitTo(t->validity, static_cast<int64_t>(i), valid);
      nulls += valid ? 0 : 1;
    }
    t->null_count += nulls;
  }
}

// Prefetches, for writing, the output lines of rows [begin, end) of every non-bool target:
// a line the scatter writes first must be read from memory before the write completes.
void PrefetchOutputRows(const std::vector<ScatterTarget>& targets, size_t begin, size_t end) {
  for (const ScatterTarget& t : targets) {
    if (t.column->is_bool) continue;
    const uint8_t* last = t.values + end * t.column->width;
    for (const uint8_t* line = t.values + begin * t.column->width; line < last; line += 64) {
      __builtin_prefetch(line, 1);
    }
  }
}

// Gathers every staged column at once, a tile of rows at a time: a row's record is a few
// adjacent cache lines; the next tile's records (and output lines) are prefetched while
// this tile's are scattered column by column, each column a loop of fixed-width copies out
// of records already in cache (no per-value branch on the column's type), into
// consecutive output bytes.
void GatherRecords(const RowLayout& layout, const Gather& g,
                   const std::vector<const StagedUnit*>& units,
                   std::vector<ScatterTarget>* targets) {
  const size_t n = g.row.size();
  std::vector<const uint8_t*> records(n);
  for (size_t i = 0; i < n; ++i) records[i] = units[g.unit[i]]->record(g.row[i]);
  const int64_t lines = std::min<int64_t>((layout.stride + 63) / 64, kMaxPrefetchLines);
  auto prefetch_records = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      for (int64_t line = 0; line < lines; ++line) __builtin_prefetch(records[i] + line * 64);
    }
  };
  prefetch_records(0, std::min(n, kTileRows));
  PrefetchOutputRows(*targets, 0, std::min(n, kTileRows));
  for (size_t tile = 0; tile < n; tile += kTileRows) {
    const size_t tile_end = std::min(n, tile + kTileRows);
    const size_t next_end = std::min(n, tile_end + kTileRows);
    prefetch_records(tile_end, next_end);
    PrefetchOutputRows(*targets, tile_end, next_end);
    for (ScatterTarget& target : *targets) {
      ScatterColumn(records.data(), tile, tile_end, &target);
    }
  }
}

// `given[k]`: the buffer staged column k's values go into (null: a new one); one entry per
// staged column.
arrow::Result<std::vector<ScatterTarget>> MakeTargets(
    const RowLayout& layout, int64_t n, const std::vector<std::shared_ptr<arrow::Buffer>>& given,
    arrow::MemoryPool* pool) {
  std::vector<ScatterTarget> targets;
  for (size_t k = 0; k < layout.columns.size(); ++k) {
    const RowLayout::Column& column = layout.columns[k];
    ScatterTarget t;
    t.column = &column;
    if (column.is_bool) {
      ARROW_ASSIGN_OR_RAISE(t.values_buffer,
                            arrow::AllocateBuffer(arrow::bit_util::BytesForBits(n), pool));
    } else {
      ARROW_ASSIGN_OR_RAISE(t.values_buffer, OutputBuffer(given[k], n * column.width, pool));
    }
    t.values = t.values_buffer->mutable_data();
    if (column.is_bool) std::memset(t.values, 0, t.values_buffer->size());
    if (column.valid_offset >= 0) {
      ARROW_ASSIGN_OR_RAISE(t.validity_buffer,
                            arrow::AllocateBuffer(arrow::bit_util::BytesForBits(n), pool));
      t.validity = t.validity_buffer->mutable_data();
      std::memset(t.validity, 0, t.validity_buffer->size());
    }
    targets.push_back(std::move(t));
  }
  return targets;
}

// The units a batch may read, less those skipped (on_error="skip"): window k's i-th unit is
// units[flat[window_base[k] + i]], or skipped when that is -1.
struct BatchUnits {
  std::vector<const StagedUnit*> units;
  std::vector<int32_t> unit_ids;    // each unit's index into BatchLayout::units
  std::vector<int64_t> first_rows;  // global index of each unit's first row
  std::vector<int64_t> flat;
  std::vector<size_t> window_base;
};

BatchUnits UnitsOf(const std::vector<std::shared_ptr<const LoadedWindow>>& windows,
                   const std::vector<Unit>& plan_units) {
  BatchUnits out;
  for (const auto& window : windows) {
    out.window_base.push_back(out.flat.size());
    for (size_t i = 0; i < window->units.size(); ++i) {
      const StagedUnit& unit = window->units[i];
      if (unit.skipped) {
        out.flat.push_back(-1);
        continue;
      }
      ARROW_DCHECK(!unit.columns.empty()) << "window " << window->index << " not loaded";
      out.flat.push_back(static_cast<int64_t>(out.units.size()));
      out.units.push_back(&unit);
      out.unit_ids.push_back(window->unit_ids[i]);
      out.first_rows.push_back(plan_units[window->unit_ids[i]].first_row);
    }
  }
  return out;
}

// Where each row of the plan's [begin, end) comes from, into `g` (rows of skipped units
// left out), with each gathered row's rank-local offset in `offsets` when `with_offsets`
// (for the plan columns). Returns the hash of the gathered rows' global indices, in order.
uint64_t LocateRows(const EpochPlan& plan, int64_t begin, int64_t end,
                    const std::vector<std::shared_ptr<const LoadedWindow>>& windows,
                    const BatchUnits& units, bool with_offsets, Gather* g,
                    std::vector<int64_t>* offsets) {
  std::vector<RowSource> sources;
  plan.LocateRange(begin, end, &sources);
  g->unit.reserve(end - begin);
  g->row.reserve(end - begin);
  Digest rows_digest;
  size_t slot = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    const RowSource& source = sources[i];
    // Windows only advance along a batch; each scheduled window holds some of its rows.
    while (windows[slot]->index != source.window) ++slot;
    ARROW_DCHECK_LT(slot, windows.size());
    const int64_t unit = units.flat[units.window_base[slot] + source.unit_in_window];
    if (unit < 0) continue;  // its unit was skipped: the row is left out
    g->unit.push_back(static_cast<uint32_t>(unit));
    g->row.push_back(source.row);
    if (with_offsets) offsets->push_back(begin + static_cast<int64_t>(i));
    ARROW_DCHECK_LT(source.row, units.units[unit]->num_rows);
    rows_digest.Add(static_cast<uint64_t>(units.first_rows[unit] + source.row));
  }
  return rows_digest.Fold();
}

// The buffers an OutputTarget gives the output columns; none when rows were left out (they
// are sized for the batch's planned rows).
class GivenBuffers {
 public:
  GivenBuffers(const OutputTarget* target, bool all_rows)
      : given_(target != nullptr && all_rows ? target->columns : None()) {}

  // Output column c's buffer; null when none is given.
  const std::shared_ptr<arrow::Buffer>& operator[](int c) const {
    static const std::shared_ptr<arrow::Buffer> kNull;
    return static_cast<size_t>(c) < given_.size() ? given_[c] : kNull;
  }

 private:
  static const std::vector<std::shared_ptr<arrow::Buffer>>& None() {
    static const std::vector<std::shared_ptr<arrow::Buffer>> kNone;
    return kNone;
  }

  const std::vector<std::shared_ptr<arrow::Buffer>>& given_;
};

// Scatters the staged columns of `units` (every unit of a pipeline is staged with `layout`)
// into their outputs, one ScatterTarget per staged column.
arrow::Result<std::vector<ScatterTarget>> ScatterStaged(const RowLayout& layout,
                                                        const arrow::Schema& schema,
                                                        const Gather& g,
                                                        const std::vector<const StagedUnit*>& units,
                                                        const GivenBuffers& given,
                                                        arrow::MemoryPool* pool) {
  for (const auto* unit : units) ARROW_DCHECK_EQ(unit->layout.get(), &layout);
  std::vector<std::shared_ptr<arrow::Buffer>> staged_given(layout.columns.size());
  for (int c = 0; c < schema.num_fields(); ++c) {
    if (layout.staged[c] >= 0) staged_given[layout.staged[c]] = given[c];
  }
  ARROW_ASSIGN_OR_RAISE(
      auto targets, MakeTargets(layout, static_cast<int64_t>(g.row.size()), staged_given, pool));
  GatherRecords(layout, g, units, &targets);
  return targets;
}

// The ragged columns, each group's values in one allocation (BatchLayout::list_groups), into
// (*grouped)[c]; a column that is not a gatherable list in every unit is left to GatherColumn.
arrow::Status GatherListGroups(const std::vector<std::vector<int>>& list_groups,
                               const arrow::Schema& schema, const Gather& g,
                               const std::vector<const StagedUnit*>& units, arrow::MemoryPool* pool,
                               std::vector<std::shared_ptr<arrow::ArrayData>>* grouped) {
  for (const std::vector<int>& group : list_groups) {
    std::vector<int> members;
    std::vector<std::vector<const arrow::ArrayData*>> group_arrays;
    for (int c : group) {
      std::vector<const arrow::ArrayData*> column(units.size());
      bool gatherable = true;
      for (size_t u = 0; u < units.size(); ++u) {
        column[u] = units[u]->columns[c].get();
        gatherable = gatherable && column[u] != nullptr && IsGatherableList(*column[u]);
      }
      if (!gatherable) continue;  // gathered on its own (GatherColumn)
      members.push_back(c);
      group_arrays.push_back(std::move(column));
    }
    if (members.empty()) continue;
    auto gathered = GatherListGroup(g.unit, g.row, group_arrays, pool);
    if (!gathered.ok()) {
      std::string names;
      for (int c : members) names += (names.empty() ? "'" : ", '") + schema.field(c)->name() + "'";
      return gathered.status().WithMessage("columns ", names, ": ", gathered.status().message(),
                                           "; declare them large_list or use smaller batches");
    }
    for (size_t k = 0; k < members.size(); ++k) (*grouped)[members[k]] = std::move((*gathered)[k]);
  }
  return arrow::Status::OK();
}

// Gathers one unstaged column (`arrays`: each unit's data of it): fixed-width without nulls
// by direct copy (into `given` when it fits), lists of numbers by GatherLists, anything else
// by Arrow's take kernel.
arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherColumn(
    const arrow::Field& field, const Gather& g, const std::vector<const arrow::ArrayData*>& arrays,
    const std::shared_ptr<arrow::Buffer>& given, arrow::MemoryPool* pool) {
  bool nulls = false;
  bool lists = true;
  for (const arrow::ArrayData* array : arrays) {
    nulls = nulls || HasNulls(*array);
    lists = lists && IsGatherableList(*array);
  }
  const auto& type = field.type();
  auto fixed = GetFixedWidthLayout(*type);
  if (fixed.ok() && !nulls) {
    return GatherFixedWidth(type, fixed->row_bytes, g, arrays, given, pool);
  }
  if (!lists) return GatherGeneric(g, arrays, pool);
  auto gathered = GatherLists(g.unit, g.row, arrays, pool);
  if (!gathered.ok()) {
    return gathered.status().WithMessage("column '", field.name(),
                                         "': ", gathered.status().message(),
                                         "; declare it large_list or use smaller batches");
  }
  return std::move(*gathered);
}

}  // namespace

arrow::Result<AssembledBatch> Assembler::Assemble(
    const EpochPlan& plan, int64_t begin, int64_t end,
    const std::vector<std::shared_ptr<const LoadedWindow>>& windows,
    const OutputTarget* target) const {
  ARROW_DCHECK(begin < end && !windows.empty()) << "batch [" << begin << ", " << end << ")";
  const BatchUnits batch_units = UnitsOf(windows, *layout_.units);
  const std::vector<const StagedUnit*>& units = batch_units.units;
  const PlanColumns& plan_columns = layout_.plan_columns;
  const bool with_plan_columns = plan_columns.valid_mask || plan_columns.row_origin;
  Gather g;
  std::vector<int64_t> offsets;  // rank-local offset of each gathered row, for plan columns
  AssembledBatch out;
  out.planned_rows = end - begin;
  out.rows_hash =
      LocateRows(plan, begin, end, windows, batch_units, with_plan_columns, &g, &offsets);

  const auto& batch_schema = with_plan_columns ? layout_.batch_schema : layout_.output_schema;
  arrow::MemoryPool* pool = layout_.pool;
  const auto n = static_cast<int64_t>(g.row.size());
  if (n == 0) {  // every row's unit was skipped
    ARROW_ASSIGN_OR_RAISE(out.batch, arrow::RecordBatch::MakeEmpty(batch_schema, pool));
    return out;
  }
  const auto& schema = layout_.output_schema;
  const GivenBuffers given(target, n == end - begin);
  // Staged columns (every unit of a pipeline is staged with one layout, or none is).
  const RowLayout* layout = units[0]->layout.get();
  std::vector<ScatterTarget> targets;
  if (layout != nullptr) {
    ARROW_ASSIGN_OR_RAISE(targets, ScatterStaged(*layout, *schema, g, units, given, pool));
  }
  std::vector<std::shared_ptr<arrow::ArrayData>> grouped(schema->num_fields());
  ARROW_RETURN_NOT_OK(GatherListGroups(layout_.list_groups, *schema, g, units, pool, &grouped));

  arrow::ArrayDataVector columns;
  std::vector<const arrow::ArrayData*> arrays(units.size());
  for (int c = 0; c < schema->num_fields(); ++c) {
    if (layout != nullptr && layout->staged[c] >= 0) {
      columns.push_back(
          FinishTarget(schema->field(c)->type(), n, std::move(targets[layout->staged[c]])));
    } else if (grouped[c] != nullptr) {
      columns.push_back(std::move(grouped[c]));
    } else {
      for (size_t u = 0; u < units.size(); ++u) arrays[u] = units[u]->columns[c].get();
      ARROW_ASSIGN_OR_RAISE(auto column,
                            GatherColumn(*schema->field(c), g, arrays, given[c], pool));
      columns.push_back(std::move(column));
    }
  }
  if (with_plan_columns) {
    std::vector<int32_t> row_units(n);
    for (int64_t i = 0; i < n; ++i) row_units[i] = batch_units.unit_ids[g.unit[i]];
    ARROW_ASSIGN_OR_RAISE(auto extra, plan_columns.Make(offsets, plan.real_rows(), row_units, g.row,
                                                        *layout_.units, pool));
    for (auto& array : extra) columns.push_back(array->data());
  }
  out.batch = arrow::RecordBatch::Make(batch_schema, n, std::move(columns));
  return out;
}

}  // namespace stoker
