// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the C++ tests share: small real Parquet datasets written for them, temporary
// directories, and the rows a plan names worked out from the plan alone (the oracle the
// assembler and the epoch pipeline are checked against).
#pragma once

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <gtest/gtest.h>
#include <parquet/arrow/writer.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "plan/plan.h"

namespace stoker::testing {

/// A fresh directory under the system temp dir, removed at scope exit. Named after the test
/// and the process, so builds run side by side (the plain and sanitizer ones, several
/// checkouts) never remove each other's data.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("stoker-") + info->test_suite_name() + "-" + info->name() + "-" +
             std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Writes `files` files of `rows_per_file` rows each: row_id (int64, unique, in storage
/// order), value (float32 = row_id / 2), vec (fixed_size_list<float32>[3] = row_id, +1, +2),
/// name (string), maybe (int32, null on every 7th row).
inline void WriteDataset(const std::filesystem::path& dir, int files, int64_t rows_per_file,
                         int64_t row_group_size) {
  for (int f = 0; f < files; ++f) {
    arrow::Int64Builder ids;
    arrow::FloatBuilder values;
    arrow::FloatBuilder vec_values;
    arrow::StringBuilder names;
    arrow::Int32Builder maybe;
    for (int64_t i = 0; i < rows_per_file; ++i) {
      const int64_t id = f * rows_per_file + i;
      ASSERT_TRUE(ids.Append(id).ok());
      ASSERT_TRUE(values.Append(static_cast<float>(id) / 2).ok());
      for (int k = 0; k < 3; ++k) ASSERT_TRUE(vec_values.Append(static_cast<float>(id + k)).ok());
      ASSERT_TRUE(names.Append("row" + std::to_string(id)).ok());
      ASSERT_TRUE((id % 7 == 0 ? maybe.AppendNull() : maybe.Append(static_cast<int32_t>(id))).ok());
    }
    auto flat = vec_values.Finish().ValueOrDie();
    auto vec = arrow::FixedSizeListArray::FromArrays(flat, 3).ValueOrDie();
    auto schema =
        arrow::schema({arrow::field("row_id", arrow::int64()),
                       arrow::field("value", arrow::float32()), arrow::field("vec", vec->type()),
                       arrow::field("name", arrow::utf8()), arrow::field("maybe", arrow::int32())});
    auto table =
        arrow::Table::Make(schema, {ids.Finish().ValueOrDie(), values.Finish().ValueOrDie(), vec,
                                    names.Finish().ValueOrDie(), maybe.Finish().ValueOrDie()});
    auto out = arrow::io::FileOutputStream::Open(
                   (dir / ("part-" + std::to_string(f) + ".parquet")).string())
                   .ValueOrDie();
    // Store the Arrow schema, as pyarrow does, so fixed-size lists read back as such.
    auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
    ASSERT_TRUE(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), out,
                                           row_group_size, parquet::default_writer_properties(),
                                           arrow_properties)
                    .ok());
    ASSERT_TRUE(out->Close().ok());
  }
}

/// Expects `schema` to be WriteDataset's columns, `vec` a fixed-size list of 3 floats whatever
/// its child field is named (Arrow versions name it differently).
inline void ExpectDatasetSchema(const arrow::Schema& schema) {
  ASSERT_EQ(schema.num_fields(), 5);
  EXPECT_EQ(schema.field(0)->ToString(), "row_id: int64");
  EXPECT_EQ(schema.field(1)->ToString(), "value: float");
  EXPECT_EQ(schema.field(2)->name(), "vec");
  ASSERT_EQ(schema.field(2)->type()->id(), arrow::Type::FIXED_SIZE_LIST);
  const auto& vec = static_cast<const arrow::FixedSizeListType&>(*schema.field(2)->type());
  EXPECT_EQ(vec.list_size(), 3);
  EXPECT_EQ(vec.value_type()->id(), arrow::Type::FLOAT);
  EXPECT_EQ(schema.field(3)->ToString(), "name: string");
  EXPECT_EQ(schema.field(4)->ToString(), "maybe: int32");
}

/// Writes `table` to `path` as Parquet, `row_group_size` rows per row group, with the Arrow
/// schema stored as pyarrow stores it; `properties` as the writer's (statistics on by default).
inline void WriteTable(
    const std::filesystem::path& path, const arrow::Table& table, int64_t row_group_size,
    std::shared_ptr<parquet::WriterProperties> properties = parquet::default_writer_properties()) {
  auto out = arrow::io::FileOutputStream::Open(path.string()).ValueOrDie();
  auto arrow_properties = parquet::ArrowWriterProperties::Builder().store_schema()->build();
  ASSERT_TRUE(parquet::arrow::WriteTable(table, arrow::default_memory_pool(), out, row_group_size,
                                         properties, arrow_properties)
                  .ok());
  ASSERT_TRUE(out->Close().ok());
}

/// Global row indices (dataset order) of batch `b` of `plan`, in order; `units` are the
/// units the plan's unit indices refer to.
inline std::vector<int64_t> PlannedRows(const EpochPlan& plan, const std::vector<Unit>& units,
                                        int64_t b) {
  std::vector<int64_t> rows;
  const auto [begin, end] = plan.BatchRange(b);
  for (int64_t offset = begin; offset < end; ++offset) {
    const int64_t pos = plan.Position(offset);
    const int64_t window = plan.WindowOf(pos);
    const RowSource source = plan.Locate(pos, window, plan.WindowRows(window));
    const int32_t unit =
        plan.unit_order()[plan.windows()[window].first_unit + source.unit_in_window];
    rows.push_back(units[unit].first_row + source.row);
  }
  return rows;
}

}  // namespace stoker::testing
