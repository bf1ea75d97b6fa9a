// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/assembler.h"

#include <arrow/array.h>
#include <arrow/array/concatenate.h>
#include <arrow/buffer.h>
#include <arrow/builder.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/exec.h>
#include <arrow/util/logging.h>

#include <cstring>

#include "assemble/column_types.h"
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

arrow::Result<std::shared_ptr<arrow::ArrayData>> GatherFixedWidth(
    const std::shared_ptr<arrow::DataType>& type, int64_t row_bytes, const Gather& g,
    const std::vector<const arrow::ArrayData*>& arrays, arrow::MemoryPool* pool) {
  const auto n = static_cast<int64_t>(g.row.size());
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> buffer,
                        arrow::AllocateBuffer(n * row_bytes, pool));
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

}  // namespace

arrow::Result<AssembledBatch> Assembler::Assemble(
    const EpochPlan& plan, int64_t begin, int64_t end,
    const std::vector<std::shared_ptr<const LoadedWindow>>& windows) const {
  ARROW_DCHECK(begin < end && !windows.empty()) << "batch [" << begin << ", " << end << ")";
  std::vector<const arrow::RecordBatch*> units;
  std::vector<int64_t> first_rows;  // global index of each unit's first row
  std::vector<uint32_t> window_base;
  for (const auto& window : windows) {
    window_base.push_back(static_cast<uint32_t>(units.size()));
    for (size_t i = 0; i < window->units.size(); ++i) {
      ARROW_DCHECK(window->units[i] != nullptr) << "window " << window->index << " not loaded";
      units.push_back(window->units[i].get());
      first_rows.push_back(source_->units[window->unit_ids[i]].first_row);
    }
  }
  Digest rows_digest;

  Gather g;
  g.unit.resize(end - begin);
  g.row.resize(end - begin);
  size_t slot = 0;
  int64_t window = windows[0]->index;
  Permutation rows = plan.WindowRows(window);
  for (int64_t offset = begin; offset < end; ++offset) {
    const int64_t pos = plan.Position(offset);
    // Positions only increase; each scheduled window of the batch holds some of them.
    while (pos >= plan.windows()[window].first_row + plan.windows()[window].num_rows) {
      ARROW_DCHECK_LT(slot + 1, windows.size()) << "position " << pos << " is past the windows";
      window = windows[++slot]->index;
      rows = plan.WindowRows(window);
    }
    const RowSource source = plan.Locate(pos, window, rows);
    g.unit[offset - begin] = window_base[slot] + static_cast<uint32_t>(source.unit_in_window);
    g.row[offset - begin] = source.row;
    ARROW_DCHECK_LT(source.row, units[g.unit[offset - begin]]->num_rows());
    rows_digest.Add(static_cast<uint64_t>(first_rows[g.unit[offset - begin]] + source.row));
  }

  arrow::ArrayDataVector columns;
  std::vector<const arrow::ArrayData*> arrays(units.size());
  const auto& schema = source_->output_schema;
  arrow::MemoryPool* pool = source_->pool;
  for (int c = 0; c < schema->num_fields(); ++c) {
    bool nulls = false;
    for (size_t u = 0; u < units.size(); ++u) {
      arrays[u] = units[u]->column_data(c).get();
      nulls = nulls || HasNulls(*arrays[u]);
    }
    const auto& type = schema->field(c)->type();
    auto layout = GetFixedWidthLayout(*type);
    std::shared_ptr<arrow::ArrayData> column;
    if (layout.ok() && !nulls) {
      ARROW_ASSIGN_OR_RAISE(column, GatherFixedWidth(type, layout->row_bytes, g, arrays, pool));
    } else {
      ARROW_ASSIGN_OR_RAISE(column, GatherGeneric(g, arrays, pool));
    }
    columns.push_back(std::move(column));
  }
  AssembledBatch out;
  out.batch = arrow::RecordBatch::Make(schema, end - begin, std::move(columns));
  out.rows_hash = rows_digest.Fold();
  return out;
}

}  // namespace stoker
