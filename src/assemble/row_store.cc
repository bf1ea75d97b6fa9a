// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/row_store.h"

#include <arrow/util/bit_util.h>
#include <arrow/util/logging.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "assemble/column_types.h"
#include "util/sanitizers.h"

namespace stoker {

namespace {

// Rows staged per block: a block of records (at most kBlockBytes) stays in L2 while each
// column is written into it, so the records are written back to memory once.
constexpr int64_t kBlockBytes = 256 * 1024;
constexpr int64_t kCacheLine = 64;
constexpr int64_t kAlignment = 64;

// Writes `width`-byte values, `count` rows from `src` (contiguous) to records `stride` apart.
void ScatterValues(const uint8_t* src, int64_t width, int64_t count, uint8_t* dst, int64_t stride) {
  // Each width the staged types have is its own loop, so the copy is one load and store
  // (a memcpy of a width known only at run time is a call per value).
  switch (width) {
    case 1:
      for (int64_t i = 0; i < count; ++i) dst[i * stride] = src[i];
      break;
    case 2:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * stride, src + i * 2, 2);
      break;
    case 4:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * stride, src + i * 4, 4);
      break;
    case 8:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * stride, src + i * 8, 8);
      break;
    default:
      for (int64_t i = 0; i < count; ++i) {
        std::memcpy(dst + i * stride, src + i * width, width);
      }
  }
}

// Writes one byte per row (a bit of `bits` at `bit_offset + row`) to records `stride` apart.
void ScatterBits(const uint8_t* bits, int64_t bit_offset, int64_t count, uint8_t* dst,
                 int64_t stride) {
  for (int64_t i = 0; i < count; ++i) {
    dst[i * stride] = arrow::bit_util::GetBit(bits, bit_offset + i) ? 1 : 0;
  }
}

void FillBytes(uint8_t value, int64_t count, uint8_t* dst, int64_t stride) {
  for (int64_t i = 0; i < count; ++i) dst[i * stride] = value;
}

// Stages rows [first, first + count) of one column into the records at `records`.
void StageColumn(const RowLayout::Column& column, const arrow::ArrayData& data, int64_t first,
                 int64_t count, uint8_t* records, int64_t stride) {
  uint8_t* values_out = records + column.offset;
  if (column.is_bool) {
    ScatterBits(data.buffers[1]->data(), data.offset + first, count, values_out, stride);
  } else {
    const FixedWidthValues values = GetFixedWidthValues(data);
    ScatterValues(values.first + first * column.width, column.width, count, values_out, stride);
  }
  if (column.valid_offset < 0) return;
  uint8_t* valid_out = records + column.valid_offset;
  if (data.buffers[0] == nullptr || data.null_count == 0) {
    FillBytes(1, count, valid_out, stride);
  } else {
    ScatterBits(data.buffers[0]->data(), data.offset + first, count, valid_out, stride);
  }
}

// The column of `field` (at `index`) as a record would hold it, or nullopt when it stays
// columnar (see RowLayout::For).
std::optional<RowLayout::Column> StagedColumn(const arrow::Field& field, int index, bool no_nulls) {
  const auto& type = *field.type();
  RowLayout::Column column;
  column.index = index;
  if (type.id() == arrow::Type::BOOL) {
    column.is_bool = true;
    column.width = 1;
  } else {
    if (type.id() == arrow::Type::FIXED_SIZE_LIST && !no_nulls) return std::nullopt;
    auto fixed = GetFixedWidthLayout(type);
    if (!fixed.ok()) return std::nullopt;
    column.width = fixed->row_bytes;
    // A value of a cache line or more is fetched whole either way: staging it would only
    // cost a copy.
    if (column.width >= kCacheLine) return std::nullopt;
  }
  if (field.nullable() && !no_nulls) column.valid_offset = 0;  // placed by PlaceColumns
  return column;
}

// Gives each column its offset in a record — values widest-aligned first, so each stays
// aligned to its width, then the validity bytes — and returns the record's used bytes.
int64_t PlaceColumns(std::vector<RowLayout::Column>* columns) {
  auto alignment = [](const RowLayout::Column& c) {
    return c.width % 8 == 0 ? 8 : c.width % 4 == 0 ? 4 : c.width % 2 == 0 ? 2 : 1;
  };
  std::vector<RowLayout::Column*> order;
  for (auto& column : *columns) order.push_back(&column);
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto* a, const auto* b) { return alignment(*a) > alignment(*b); });
  int64_t offset = 0;
  for (auto* column : order) {
    column->offset = offset;
    offset += column->width;
  }
  for (auto* column : order) {
    if (column->valid_offset >= 0) column->valid_offset = offset++;
  }
  return offset;
}

}  // namespace

RowLayout RowLayout::For(const arrow::Schema& schema, bool no_nulls, int64_t max_chunk_bytes) {
  return For(schema, std::vector<bool>(schema.num_fields(), no_nulls), max_chunk_bytes);
}

RowLayout RowLayout::For(const arrow::Schema& schema, const std::vector<bool>& no_nulls,
                         int64_t max_chunk_bytes) {
  RowLayout layout;
  layout.staged.assign(schema.num_fields(), -1);
  std::vector<Column> columns;
  for (int i = 0; i < schema.num_fields(); ++i) {
    if (auto column = StagedColumn(*schema.field(i), i, no_nulls[i])) columns.push_back(*column);
  }
  // One staged column gathers no better than it did columnar.
  if (columns.size() < 2) return layout;
  layout.stride = (PlaceColumns(&columns) + 7) / 8 * 8;
  while ((layout.stride << (layout.chunk_shift + 1)) <= max_chunk_bytes) ++layout.chunk_shift;
  layout.columns = std::move(columns);
  for (size_t k = 0; k < layout.columns.size(); ++k) {
    layout.staged[layout.columns[k].index] = static_cast<int>(k);
  }
  return layout;
}

StagedUnit::StagedUnit(const std::shared_ptr<arrow::RecordBatch>& batch)
    : num_rows(batch->num_rows()), columns(batch->column_data()) {}

// A chunk handed out by a ChunkPool: `size` bytes of a block of `capacity`, returned to the
// pool when destroyed.
class ChunkPool::Chunk final : public arrow::MutableBuffer {
 public:
  Chunk(uint8_t* data, int64_t size, int64_t capacity, std::shared_ptr<ChunkPool> owner)
      : arrow::MutableBuffer(data, size), capacity_(capacity), owner_(std::move(owner)) {}
  ~Chunk() override { owner_->Release({mutable_data(), capacity_}); }

 private:
  const int64_t capacity_;
  std::shared_ptr<ChunkPool> owner_;
};

std::shared_ptr<ChunkPool> ChunkPool::Make(int64_t chunk_bytes, arrow::MemoryPool* pool) {
  return std::shared_ptr<ChunkPool>(new ChunkPool(chunk_bytes, pool));
}

ChunkPool::~ChunkPool() {
  for (const Block& block : free_) Free(block);
}

void ChunkPool::Free(const Block& block) {
  UnpoisonMemory(block.data, block.capacity);
  pool_->Free(block.data, block.capacity, kAlignment);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> ChunkPool::Acquire(int64_t bytes) {
  ARROW_DCHECK_LE(bytes, chunk_bytes_);
  // A free block of exactly this size, else the smallest that holds it. A unit smaller
  // than a chunk (a row group of fewer rows) asks for the same size again and again.
  std::optional<Block> block;
  std::optional<Block> evicted;
  {
    MutexLock lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->capacity < bytes) continue;
      if (best == free_.end() || it->capacity < best->capacity) best = it;
      if (it->capacity == bytes) break;
    }
    if (best != free_.end()) {
      block = *best;
    } else if (!free_.empty()) {
      // None holds it: free one, so that the blocks in use and free never outnumber the
      // most that were in use at once.
      best = free_.begin();
      evicted = *best;
    }
    if (best != free_.end()) {
      *best = free_.back();
      free_.pop_back();
    }
  }
  if (evicted) Free(*evicted);
  if (!block) {
    block = Block{nullptr, bytes};
    ARROW_RETURN_NOT_OK(pool_->Allocate(bytes, kAlignment, &block->data));
  }
  UnpoisonMemory(block->data, block->capacity);
  return std::make_shared<Chunk>(block->data, bytes, block->capacity, shared_from_this());
}

void ChunkPool::Release(Block block) {
  PoisonMemory(block.data, block.capacity);
  MutexLock lock(mutex_);
  free_.push_back(block);
}

arrow::Result<StagedUnit> Stage(std::shared_ptr<const RowLayout> layout,
                                const std::shared_ptr<arrow::RecordBatch>& batch,
                                ChunkPool* chunks) {
  StagedUnit unit(batch);
  if (layout->empty()) return unit;
  const int64_t stride = layout->stride;
  const int64_t chunk_rows = int64_t{1} << layout->chunk_shift;
  // Blocks of rows that stay in L2 while every column is written into them; a block never
  // spans two chunks.
  const int64_t block = std::clamp<int64_t>(kBlockBytes / stride, 1, chunk_rows);
  for (int64_t chunk_first = 0; chunk_first < unit.num_rows; chunk_first += chunk_rows) {
    const int64_t chunk_count = std::min(chunk_rows, unit.num_rows - chunk_first);
    ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::Buffer> chunk,
                          chunks->Acquire(chunk_count * stride));
    uint8_t* records = chunk->mutable_data();
    for (int64_t first = 0; first < chunk_count; first += block) {
      const int64_t count = std::min(block, chunk_count - first);
      for (const auto& column : layout->columns) {
        const auto& data = *unit.columns[column.index];
        ARROW_DCHECK_EQ(data.length, unit.num_rows);
        StageColumn(column, data, chunk_first + first, count, records + first * stride, stride);
      }
    }
    unit.chunks.push_back(std::move(chunk));
  }
  // The staged columns live in the records now; release their columnar copies.
  for (const auto& column : layout->columns) unit.columns[column.index] = nullptr;
  unit.layout = std::move(layout);
  return unit;
}

}  // namespace stoker
