// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the footers' statistics say of each column's nulls, gathered with the units.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "manifest/manifest.h"

namespace stoker {
namespace {

// WriteDataset's `maybe` is null on every 7th row id: rows 0 and 7 of part-0, 14 of part-1.
TEST(NullCountsTest, TheFirstRowGroupWithNullsAndTheColumnsProvenFree) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 2, 10, 5);
  auto manifest = Manifest::Make({dir.path().string()}, {}).ValueOrDie();
  const auto& schema = *manifest->schema();
  const auto& maybe = manifest->null_counts()[schema.GetFieldIndex("maybe")];
  EXPECT_FALSE(maybe.proven_none);
  EXPECT_EQ(maybe.file, 0);
  EXPECT_EQ(maybe.row_group, 0);
  EXPECT_EQ(maybe.nulls, 1);
  for (const char* name : {"row_id", "value", "vec", "name"}) {
    const auto& column = manifest->null_counts()[schema.GetFieldIndex(name)];
    EXPECT_TRUE(column.proven_none) << name;
    EXPECT_EQ(column.file, -1) << name;
  }
  EXPECT_EQ(ColumnsWithoutNullsByStatistics(*manifest, {"maybe", "value", "name"}),
            (std::vector<std::string>{"value", "name"}));
  const auto error = CheckNoNullsByStatistics(*manifest, {"value", "maybe"});
  ASSERT_TRUE(error.IsInvalid());
  EXPECT_NE(error.message().find("column 'maybe' has 1 null values in '"), std::string::npos)
      << error.message();
  EXPECT_NE(error.message().find("part-0.parquet' (row group 0)"), std::string::npos)
      << error.message();
  EXPECT_TRUE(CheckNoNullsByStatistics(*manifest, {"row_id", "vec"}).ok());
}

// Only later files hold nulls: the first of them in dataset order is named.
TEST(NullCountsTest, NullsInALaterFileOnly) {
  testing::TempDir dir;
  testing::WriteDataset(dir.path(), 3, 7, 7);  // nulls at ids 0 (part-0), 7 (part-1), 14 (part-2)
  auto manifest = Manifest::Make({(dir.path() / "part-1.parquet").string(),
                                  (dir.path() / "part-2.parquet").string()},
                                 {"maybe"})
                      .ValueOrDie();
  const auto& maybe = manifest->null_counts()[0];
  EXPECT_EQ(maybe.file, 0);  // part-1, the first file of this manifest
  EXPECT_EQ(manifest->files()[maybe.file].source.path.substr(
                manifest->files()[maybe.file].source.path.size() - 14),
            "part-1.parquet");
}

}  // namespace
}  // namespace stoker
