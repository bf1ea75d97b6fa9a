// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/unit_reader.h"

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/util/thread_pool.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "decode/row_group_reader.h"
#include "exec/unit_source.h"
#include "manifest/manifest.h"
#include "telemetry/stats.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;
namespace cp = arrow::compute;

constexpr int kFiles = 2;
constexpr int64_t kRowsPerFile = 250;
constexpr int64_t kRowGroupRows = 100;

// A unit source as the loader sets one up (loader.cc, MakeUnitSource), over the `columns` of
// the dataset in `dir`, filtered by `filter` (its columns outside `columns` read for it and
// dropped after), then transformed by `ops`.
std::shared_ptr<UnitSource> MakeSource(const fs::path& dir, std::vector<std::string> columns,
                                       std::vector<TransformOp> ops = {},
                                       OutputKind output = OutputKind::kTensor,
                                       std::optional<cp::Expression> filter = std::nullopt,
                                       std::vector<std::string> filter_only = {}) {
  auto source = std::make_shared<UnitSource>();
  source->output = output;
  source->pool = arrow::default_memory_pool();
  source->io_executor = arrow::internal::ThreadPool::Make(2).ValueOrDie();
  for (const auto& name : filter_only) columns.push_back(name);
  source->manifest = Manifest::Make({dir.string()}, columns).ValueOrDie();
  source->units = source->manifest->units();
  if (filter.has_value()) {
    source->filter_expression = filter;
    source->filter = RowFilter::Make(*filter, source->manifest->schema()).ValueOrDie();
    source->filter_only_columns = filter_only;
  }
  arrow::FieldVector inputs;
  for (const auto& field : source->manifest->schema()->fields()) {
    if (std::find(filter_only.begin(), filter_only.end(), field->name()) == filter_only.end()) {
      inputs.push_back(field);
    }
  }
  source->decoder = ColumnDecoder::Make({}, *arrow::schema(inputs)).ValueOrDie();
  source->transforms =
      TransformSpec::Make(std::move(ops), source->decoder->output_schema()).ValueOrDie();
  source->output_schema = source->transforms->output_schema();
  source->ragged = source->transforms->ragged_columns();
  source->batch_schema = source->output_schema;
  // Tensor output: every column null-free (checked per unit). Arrow output: none proven.
  source->non_null.assign(source->output_schema->num_fields(), output == OutputKind::kTensor);
  source->cache_config_digest = "config-a";
  return source;
}

TransformOp Cast(const std::string& column, const std::string& dtype) {
  TransformOp op;
  op.kind = TransformKind::kCast;
  op.columns = {column};
  op.dtype = dtype;
  return op;
}

TransformOp Uniform(const std::string& column) {
  TransformOp op;
  op.kind = TransformKind::kUniform;
  op.columns = {column};
  op.low = 0;
  op.high = 1;
  return op;
}

template <typename ArrayType>
auto Values(const arrow::RecordBatch& batch, const std::string& name) {
  const auto column = batch.GetColumnByName(name);
  EXPECT_NE(column, nullptr) << name;
  const auto& typed = static_cast<const ArrayType&>(*column);
  return std::vector<typename ArrayType::value_type>(typed.raw_values(),
                                                     typed.raw_values() + typed.length());
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The dataset of fixtures.h: 2 files of 250 rows in row groups of 100, so 6 units: file 0's
// rows 0-99, 100-199, 200-249, then file 1's rows 250-349, 350-449, 450-499.
class UnitReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::WriteDataset(dir_.path(), kFiles, kRowsPerFile, kRowGroupRows); }
  testing::TempDir dir_;
  Stats stats_;
};

TEST_F(UnitReaderTest, AllColumnsIsEveryManifestColumnInOrder) {
  EXPECT_EQ(AllColumns(*MakeSource(dir_.path(), {})), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(AllColumns(*MakeSource(dir_.path(), {"name", "row_id"})), (std::vector<int>{0, 1}));
}

TEST_F(UnitReaderTest, ReadRowGroupDecodesTheColumnsAskedForInTheirOrder) {
  const auto source = MakeSource(dir_.path(), {});
  const Unit& unit = source->units[4];
  ASSERT_EQ(unit.file, 1);
  ASSERT_EQ(unit.row_group, 1);
  const auto batch = ReadRowGroup(*source, unit, {4, 1, 0}, &stats_);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ((*batch)->num_rows(), 100);
  ASSERT_EQ((*batch)->num_columns(), 3);
  EXPECT_EQ((*batch)->schema()->field(0)->name(), "maybe");
  EXPECT_EQ((*batch)->schema()->field(1)->name(), "value");
  EXPECT_EQ((*batch)->schema()->field(2)->name(), "row_id");
  EXPECT_EQ(Values<arrow::Int64Array>(**batch, "row_id"), Range(350, 450));
  const auto values = Values<arrow::FloatArray>(**batch, "value");
  EXPECT_EQ(values.front(), 175.0f);
  EXPECT_EQ(values.back(), 224.5f);
  // maybe is null on every 7th row id: 350 is one, 351 is not.
  EXPECT_TRUE((*batch)->column(0)->IsNull(0));
  EXPECT_EQ(std::static_pointer_cast<arrow::Int32Array>((*batch)->column(0))->Value(1), 351);
  EXPECT_EQ(stats_.Snapshot().units_read, 1);
  EXPECT_GT(stats_.Snapshot().bytes_read, 0);
}

TEST_F(UnitReaderTest, ReadRowGroupOfAFileGoneSinceTheManifestNamesIt) {
  const auto source = MakeSource(dir_.path(), {"row_id"});
  fs::remove(dir_.path() / "part-1.parquet");
  const auto batch = ReadRowGroup(*source, source->units[3], {0}, &stats_);
  ASSERT_FALSE(batch.ok());
  EXPECT_TRUE(Contains(batch.status().message(), "part-1.parquet")) << batch.status();
  // The other file still reads.
  EXPECT_TRUE(ReadRowGroup(*source, source->units[0], {0}, &stats_).ok());
}

TEST_F(UnitReaderTest, FinishUnitFiltersThenDropsTheFiltersOwnColumns) {
  const auto filter = cp::greater_equal(cp::field_ref("row_id"), cp::literal(int64_t{150}));
  const auto source =
      MakeSource(dir_.path(), {"value"}, {}, OutputKind::kTensor, filter, {"row_id"});
  Unit unit = source->units[1];  // rows 100-199, of which 150-199 match
  unit.num_rows = 50;            // as the loader counts them
  auto raw = ReadRowGroup(*source, unit, AllColumns(*source), &stats_);
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ((*raw)->num_columns(), 2);
  const auto finished = FinishUnit(*source, unit, *raw, &stats_);
  ASSERT_TRUE(finished.ok()) << finished.status();
  ASSERT_EQ((*finished)->num_columns(), 1);
  EXPECT_EQ((*finished)->schema()->field(0)->name(), "value");
  std::vector<float> expected;
  for (int64_t id = 150; id < 200; ++id) expected.push_back(static_cast<float>(id) / 2);
  EXPECT_EQ(Values<arrow::FloatArray>(**finished, "value"), expected);
}

TEST_F(UnitReaderTest, FinishUnitWithOtherThanTheCountedRowsSaysTheFileChanged) {
  const auto filter = cp::greater_equal(cp::field_ref("row_id"), cp::literal(int64_t{150}));
  const auto source =
      MakeSource(dir_.path(), {"value"}, {}, OutputKind::kTensor, filter, {"row_id"});
  const Unit& unit = source->units[1];  // still counted with all its 100 rows
  auto raw = ReadRowGroup(*source, unit, AllColumns(*source), &stats_).ValueOrDie();
  const auto finished = FinishUnit(*source, unit, raw, &stats_);
  ASSERT_FALSE(finished.ok());
  EXPECT_TRUE(finished.status().IsIOError()) << finished.status();
  EXPECT_EQ(finished.status().message(),
            DescribeUnit(*source->manifest, unit) +
                " gave 50 rows where 100 were counted when the loader was made: the file changed");
  EXPECT_TRUE(Contains(finished.status().message(), "part-0.parquet' (row group 1)"));
}

TEST_F(UnitReaderTest, FinishUnitAppliesTheTransformsAndNamesTheUnitWhenOneFails) {
  const auto source = MakeSource(dir_.path(), {"row_id"}, {Cast("row_id", "int8")});
  // Rows 0-99 fit in int8.
  auto raw = ReadRowGroup(*source, source->units[0], {0}, &stats_).ValueOrDie();
  const auto fits = FinishUnit(*source, source->units[0], raw, &stats_);
  ASSERT_TRUE(fits.ok()) << fits.status();
  const auto ids = Values<arrow::Int8Array>(**fits, "row_id");
  ASSERT_EQ(ids.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ids[i], i);
  // Rows 100-199 do not: the cast's error, prefixed with the unit.
  raw = ReadRowGroup(*source, source->units[1], {0}, &stats_).ValueOrDie();
  const auto overflows = FinishUnit(*source, source->units[1], raw, &stats_);
  ASSERT_FALSE(overflows.ok());
  EXPECT_TRUE(Contains(overflows.status().message(),
                       DescribeUnit(*source->manifest, source->units[1]) + ": "))
      << overflows.status();
  EXPECT_TRUE(Contains(overflows.status().message(), "cast")) << overflows.status();
}

TEST_F(UnitReaderTest, DrawUnitWithoutDrawingOpsHandsBackTheUnitItself) {
  const auto source = MakeSource(dir_.path(), {"row_id", "value"});
  auto raw = ReadRowGroup(*source, source->units[2], {0, 1}, &stats_).ValueOrDie();
  const auto finished = FinishUnit(*source, source->units[2], raw, &stats_).ValueOrDie();
  const auto drawn = DrawUnit(*source, source->units[2], finished, 1, 2, &stats_);
  ASSERT_TRUE(drawn.ok()) << drawn.status();
  EXPECT_EQ(*drawn, finished);
}

TEST_F(UnitReaderTest, DrawUnitDrawsAnewForEachSeedAndEpoch) {
  const auto source = MakeSource(dir_.path(), {"row_id"}, {Uniform("noise")});
  ASSERT_TRUE(source->transforms->draws());
  const Unit& unit = source->units[3];
  auto raw = ReadRowGroup(*source, unit, {0}, &stats_).ValueOrDie();
  const auto finished = FinishUnit(*source, unit, raw, &stats_).ValueOrDie();
  // The cached part stops before the op that draws.
  EXPECT_EQ(finished->num_columns(), 1);

  auto draw = [&](uint64_t seed, uint64_t epoch) {
    auto drawn = DrawUnit(*source, unit, finished, seed, epoch, &stats_);
    if (!drawn.ok()) {
      ADD_FAILURE() << drawn.status();
      return std::vector<float>{};
    }
    EXPECT_TRUE((*drawn)->schema()->Equals(*source->output_schema));
    return Values<arrow::FloatArray>(**drawn, "noise");
  };
  const auto first = draw(7, 0);
  ASSERT_EQ(first.size(), 100u);
  for (float x : first) {
    EXPECT_GE(x, 0.0f);
    EXPECT_LT(x, 1.0f);
  }
  EXPECT_EQ(draw(7, 0), first);
  EXPECT_NE(draw(7, 1), first);
  EXPECT_NE(draw(8, 0), first);
}

TEST_F(UnitReaderTest, ReadUnitReadsFinishesAndDraws) {
  const auto source =
      MakeSource(dir_.path(), {"row_id", "value"}, {Cast("row_id", "int32"), Uniform("noise")});
  const Unit& unit = source->units[5];  // rows 450-499
  const auto batch = ReadUnit(*source, unit, 3, 4, &stats_);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE((*batch)->schema()->Equals(*source->output_schema));
  ASSERT_EQ((*batch)->num_rows(), 50);
  std::vector<int32_t> ids;
  for (int32_t id = 450; id < 500; ++id) ids.push_back(id);
  EXPECT_EQ(Values<arrow::Int32Array>(**batch, "row_id"), ids);
  EXPECT_EQ(Values<arrow::FloatArray>(**batch, "value").front(), 225.0f);
  // The same draws as finishing and drawing apart.
  auto raw = ReadRowGroup(*source, unit, AllColumns(*source), &stats_).ValueOrDie();
  const auto finished = FinishUnit(*source, unit, raw, &stats_).ValueOrDie();
  const auto drawn = DrawUnit(*source, unit, finished, 3, 4, &stats_).ValueOrDie();
  EXPECT_EQ(Values<arrow::FloatArray>(**batch, "noise"),
            Values<arrow::FloatArray>(*drawn, "noise"));
  EXPECT_EQ(stats_.Snapshot().units_read, 2);
}

TEST_F(UnitReaderTest, CheckUnitRefusesNullsForTensorsNamingColumnFileAndRowGroup) {
  const auto source = MakeSource(dir_.path(), {"row_id", "maybe"});
  const Unit& unit = source->units[0];
  const auto batch = ReadUnit(*source, unit, 0, 0, &stats_);
  ASSERT_FALSE(batch.ok());
  EXPECT_TRUE(batch.status().IsInvalid()) << batch.status();
  EXPECT_TRUE(Contains(batch.status().message(), "column 'maybe' has null values in " +
                                                     DescribeUnit(*source->manifest, unit) +
                                                     "; numpy/torch output cannot hold nulls"))
      << batch.status();
  EXPECT_TRUE(Contains(batch.status().message(), "fill_null")) << batch.status();
  // Without the nullable column the unit is fine.
  EXPECT_TRUE(ReadUnit(*MakeSource(dir_.path(), {"row_id"}), unit, 0, 0, &stats_).ok());
}

TEST_F(UnitReaderTest, CheckUnitRefusesOtherColumnsThanExpected) {
  const auto source = MakeSource(dir_.path(), {"row_id", "value"});
  const Unit& unit = source->units[0];
  auto raw = ReadRowGroup(*source, unit, {0}, &stats_).ValueOrDie();  // row_id only
  const auto status = CheckUnit(*source, unit, *raw);
  EXPECT_TRUE(status.IsInvalid()) << status;
  EXPECT_TRUE(Contains(status.message(), DescribeUnit(*source->manifest, unit) + " gave columns "))
      << status;
  EXPECT_TRUE(Contains(status.message(), "were expected")) << status;

  // Schema metadata is no difference.
  auto full = ReadRowGroup(*source, unit, {0, 1}, &stats_).ValueOrDie();
  const auto annotated = full->ReplaceSchemaMetadata(arrow::key_value_metadata({"k"}, {"v"}));
  EXPECT_TRUE(CheckUnit(*source, unit, *annotated).ok());
}

TEST_F(UnitReaderTest, CheckUnitCountsTheRows) {
  const auto source = MakeSource(dir_.path(), {"row_id"});
  const Unit& unit = source->units[0];
  auto raw = ReadRowGroup(*source, unit, {0}, &stats_).ValueOrDie();
  EXPECT_TRUE(CheckUnit(*source, unit, *raw).ok());
  const auto status = CheckUnit(*source, unit, *raw->Slice(0, 99));
  EXPECT_TRUE(status.IsIOError()) << status;
  EXPECT_TRUE(Contains(status.message(), "gave 99 rows where 100 were counted")) << status;
  EXPECT_FALSE(CheckUnit(*source, unit, *raw->Slice(0, 0)).ok());
}

// x (int32): null only at row 4, so only the second row group (rows 3-5) holds a null; seq
// (list<float>): a null list in row 1, a null value in row 5's list.
class NullsInOneRowGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    arrow::Int32Builder x;
    auto values = std::make_shared<arrow::FloatBuilder>();
    arrow::ListBuilder seq(arrow::default_memory_pool(), values);
    for (int r = 0; r < 6; ++r) {
      ASSERT_TRUE((r == 4 ? x.AppendNull() : x.Append(r)).ok());
      if (r == 1) {
        ASSERT_TRUE(seq.AppendNull().ok());
        continue;
      }
      ASSERT_TRUE(seq.Append().ok());
      ASSERT_TRUE(values->Append(static_cast<float>(r)).ok());
      ASSERT_TRUE((r == 5 ? values->AppendNull() : values->Append(0.5f)).ok());
    }
    auto x_array = x.Finish().ValueOrDie();
    auto seq_array = seq.Finish().ValueOrDie();
    auto schema =
        arrow::schema({arrow::field("x", x_array->type()), arrow::field("seq", seq_array->type())});
    testing::WriteTable(dir_.path() / "nulls.parquet",
                        *arrow::Table::Make(schema, {x_array, seq_array}), 3);
  }
  testing::TempDir dir_;
  Stats stats_;
};

TEST_F(NullsInOneRowGroupTest, TensorOutputRefusesOnlyTheUnitWithANull) {
  const auto source = MakeSource(dir_.path(), {"x"});
  ASSERT_EQ(source->units.size(), 2u);
  const auto clean = ReadUnit(*source, source->units[0], 0, 0, &stats_);
  ASSERT_TRUE(clean.ok()) << clean.status();
  EXPECT_EQ(Values<arrow::Int32Array>(**clean, "x"), (std::vector<int32_t>{0, 1, 2}));
  const auto dirty = ReadUnit(*source, source->units[1], 0, 0, &stats_);
  ASSERT_FALSE(dirty.ok());
  EXPECT_TRUE(Contains(dirty.status().message(), "column 'x' has null values in '"))
      << dirty.status();
  EXPECT_TRUE(Contains(dirty.status().message(), "nulls.parquet' (row group 1)")) << dirty.status();
}

TEST_F(NullsInOneRowGroupTest, ArrowOutputRefusesANullOnlyWhereStatisticsPromisedNone) {
  auto source = MakeSource(dir_.path(), {"x"}, {}, OutputKind::kArrow);
  const Unit& unit = source->units[1];
  auto raw = ReadRowGroup(*source, unit, {0}, &stats_).ValueOrDie();
  ASSERT_EQ(raw->column(0)->null_count(), 1);
  // Not proven null-free: nulls pass through to Arrow output.
  EXPECT_TRUE(CheckUnit(*source, unit, *raw).ok());
  // Proven (by statistics that lied): the unit is refused as corrupt.
  source->non_null = {true};
  const auto status = CheckUnit(*source, unit, *raw);
  EXPECT_TRUE(status.IsInvalid()) << status;
  EXPECT_EQ(status.message(), "column 'x' has null values in " +
                                  DescribeUnit(*source->manifest, unit) +
                                  " although the file's Parquet statistics record none: the "
                                  "file is corrupt; rewrite it");
}

TEST_F(NullsInOneRowGroupTest, ARaggedColumnMayHoldNullListsButNotNullValues) {
  TransformOp ragged;
  ragged.kind = TransformKind::kRagged;
  ragged.columns = {"seq"};
  const auto source = MakeSource(dir_.path(), {"seq"}, {ragged});
  ASSERT_EQ(source->transforms->ragged_columns(), std::vector<std::string>{"seq"});
  // Row group 0 has a null list (row 1): it reaches tensors as an empty one.
  const auto with_null_list = ReadUnit(*source, source->units[0], 0, 0, &stats_);
  ASSERT_TRUE(with_null_list.ok()) << with_null_list.status();
  EXPECT_EQ((*with_null_list)->column(0)->null_count(), 1);
  // Row group 1 has a null value inside a list (row 5).
  const auto with_null_value = ReadUnit(*source, source->units[1], 0, 0, &stats_);
  ASSERT_FALSE(with_null_value.ok());
  EXPECT_TRUE(Contains(with_null_value.status().message(), "column 'seq' has null values in"))
      << with_null_value.status();
}

TEST_F(UnitReaderTest, CacheKeyNamesFileRowGroupAndConfiguration) {
  const auto source = MakeSource(dir_.path(), {"row_id"});
  const auto& units = source->units;
  const std::string key = CacheKey(*source, units[0]);
  ASSERT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  // The same file and row group in another manifest: the same key.
  EXPECT_EQ(CacheKey(*MakeSource(dir_.path(), {"row_id"}), units[0]), key);
  // Another row group, another file, another configuration: another key.
  EXPECT_NE(CacheKey(*source, units[1]), key);
  EXPECT_NE(CacheKey(*source, units[3]), key);
  auto other_config = MakeSource(dir_.path(), {"row_id"});
  other_config->cache_config_digest = "config-b";
  EXPECT_NE(CacheKey(*other_config, units[0]), key);
}

TEST_F(UnitReaderTest, CacheKeyChangesWhenTheFileIsRewritten) {
  const auto original = MakeSource(dir_.path(), {});
  const std::string before = CacheKey(*original, original->units[0]);
  // The same bytes, a later modification time.
  const fs::path file = dir_.path() / "part-0.parquet";
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(5));
  const auto touched = MakeSource(dir_.path(), {});
  const std::string after_touch = CacheKey(*touched, touched->units[0]);
  EXPECT_NE(after_touch, before);
  // Other contents (another size).
  testing::WriteDataset(dir_.path(), 1, kRowsPerFile + 1, kRowGroupRows);
  const auto rewritten = MakeSource(dir_.path(), {});
  EXPECT_NE(CacheKey(*rewritten, rewritten->units[0]), before);
  EXPECT_NE(CacheKey(*rewritten, rewritten->units[0]), after_touch);
}

}  // namespace
}  // namespace stoker
