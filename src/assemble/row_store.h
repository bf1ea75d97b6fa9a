// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/buffer.h>
#include <arrow/memory_pool.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "util/thread_annotations.h"

namespace stoker {

/// Where each fixed-width column sits in a row-major record (see RowStore).
///
/// A shuffled batch gathers rows from random places of a window much larger than the CPU
/// caches. Gathered column by column, every value of every row is its own cache miss (and
/// its own TLB miss: the columns lie in different pages). Staged row-major, a row's values
/// are adjacent, so gathering a row costs a few consecutive cache lines, which one prefetch
/// can bring in while the previous rows are scattered into the batch's columns.
struct RowLayout {
  struct Column {
    /// Index of the column in the output schema.
    int index = 0;
    /// Byte offset of its values in a record, and their width (a fixed-size list's whole
    /// row; bool takes one byte, 0 or 1).
    int64_t offset = 0;
    int64_t width = 0;
    /// Byte offset of its validity flag (1 = valid), or -1 when the field is not nullable
    /// and has no flag.
    int64_t valid_offset = -1;
    bool is_bool = false;
  };
  /// The staged columns, in output-schema order.
  std::vector<Column> columns;
  /// Bytes per record (a multiple of 8, so 8-byte values stay aligned).
  int64_t stride = 0;
  /// Records are stored in chunks of 2^chunk_shift rows (at most kMaxChunkBytes, and at
  /// least one row), recycled by a ChunkPool from window to window.
  int chunk_shift = 0;
  static constexpr int64_t kMaxChunkBytes = 4 << 20;
  /// Per output column: its index in `columns`, or -1 when it stays columnar.
  std::vector<int> staged;

  /// The layout for batches of `schema`: numbers, bool and (when `no_nulls`) fixed-size
  /// lists of numbers narrower than a cache line are staged; wider values (a whole line is
  /// fetched for them anyway) and every other type (strings, variable lists, ...) stay
  /// columnar, and so does everything when fewer than two columns would be staged.
  /// `no_nulls`: the units are known to hold no nulls (tensor output refuses them before
  /// staging), so records carry no validity flags, and fixed-size lists (which may hold
  /// nulls inside, which a record cannot) may be staged. Otherwise each nullable field gets
  /// a validity flag.
  static RowLayout For(const arrow::Schema& schema, bool no_nulls,
                       int64_t max_chunk_bytes = kMaxChunkBytes);
  /// The same with `no_nulls` per field: a field known to hold no nulls gets no validity
  /// flag (and may be a staged fixed-size list).
  static RowLayout For(const arrow::Schema& schema, const std::vector<bool>& no_nulls,
                       int64_t max_chunk_bytes = kMaxChunkBytes);
  bool empty() const { return columns.empty(); }
};

/// A finished unit as the assembler reads it: the columns that stay columnar, and the staged
/// ones row-major in `rows` (absent when nothing is staged).
struct StagedUnit {
  StagedUnit() = default;
  /// An unstaged unit: every column of `batch`, columnar.
  StagedUnit(const std::shared_ptr<arrow::RecordBatch>& batch);  // NOLINT: implicit by design

  int64_t num_rows = 0;
  /// Per output column its data, or null for a staged column (its memory was released).
  std::vector<std::shared_ptr<arrow::ArrayData>> columns;
  /// num_rows records of layout->stride bytes in chunks of 2^layout->chunk_shift records
  /// (64-byte aligned); empty when unstaged.
  std::vector<std::shared_ptr<arrow::Buffer>> chunks;
  std::shared_ptr<const RowLayout> layout;
  /// The unit could not be read and was skipped (on_error="skip"): it holds nothing, and
  /// batches leave its rows out.
  bool skipped = false;

  /// The record of row `row` (requires a staged unit).
  const uint8_t* record(int64_t row) const {
    return chunks[row >> layout->chunk_shift]->data() +
           (row & ((int64_t{1} << layout->chunk_shift) - 1)) * layout->stride;
  }
};

/// Recycles the record chunks of staged units. The allocator hands large freed blocks back
/// to the kernel within a second, so without recycling every window would fault all its
/// record pages in again (microseconds each on a VM). Every released chunk is kept for
/// reuse — a full one, or a unit's smaller one (row groups smaller than a chunk ask for the
/// same size again and again); a request takes a kept block of its size, else the smallest
/// that holds it. Its bound: the blocks in use and kept never outnumber the most that were in
/// use at once (a request that no kept block holds frees one first), each at most
/// chunk_bytes; it frees them when the last chunk and the pool's owner are gone. Thread-safe.
class ChunkPool : public std::enable_shared_from_this<ChunkPool> {
 public:
  static std::shared_ptr<ChunkPool> Make(int64_t chunk_bytes, arrow::MemoryPool* pool);
  ~ChunkPool();
  /// A buffer of `bytes` (<= chunk_bytes), 64-byte aligned: a recycled block when one
  /// holds it.
  arrow::Result<std::shared_ptr<arrow::Buffer>> Acquire(int64_t bytes);
  int64_t chunk_bytes() const { return chunk_bytes_; }

 private:
  class Chunk;
  struct Block {
    uint8_t* data = nullptr;
    int64_t capacity = 0;
  };
  ChunkPool(int64_t chunk_bytes, arrow::MemoryPool* pool)
      : chunk_bytes_(chunk_bytes), pool_(pool) {}
  void Release(Block block);
  void Free(const Block& block);

  const int64_t chunk_bytes_;
  arrow::MemoryPool* const pool_;
  Mutex mutex_;
  /// Released blocks: at most the chunks ever in use at once.
  std::vector<Block> free_ GUARDED_BY(mutex_);
};

/// Stages the layout's columns of a finished unit row-major: one sequential pass, in blocks
/// of rows that stay in L2 while every column is written into them. The returned unit keeps
/// the unstaged columns of `batch` and releases the others, so memory does not grow.
arrow::Result<StagedUnit> Stage(std::shared_ptr<const RowLayout> layout,
                                const std::shared_ptr<arrow::RecordBatch>& batch,
                                ChunkPool* chunks);

}  // namespace stoker
