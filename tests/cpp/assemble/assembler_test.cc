// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/assembler.h"

#include <arrow/api.h>
#include <arrow/compute/api_vector.h>
#include <arrow/io/file.h>
#include <arrow/util/thread_pool.h>
#include <gtest/gtest.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/writer.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "assemble/row_store.h"
#include "common/fixtures.h"
#include "exec/unit_reader.h"
#include "manifest/manifest.h"
#include "plan/plan.h"
#include "util/digest.h"

namespace stoker {
namespace {

// Rows per file: units of 100 rows, and a short last row group in the middle file.
constexpr int64_t kFileRows[] = {300, 250, 300};
constexpr int64_t kRowGroupRows = 100;

// Writes one file whose rows are global rows [first, first + rows): every width the
// fixed-width gather copies (1, 2, 4 and 8 bytes, a 12-byte list, a nested list) and the
// types that go through the generic gather (bool, string, nullable). `sparse` holds nulls
// only in file 0, so a batch takes the fixed-width or the generic path depending on which
// units it reads.
void WriteFile(const std::filesystem::path& path, int file, int64_t first, int64_t rows) {
  arrow::Int64Builder id;
  arrow::Int8Builder i8;
  arrow::Int16Builder i16;
  arrow::FloatBuilder f32;
  arrow::FloatBuilder vec_values;
  arrow::Int16Builder grid_values;
  arrow::BooleanBuilder flag;
  arrow::StringBuilder name;
  arrow::Int32Builder maybe;
  arrow::Int32Builder sparse;
  for (int64_t r = first; r < first + rows; ++r) {
    ASSERT_TRUE(id.Append(r).ok());
    ASSERT_TRUE(i8.Append(static_cast<int8_t>(r % 100)).ok());
    ASSERT_TRUE(i16.Append(static_cast<int16_t>(r * 3)).ok());
    ASSERT_TRUE(f32.Append(static_cast<float>(r) / 4).ok());
    for (int k = 0; k < 3; ++k) ASSERT_TRUE(vec_values.Append(static_cast<float>(r + k)).ok());
    for (int k = 0; k < 4; ++k) ASSERT_TRUE(grid_values.Append(static_cast<int16_t>(r + k)).ok());
    ASSERT_TRUE(flag.Append(r % 3 == 0).ok());
    ASSERT_TRUE(name.Append("row" + std::to_string(r)).ok());
    ASSERT_TRUE((r % 7 == 0 ? maybe.AppendNull() : maybe.Append(static_cast<int32_t>(r))).ok());
    const bool null = file == 0 && r % 5 == 0;
    ASSERT_TRUE((null ? sparse.AppendNull() : sparse.Append(static_cast<int32_t>(-r))).ok());
  }
  auto vec =
      arrow::FixedSizeListArray::FromArrays(vec_values.Finish().ValueOrDie(), 3).ValueOrDie();
  auto rows_of_grid =
      arrow::FixedSizeListArray::FromArrays(grid_values.Finish().ValueOrDie(), 2).ValueOrDie();
  auto grid = arrow::FixedSizeListArray::FromArrays(rows_of_grid, 2).ValueOrDie();
  auto schema = arrow::schema(
      {arrow::field("id", arrow::int64()), arrow::field("i8", arrow::int8()),
       arrow::field("i16", arrow::int16()), arrow::field("f32", arrow::float32()),
       arrow::field("vec", vec->type()), arrow::field("grid", grid->type()),
       arrow::field("flag", arrow::boolean()), arrow::field("name", arrow::utf8()),
       arrow::field("maybe", arrow::int32()), arrow::field("sparse", arrow::int32())});
  auto table =
      arrow::Table::Make(schema, {id.Finish().ValueOrDie(), i8.Finish().ValueOrDie(),
                                  i16.Finish().ValueOrDie(), f32.Finish().ValueOrDie(), vec, grid,
                                  flag.Finish().ValueOrDie(), name.Finish().ValueOrDie(),
                                  maybe.Finish().ValueOrDie(), sparse.Finish().ValueOrDie()});
  auto out = arrow::io::FileOutputStream::Open(path.string()).ValueOrDie();
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out, kRowGroupRows,
                                         parquet::default_writer_properties(), arrow_properties)
                  .ok());
  ASSERT_TRUE(out->Close().ok());
}

class AssemblerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int64_t first = 0;
    for (int f = 0; f < 3; ++f) {
      WriteFile(dir_.path() / ("part-" + std::to_string(f) + ".parquet"), f, first, kFileRows[f]);
      first += kFileRows[f];
    }
    source_ = std::make_shared<UnitSource>();
    source_->manifest = Manifest::Make({dir_.path().string()}, {}).ValueOrDie();
    source_->units = source_->manifest->units();
    source_->output_schema = source_->manifest->schema();
    source_->output = OutputKind::kArrow;
    source_->pool = arrow::default_memory_pool();
    source_->io_executor = arrow::internal::ThreadPool::Make(2).ValueOrDie();
    for (const auto& unit : source_->units) unit_rows_.push_back(unit.num_rows);
    all_rows_ = ReadAllRows();
  }

  // Every row of the dataset in global order, read straight from the files.
  std::shared_ptr<arrow::Table> ReadAllRows() {
    std::vector<std::shared_ptr<arrow::Table>> tables;
    for (const auto& file : source_->manifest->files()) {
      auto input = arrow::io::ReadableFile::Open(file.source.path).ValueOrDie();
      auto reader = parquet::arrow::OpenFile(input, arrow::default_memory_pool()).ValueOrDie();
      tables.push_back(reader->ReadTable().ValueOrDie());
    }
    return arrow::ConcatenateTables(tables).ValueOrDie();
  }

  // The window at `scheduled` in plan.window_schedule(), its units read from the files
  // (staged row-major with `layout` when it is set).
  std::shared_ptr<const LoadedWindow> Load(const EpochPlan& plan, int64_t scheduled,
                                           const std::shared_ptr<const RowLayout>& layout = nullptr,
                                           ChunkPool* chunks = nullptr) {
    auto window = std::make_shared<LoadedWindow>();
    window->index = plan.window_schedule()[scheduled];
    const Window& w = plan.windows()[window->index];
    for (int64_t i = 0; i < w.num_units; ++i) {
      const int32_t id = plan.unit_order()[w.first_unit + i];
      window->unit_ids.push_back(id);
      auto unit =
          ReadRowGroup(*source_, source_->units[id], AllColumns(*source_), &stats_).ValueOrDie();
      if (layout != nullptr) {
        window->units.push_back(Stage(layout, unit, chunks).ValueOrDie());
      } else {
        window->units.emplace_back(std::move(unit));
      }
    }
    return window;
  }

  // Assembles every batch of `plan` and checks each against the rows the plan names.
  void ExpectBatchesArePlannedRows(const EpochPlan& plan) {
    const Assembler assembler(LayoutOf(source_));
    std::map<int64_t, std::shared_ptr<const LoadedWindow>> loaded;
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      const auto [first, last] = plan.ScheduleRange(b);
      std::vector<std::shared_ptr<const LoadedWindow>> windows;
      for (int64_t s = first; s <= last; ++s) {
        if (loaded.count(s) == 0) loaded[s] = Load(plan, s);
        windows.push_back(loaded[s]);
      }
      const auto [begin, end] = plan.BatchRange(b);
      auto assembled = assembler.Assemble(plan, begin, end, windows).ValueOrDie();
      ExpectPlannedRows(plan, b, assembled);
    }
  }

  // `assembled` is batch b of `plan`: the rows the plan names, in order.
  void ExpectPlannedRows(const EpochPlan& plan, int64_t b, const AssembledBatch& assembled) {
    // The plan alone says which global rows the batch holds, in order.
    const auto rows = testing::PlannedRows(plan, source_->units, b);
    arrow::Int64Builder indices;
    ASSERT_TRUE(indices.AppendValues(rows).ok());
    Digest digest;
    for (int64_t row : rows) digest.Add(static_cast<uint64_t>(row));
    auto taken = arrow::compute::Take(all_rows_, indices.Finish().ValueOrDie()).ValueOrDie();
    auto expected = taken.table()->CombineChunksToBatch().ValueOrDie();
    ASSERT_TRUE(assembled.batch->Equals(*expected))
        << "batch " << b << "\nassembled:\n"
        << assembled.batch->ToString() << "\nexpected:\n"
        << expected->ToString();
    ASSERT_TRUE(assembled.batch->ValidateFull().ok()) << "batch " << b;
    EXPECT_EQ(assembled.rows_hash, digest.Fold()) << "batch " << b;
    // The gathered buffers are fresh, 64-byte aligned, and owned by the batch.
    const auto& values = assembled.batch->column_data(0)->buffers[1];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(values->data()) % 64, 0u) << "batch " << b;
  }

  testing::TempDir dir_;
  std::shared_ptr<UnitSource> source_;
  std::vector<int64_t> unit_rows_;
  std::shared_ptr<arrow::Table> all_rows_;
  Stats stats_;
};

PlanConfig Config(bool shuffle, int64_t window_rows, int64_t batch_size) {
  PlanConfig config;
  config.seed = 3;
  config.epoch = 2;
  config.shuffle = shuffle;
  config.window_rows = window_rows;
  config.batch_size = batch_size;
  return config;
}

TEST_F(AssemblerTest, ShuffledBatchesAreThePlannedRows) {
  ExpectBatchesArePlannedRows(EpochPlan::Make(unit_rows_, Config(true, 400, 128)).ValueOrDie());
}

TEST_F(AssemblerTest, BatchesSpanningManyWindowsAreThePlannedRows) {
  // One unit per window and batches larger than a unit: each batch reads several windows.
  ExpectBatchesArePlannedRows(EpochPlan::Make(unit_rows_, Config(true, 1, 260)).ValueOrDie());
}

TEST_F(AssemblerTest, UnshuffledBatchesAreStorageOrder) {
  ExpectBatchesArePlannedRows(EpochPlan::Make(unit_rows_, Config(false, 1, 97)).ValueOrDie());
}

TEST_F(AssemblerTest, ARankSliceAndResumedEpochAreThePlannedRows) {
  auto config = Config(true, 300, 50);
  config.world_size = 3;
  config.rank = 2;
  ExpectBatchesArePlannedRows(EpochPlan::Make(unit_rows_, config).ValueOrDie());
  config.resumed = {{2, 120}};  // two ranks each consumed 120 rows before
  ExpectBatchesArePlannedRows(EpochPlan::Make(unit_rows_, config).ValueOrDie());
}

TEST_F(AssemblerTest, BatchesCutAtExplicitEndsAreThePlannedRows) {
  auto config = Config(true, 300, 128);
  config.batch_ends = {1, 100, 228, 229, 600, 850};
  const auto plan = EpochPlan::Make(unit_rows_, config).ValueOrDie();
  ASSERT_EQ(plan.num_batches(), 6);
  ExpectBatchesArePlannedRows(plan);
}

// Buffers of the four scalar number columns (id, i8, i16, f32) of one kind, filled with
// kUntouched so that writes show.
enum class Given { kExactSize, kOneRowLonger, kOneRowShorter, kReadOnly };
constexpr uint8_t kUntouched = 0xCD;
constexpr int kScalarColumns[] = {0, 1, 2, 3};
constexpr int64_t kScalarBytes[] = {8, 1, 2, 4};
constexpr int kFlag = 6;

class AssemblerTargetTest : public AssemblerTest {
 public:
  // Assembles every batch of `plan` (its units staged row-major when `staged`) into buffers
  // of kind `kind`, and checks each batch is the planned rows, in the given buffers exactly
  // when they fit, and that buffers not used were not written.
  void Run(const EpochPlan& plan, bool staged, Given kind) {
    std::shared_ptr<const RowLayout> layout;
    std::shared_ptr<ChunkPool> chunks;
    if (staged) {
      layout = std::make_shared<const RowLayout>(
          RowLayout::For(*source_->output_schema, /*no_nulls=*/false));
      // The numbers and the flag are staged; the lists and strings stay columnar.
      for (int c : kScalarColumns) ASSERT_GE(layout->staged[c], 0) << "column " << c;
      ASSERT_GE(layout->staged[kFlag], 0);
      chunks = ChunkPool::Make(layout->stride << layout->chunk_shift, source_->pool);
    }
    const Assembler assembler(LayoutOf(source_));
    std::map<int64_t, std::shared_ptr<const LoadedWindow>> loaded;
    for (int64_t b = 0; b < plan.num_batches(); ++b) {
      SCOPED_TRACE(::testing::Message() << "batch " << b);
      const auto [first, last] = plan.ScheduleRange(b);
      std::vector<std::shared_ptr<const LoadedWindow>> windows;
      for (int64_t s = first; s <= last; ++s) {
        if (loaded.count(s) == 0) loaded[s] = Load(plan, s, layout, chunks.get());
        windows.push_back(loaded[s]);
      }
      const auto [begin, end] = plan.BatchRange(b);
      const int64_t rows = end - begin;
      OutputTarget target;
      target.columns.resize(static_cast<size_t>(source_->output_schema->num_fields()));
      std::vector<std::vector<uint8_t>> read_only(4);
      for (int i = 0; i < 4; ++i) {
        int64_t bytes = rows * kScalarBytes[i];
        if (kind == Given::kOneRowLonger) bytes += kScalarBytes[i];
        if (kind == Given::kOneRowShorter) bytes -= kScalarBytes[i];
        if (kind == Given::kReadOnly) {
          read_only[i].assign(static_cast<size_t>(bytes), kUntouched);
          target.columns[kScalarColumns[i]] =
              std::make_shared<arrow::Buffer>(read_only[i].data(), bytes);
        } else {
          auto buffer = arrow::AllocateBuffer(bytes).ValueOrDie();
          std::memset(buffer->mutable_data(), kUntouched, bytes);
          target.columns[kScalarColumns[i]] = std::move(buffer);
        }
      }
      // The flag's buffer: a byte a row (what its row_bytes would be), or its bits' bytes.
      const int64_t flag_bytes = b % 2 == 0 ? rows : arrow::bit_util::BytesForBits(rows);
      auto flag = arrow::AllocateBuffer(flag_bytes).ValueOrDie();
      std::memset(flag->mutable_data(), kUntouched, flag_bytes);
      target.columns[kFlag] = std::move(flag);

      const auto assembled = assembler.Assemble(plan, begin, end, windows, &target).ValueOrDie();
      ExpectPlannedRows(plan, b, assembled);
      if (HasFatalFailure()) return;
      for (int c : kScalarColumns) {
        const auto& values = assembled.batch->column_data(c)->buffers[1];
        const auto& given = target.columns[c];
        if (kind == Given::kExactSize) {
          EXPECT_EQ(values->data(), given->data()) << "column " << c;
          EXPECT_EQ(values, given) << "column " << c;  // the batch holds the given buffer
        } else {
          EXPECT_NE(values->data(), given->data()) << "column " << c;
          EXPECT_TRUE(std::all_of(given->data(), given->data() + given->size(),
                                  [](uint8_t x) { return x == kUntouched; }))
              << "column " << c << " was written";
        }
      }
      const auto& flag_given = target.columns[kFlag];
      EXPECT_NE(assembled.batch->column_data(kFlag)->buffers[1]->data(), flag_given->data());
      EXPECT_TRUE(std::all_of(flag_given->data(), flag_given->data() + flag_given->size(),
                              [](uint8_t x) { return x == kUntouched; }))
          << "the flag's given buffer was written";
    }
  }
};

TEST_F(AssemblerTargetTest, ColumnarBatchesWriteIntoGivenBuffersOfTheirExactSize) {
  auto config = Config(true, 400, 128);
  config.batch_ends = {1, 100, 228, 229, 600, 850};
  Run(EpochPlan::Make(unit_rows_, config).ValueOrDie(), /*staged=*/false, Given::kExactSize);
}

TEST_F(AssemblerTargetTest, StagedBatchesWriteIntoGivenBuffersOfTheirExactSize) {
  auto config = Config(true, 400, 128);
  config.batch_ends = {1, 100, 228, 229, 600, 850};
  Run(EpochPlan::Make(unit_rows_, config).ValueOrDie(), /*staged=*/true, Given::kExactSize);
}

TEST_F(AssemblerTargetTest, GivenBuffersOfAnotherSizeOrReadOnlyAreLeftAlone) {
  const auto plan = EpochPlan::Make(unit_rows_, Config(true, 400, 128)).ValueOrDie();
  for (const bool staged : {false, true}) {
    for (const Given kind : {Given::kOneRowLonger, Given::kOneRowShorter, Given::kReadOnly}) {
      SCOPED_TRACE(::testing::Message()
                   << (staged ? "staged" : "columnar") << ", kind " << static_cast<int>(kind));
      Run(plan, staged, kind);
    }
  }
}

}  // namespace
}  // namespace stoker
