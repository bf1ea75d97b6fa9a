// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "assemble/plan_columns.h"

#include <arrow/api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/fixtures.h"
#include "manifest/manifest.h"
#include "stoker/options.h"

namespace stoker {
namespace {

constexpr int kFiles = 2;
constexpr int64_t kRowsPerFile = 250;
constexpr int64_t kRowGroupRows = 100;

std::vector<bool> Bools(const arrow::Array& array) {
  const auto& bools = static_cast<const arrow::BooleanArray&>(array);
  std::vector<bool> out;
  for (int64_t i = 0; i < bools.length(); ++i) out.push_back(bools.Value(i));
  return out;
}

template <typename ArrayType>
auto Values(const arrow::Array& array) {
  const auto& typed = static_cast<const ArrayType&>(array);
  return std::vector<typename ArrayType::value_type>(typed.raw_values(),
                                                     typed.raw_values() + typed.length());
}

// Units of a real dataset: 2 files of 250 rows in row groups of 100, so units start at rows
// 0, 100 and 200 of their file.
class PlanColumnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteDataset(dir_.path(), kFiles, kRowsPerFile, kRowGroupRows);
    manifest_ = Manifest::Make({dir_.path().string()}, {}).ValueOrDie();
    ASSERT_EQ(manifest_->units().size(), 6u);
  }
  const std::vector<Unit>& units() const { return manifest_->units(); }

  testing::TempDir dir_;
  std::shared_ptr<Manifest> manifest_;
};

TEST_F(PlanColumnsTest, WithNeitherColumnTheSchemaStaysAsItIs) {
  const auto extended = PlanColumns{}.Extend(*manifest_->schema());
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_TRUE((*extended)->Equals(*manifest_->schema()));
}

TEST_F(PlanColumnsTest, ExtendAppendsTheMaskThenTheOriginAfterTheDataColumns) {
  const auto& data = *manifest_->schema();
  const auto mask = PlanColumns{.valid_mask = true}.Extend(data).ValueOrDie();
  ASSERT_EQ(mask->num_fields(), data.num_fields() + 1);
  EXPECT_EQ(mask->field(data.num_fields())->ToString(), "_valid: bool not null");

  const auto origin = PlanColumns{.row_origin = true}.Extend(data).ValueOrDie();
  ASSERT_EQ(origin->num_fields(), data.num_fields() + 2);
  EXPECT_EQ(origin->field(data.num_fields())->ToString(), "_file_index: int32 not null");
  EXPECT_EQ(origin->field(data.num_fields() + 1)->ToString(), "_row_in_file: int64 not null");

  const auto both = PlanColumns{.valid_mask = true, .row_origin = true}.Extend(data).ValueOrDie();
  ASSERT_EQ(both->num_fields(), data.num_fields() + 3);
  for (int i = 0; i < data.num_fields(); ++i) EXPECT_TRUE(both->field(i)->Equals(data.field(i)));
  EXPECT_EQ(both->field(data.num_fields())->name(), kValidColumn);
  EXPECT_EQ(both->field(data.num_fields() + 1)->name(), kFileIndexColumn);
  EXPECT_EQ(both->field(data.num_fields() + 2)->name(), kRowInFileColumn);
}

TEST_F(PlanColumnsTest, ADataColumnWithAPlanColumnsNameIsAnErrorNamingIt) {
  for (const std::string name : {kValidColumn, kFileIndexColumn, kRowInFileColumn}) {
    SCOPED_TRACE(name);
    const auto data =
        arrow::schema({arrow::field("x", arrow::float32()), arrow::field(name, arrow::int64())});
    const auto extended = PlanColumns{.valid_mask = true, .row_origin = true}.Extend(*data);
    ASSERT_FALSE(extended.ok());
    EXPECT_TRUE(extended.status().IsInvalid()) << extended.status();
    EXPECT_NE(extended.status().message().find("has a column named '" + name + "'"),
              std::string::npos)
        << extended.status();
    EXPECT_NE(extended.status().message().find("rename transform"), std::string::npos);
  }
  // A name is only taken when its plan column is added.
  const auto data = arrow::schema({arrow::field(kValidColumn, arrow::boolean())});
  const auto origin_only = PlanColumns{.row_origin = true}.Extend(*data);
  ASSERT_TRUE(origin_only.ok()) << origin_only.status();
  EXPECT_EQ((*origin_only)->num_fields(), 3);
}

TEST_F(PlanColumnsTest, TheMaskIsTrueForOffsetsBelowTheRealRows) {
  const PlanColumns plan{.valid_mask = true};
  // Rows at offsets 0, 5, 9 are real; 10 (the boundary) and 11 are padding.
  const std::vector<int64_t> offsets = {0, 5, 9, 10, 11};
  const std::vector<int32_t> row_units(5, 0);
  const std::vector<int64_t> row_in_unit = {0, 1, 2, 3, 4};
  const auto columns =
      plan.Make(offsets, /*real=*/10, row_units, row_in_unit, units(), arrow::default_memory_pool())
          .ValueOrDie();
  ASSERT_EQ(columns.size(), 1u);
  ASSERT_TRUE(columns[0]->type()->Equals(*arrow::boolean()));
  EXPECT_EQ(columns[0]->null_count(), 0);
  EXPECT_EQ(Bools(*columns[0]), (std::vector<bool>{true, true, true, false, false}));

  const auto all_padding =
      plan.Make(offsets, /*real=*/0, row_units, row_in_unit, units(), arrow::default_memory_pool())
          .ValueOrDie();
  EXPECT_EQ(Bools(*all_padding[0]), std::vector<bool>(5, false));
}

TEST_F(PlanColumnsTest, TheOriginIsTheUnitsFileAndItsRowInThatFile) {
  const PlanColumns plan{.row_origin = true};
  // Units 0..5: file 0 row groups 0..2 (from rows 0, 100, 200), then file 1's.
  const std::vector<int32_t> row_units = {4, 0, 2, 5, 3, 2};
  const std::vector<int64_t> row_in_unit = {7, 0, 49, 0, 99, 0};
  const std::vector<int64_t> offsets = {0, 1, 2, 3, 4, 5};
  const auto columns =
      plan.Make(offsets, 6, row_units, row_in_unit, units(), arrow::default_memory_pool())
          .ValueOrDie();
  ASSERT_EQ(columns.size(), 2u);
  ASSERT_TRUE(columns[0]->type()->Equals(*arrow::int32()));
  ASSERT_TRUE(columns[1]->type()->Equals(*arrow::int64()));
  EXPECT_EQ(Values<arrow::Int32Array>(*columns[0]), (std::vector<int32_t>{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(Values<arrow::Int64Array>(*columns[1]),
            (std::vector<int64_t>{107, 0, 249, 200, 99, 200}));
}

TEST_F(PlanColumnsTest, BothColumnsComeInTheOrderExtendNames) {
  const PlanColumns plan{.valid_mask = true, .row_origin = true};
  const std::vector<int64_t> offsets = {3, 4};
  const auto columns =
      plan.Make(offsets, 4, {1, 3}, {5, 6}, units(), arrow::default_memory_pool()).ValueOrDie();
  const auto schema = plan.Extend(arrow::Schema({})).ValueOrDie();
  const auto batch = arrow::RecordBatch::Make(schema, 2, columns);
  ASSERT_TRUE(batch->ValidateFull().ok()) << batch->ValidateFull();
  EXPECT_EQ(Bools(*batch->GetColumnByName(kValidColumn)), (std::vector<bool>{true, false}));
  EXPECT_EQ(Values<arrow::Int32Array>(*batch->GetColumnByName(kFileIndexColumn)),
            (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(Values<arrow::Int64Array>(*batch->GetColumnByName(kRowInFileColumn)),
            (std::vector<int64_t>{105, 6}));
}

TEST_F(PlanColumnsTest, AnEmptyBatchHasEmptyPlanColumnsAndNoneWithoutThem) {
  const auto none = PlanColumns{}.Make({}, 0, {}, {}, units(), arrow::default_memory_pool());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());

  const auto empty = PlanColumns{.valid_mask = true, .row_origin = true}.Make(
      {}, 0, {}, {}, units(), arrow::default_memory_pool());
  ASSERT_TRUE(empty.ok()) << empty.status();
  ASSERT_EQ(empty->size(), 3u);
  for (const auto& column : *empty) EXPECT_EQ(column->length(), 0);
}

TEST_F(PlanColumnsTest, ColumnsAreAllocatedFromTheGivenPool) {
  arrow::ProxyMemoryPool pool(arrow::default_memory_pool());
  {
    const std::vector<int64_t> offsets(1000, 0);
    const std::vector<int32_t> row_units(1000, 1);
    const std::vector<int64_t> row_in_unit(1000, 0);
    const auto columns = PlanColumns{.valid_mask = true, .row_origin = true}
                             .Make(offsets, 1, row_units, row_in_unit, units(), &pool)
                             .ValueOrDie();
    // 1000 bits, 1000 int32, 1000 int64 at least.
    EXPECT_GE(pool.bytes_allocated(), 125 + 4000 + 8000);
  }
  EXPECT_EQ(pool.bytes_allocated(), 0);
}

}  // namespace
}  // namespace stoker
