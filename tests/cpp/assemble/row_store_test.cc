// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Staging units row-major is invisible in the output: every batch assembled from staged
// units equals the one assembled from the same units left columnar, for every column type
// the layout stages (with and without nulls) and those it leaves alone, across record-chunk
// boundaries and windows of units of unequal sizes.
#include "assemble/row_store.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "assemble/assembler.h"
#include "exec/unit_reader.h"
#include "plan/plan.h"
#include "util/digest.h"

namespace stoker {
namespace {

std::shared_ptr<arrow::Schema> MixedSchema(bool nullable) {
  return arrow::schema({
      arrow::field("id", arrow::int64(), false),
      arrow::field("f32", arrow::float32(), nullable),
      arrow::field("f64", arrow::float64(), nullable),
      arrow::field("i8", arrow::int8(), nullable),
      arrow::field("u16", arrow::uint16(), nullable),
      arrow::field("flag", arrow::boolean(), nullable),
      arrow::field("vec", arrow::fixed_size_list(arrow::field("item", arrow::float32(), false), 3),
                   false),
      arrow::field("name", arrow::utf8(), nullable),
      arrow::field("wide", arrow::fixed_size_list(arrow::float64(), 16), false),
  });
}

// Unit `u` of `rows` rows; values depend on the global row, nulls (when `nulls`) on every
// 5th row of the nullable columns.
std::shared_ptr<arrow::RecordBatch> MakeUnit(const std::shared_ptr<arrow::Schema>& schema,
                                             int64_t first_row, int64_t rows, bool nulls) {
  arrow::Int64Builder id;
  arrow::FloatBuilder f32, vec_values;
  arrow::DoubleBuilder f64, wide_values;
  arrow::Int8Builder i8;
  arrow::UInt16Builder u16;
  arrow::BooleanBuilder flag;
  arrow::StringBuilder name;
  for (int64_t r = first_row; r < first_row + rows; ++r) {
    const bool null = nulls && r % 5 == 0;
    EXPECT_TRUE(id.Append(r).ok());
    EXPECT_TRUE((null ? f32.AppendNull() : f32.Append(r * 0.5f)).ok());
    EXPECT_TRUE((null ? f64.AppendNull() : f64.Append(r * 0.25)).ok());
    EXPECT_TRUE((null ? i8.AppendNull() : i8.Append(static_cast<int8_t>(r % 100))).ok());
    EXPECT_TRUE((null ? u16.AppendNull() : u16.Append(static_cast<uint16_t>(r * 7))).ok());
    EXPECT_TRUE((null ? flag.AppendNull() : flag.Append(r % 3 == 0)).ok());
    EXPECT_TRUE((null ? name.AppendNull() : name.Append("row" + std::to_string(r))).ok());
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(vec_values.Append(r + k * 0.1f).ok());
    for (int k = 0; k < 16; ++k) EXPECT_TRUE(wide_values.Append(r * 16.0 + k).ok());
  }
  auto vec = arrow::FixedSizeListArray::FromArrays(vec_values.Finish().ValueOrDie(),
                                                   schema->field(6)->type())
                 .ValueOrDie();
  auto wide = arrow::FixedSizeListArray::FromArrays(wide_values.Finish().ValueOrDie(),
                                                    schema->field(8)->type())
                  .ValueOrDie();
  return arrow::RecordBatch::Make(
      schema, rows,
      {id.Finish().ValueOrDie(), f32.Finish().ValueOrDie(), f64.Finish().ValueOrDie(),
       i8.Finish().ValueOrDie(), u16.Finish().ValueOrDie(), flag.Finish().ValueOrDie(), vec,
       name.Finish().ValueOrDie(), wide});
}

struct Fixture {
  std::shared_ptr<UnitSource> source;
  std::vector<std::shared_ptr<arrow::RecordBatch>> units;
  std::vector<int64_t> unit_rows;
};

Fixture MakeFixture(const std::shared_ptr<arrow::Schema>& schema,
                    const std::vector<int64_t>& unit_rows, bool nulls) {
  Fixture f;
  f.source = std::make_shared<UnitSource>();
  f.source->output_schema = schema;
  f.source->pool = arrow::default_memory_pool();
  f.unit_rows = unit_rows;
  int64_t first = 0;
  for (int64_t rows : unit_rows) {
    Unit unit;
    unit.num_rows = rows;
    unit.first_row = first;
    f.source->units.push_back(unit);
    f.units.push_back(MakeUnit(schema, first, rows, nulls));
    first += rows;
  }
  return f;
}

// Every batch of the epoch, assembled from the plan's windows staged with `layout` (or left
// columnar when it is null).
std::vector<AssembledBatch> AssembleEpoch(const Fixture& f, const EpochPlan& plan,
                                          const std::shared_ptr<const RowLayout>& layout) {
  auto chunks =
      layout ? ChunkPool::Make(layout->stride << layout->chunk_shift, f.source->pool) : nullptr;
  std::vector<std::shared_ptr<const LoadedWindow>> windows;
  for (int64_t w = 0; w < static_cast<int64_t>(plan.windows().size()); ++w) {
    auto window = std::make_shared<LoadedWindow>();
    window->index = w;
    const Window& spec = plan.windows()[w];
    for (int64_t i = 0; i < spec.num_units; ++i) {
      const int32_t unit = plan.unit_order()[spec.first_unit + i];
      window->unit_ids.push_back(unit);
      if (layout) {
        auto staged = Stage(layout, f.units[unit], chunks.get());
        EXPECT_TRUE(staged.ok()) << staged.status().ToString();
        window->units.push_back(std::move(*staged));
      } else {
        window->units.emplace_back(f.units[unit]);
      }
    }
    windows.push_back(std::move(window));
  }
  const Assembler assembler(LayoutOf(f.source));
  std::vector<AssembledBatch> out;
  for (int64_t b = 0; b < plan.num_batches(); ++b) {
    const auto [begin, end] = plan.BatchRange(b);
    const auto [first, last] = plan.ScheduleRange(b);
    std::vector<std::shared_ptr<const LoadedWindow>> needed(windows.begin() + first,
                                                            windows.begin() + last + 1);
    auto batch = assembler.Assemble(plan, begin, end, needed);
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    out.push_back(std::move(*batch));
  }
  return out;
}

void ExpectStagingInvisible(bool nullable, bool nulls, bool no_nulls, int64_t chunk_bytes) {
  const auto schema = MixedSchema(nullable);
  const Fixture f = MakeFixture(schema, {37, 100, 1, 64, 250, 9}, nulls);
  PlanConfig config;
  config.seed = 11;
  config.window_rows = 150;
  config.batch_size = 32;
  auto plan = EpochPlan::Make(f.unit_rows, config);
  ASSERT_TRUE(plan.ok());
  auto layout = std::make_shared<const RowLayout>(RowLayout::For(*schema, no_nulls, chunk_bytes));
  ASSERT_FALSE(layout->empty());
  const auto columnar = AssembleEpoch(f, *plan, nullptr);
  const auto staged = AssembleEpoch(f, *plan, layout);
  ASSERT_EQ(columnar.size(), staged.size());
  for (size_t b = 0; b < columnar.size(); ++b) {
    ASSERT_TRUE(staged[b].batch->Validate().ok());
    EXPECT_TRUE(staged[b].batch->Equals(*columnar[b].batch))
        << "batch " << b << "\nstaged:\n"
        << staged[b].batch->ToString() << "\ncolumnar:\n"
        << columnar[b].batch->ToString();
    EXPECT_EQ(staged[b].rows_hash, columnar[b].rows_hash);
  }
}

TEST(RowLayoutTest, StagesNarrowFixedWidthColumnsOnly) {
  const auto layout = RowLayout::For(*MixedSchema(true), /*no_nulls=*/true);
  // id, f32, f64, i8, u16, flag, vec staged; name (string) and wide (128 bytes) not.
  EXPECT_EQ(layout.columns.size(), 7u);
  EXPECT_EQ(layout.staged[7], -1);
  EXPECT_EQ(layout.staged[8], -1);
  EXPECT_EQ(layout.stride % 8, 0);
  for (const auto& column : layout.columns) {
    EXPECT_LE(column.offset + column.width, layout.stride);
    // Values are aligned to their element width within a record.
    if (column.width % 8 == 0) EXPECT_EQ(column.offset % 8, 0);
  }
  for (const auto& column : layout.columns) EXPECT_EQ(column.valid_offset, -1);
  // Where nulls are possible: no fixed-size lists, a validity flag per nullable field.
  const auto nullable = RowLayout::For(*MixedSchema(true), /*no_nulls=*/false);
  EXPECT_EQ(nullable.staged[6], -1);
  for (const auto& column : nullable.columns) {
    EXPECT_EQ(column.valid_offset >= 0, column.index != 0) << column.index;  // id: not null
  }
}

TEST(RowLayoutTest, ValidityFlagsOnlyForFieldsThatMayHoldNulls) {
  // Per field: f32 and flag are known null-free (Arrow output, by statistics), the others not.
  std::vector<bool> no_nulls(9, false);
  no_nulls[1] = no_nulls[5] = true;
  const auto layout = RowLayout::For(*MixedSchema(true), no_nulls);
  EXPECT_EQ(layout.staged[6], -1);  // a fixed-size list that may hold nulls stays columnar
  for (const auto& column : layout.columns) {
    const bool flagged = column.index != 0 && !no_nulls[column.index];  // id: not nullable
    EXPECT_EQ(column.valid_offset >= 0, flagged) << column.index;
  }
}

TEST(RowLayoutTest, NothingStagedForASingleNarrowColumn) {
  auto schema = arrow::schema({arrow::field("x", arrow::int64()), arrow::field("s", arrow::utf8()),
                               arrow::field("e", arrow::fixed_size_list(arrow::float32(), 64))});
  EXPECT_TRUE(RowLayout::For(*schema, true).empty());
}

TEST(RowStoreTest, StagedEqualsColumnarWithoutNulls) {
  ExpectStagingInvisible(/*nullable=*/false, /*nulls=*/false, /*no_nulls=*/true,
                         RowLayout::kMaxChunkBytes);
}

TEST(RowStoreTest, StagedEqualsColumnarAcrossSmallChunks) {
  // Chunks of a few records: every unit spans several, some end mid-chunk.
  ExpectStagingInvisible(false, false, true, /*chunk_bytes=*/256);
}

TEST(RowStoreTest, StagedEqualsColumnarWithNulls) {
  ExpectStagingInvisible(/*nullable=*/true, /*nulls=*/true, /*no_nulls=*/false, 512);
}

TEST(RowStoreTest, StagedEqualsColumnarNullableWithoutNulls) {
  ExpectStagingInvisible(/*nullable=*/true, /*nulls=*/false, /*no_nulls=*/false, 512);
}

TEST(RowStoreTest, StagedEqualsColumnarForTensorsOfNullableFields) {
  // Tensor output: nullable fields that hold no nulls get no validity flags.
  ExpectStagingInvisible(/*nullable=*/true, /*nulls=*/false, /*no_nulls=*/true, 512);
}

TEST(RowStoreTest, StagingReleasesTheStagedColumns) {
  const auto schema = MixedSchema(false);
  const auto batch = MakeUnit(schema, 0, 10, false);
  auto layout = std::make_shared<const RowLayout>(RowLayout::For(*schema, true));
  auto chunks =
      ChunkPool::Make(layout->stride << layout->chunk_shift, arrow::default_memory_pool());
  auto staged = Stage(layout, batch, chunks.get());
  ASSERT_TRUE(staged.ok());
  for (int c = 0; c < schema->num_fields(); ++c) {
    EXPECT_EQ(staged->columns[c] == nullptr, layout->staged[c] >= 0) << c;
  }
  EXPECT_EQ(staged->num_rows, 10);
  // Row 3's id sits at its record's offset.
  const auto& id = layout->columns[layout->staged[0]];
  int64_t value = 0;
  std::memcpy(&value, staged->record(3) + id.offset, sizeof(value));
  EXPECT_EQ(value, 3);
}

TEST(ChunkPoolTest, RecyclesFullChunksAndOutlivesItsOwner) {
  auto pool = ChunkPool::Make(4096, arrow::default_memory_pool());
  const uint8_t* first = nullptr;
  {
    auto a = pool->Acquire(4096);
    ASSERT_TRUE(a.ok());
    first = (*a)->data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  auto b = pool->Acquire(4096);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->data(), first);  // the released chunk came back
  auto small = pool->Acquire(100);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)->size(), 100);
  // Buffers keep their pool alive: dropping the owner's reference first is safe.
  pool.reset();
  b->reset();
}

TEST(ChunkPoolTest, RecyclesSmallerChunksWithinItsBound) {
  auto pool = ChunkPool::Make(4096, arrow::default_memory_pool());
  const uint8_t* unit = nullptr;
  {
    auto a = pool->Acquire(1000);  // a unit of fewer rows than a chunk
    ASSERT_TRUE(a.ok());
    unit = (*a)->data();
  }
  const uint8_t* larger = nullptr;
  {
    auto again = pool->Acquire(1000);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->data(), unit);  // the same size comes back
    EXPECT_EQ((*again)->size(), 1000);
  }
  {
    // No kept block holds 2000 bytes: the kept one is freed, a new one allocated.
    auto big = pool->Acquire(2000);
    ASSERT_TRUE(big.ok());
    EXPECT_EQ((*big)->size(), 2000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*big)->data()) % 64, 0u);
    larger = (*big)->data();
  }
  auto smaller = pool->Acquire(1500);  // the kept 2000-byte block holds it
  ASSERT_TRUE(smaller.ok());
  EXPECT_EQ((*smaller)->data(), larger);
  EXPECT_EQ((*smaller)->size(), 1500);
}

}  // namespace
}  // namespace stoker
