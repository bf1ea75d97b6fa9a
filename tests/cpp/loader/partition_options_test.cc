// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/partition_options.h"

#include <arrow/type.h>
#include <gtest/gtest.h>

namespace stoker {
namespace {

PartitionOptions Typed(const std::vector<std::vector<std::optional<std::string>>>& values) {
  PartitionOptions options;
  options.schema =
      arrow::schema({arrow::field("day", arrow::utf8()), arrow::field("shard", arrow::int32())});
  options.file_values = values;
  return options;
}

TEST(PartitionOptionsTest, NothingGivenOrHiveAloneIsValid) {
  EXPECT_TRUE(PartitionOptions().Validate(0).ok());
  PartitionOptions hive;
  hive.hive = true;
  hive.schema = arrow::schema({arrow::field("day", arrow::int64())});
  EXPECT_TRUE(hive.Validate(7).ok());
}

TEST(PartitionOptionsTest, FileValuesNeedOneRowOfTheSchemasWidthPerSource) {
  EXPECT_TRUE(Typed({{"a", "1"}, {std::nullopt, std::nullopt}}).Validate(2).ok());
  EXPECT_EQ(Typed({{"a", "1"}}).Validate(2).message(),
            "partitioning: file values are given for 1 files but there are 2 sources");
  EXPECT_EQ(Typed({{"a", "1"}, {"b"}}).Validate(2).message(),
            "partitioning: source 1 has 1 partition values where the schema has 2 columns");
  PartitionOptions untyped;
  untyped.file_values = {{"a"}};
  EXPECT_EQ(untyped.Validate(1).message(),
            "partitioning: file values need the schema of their columns");
}

TEST(PartitionOptionsTest, TheSchemaNamesEachKeyOnce) {
  PartitionOptions twice;
  twice.schema =
      arrow::schema({arrow::field("day", arrow::utf8()), arrow::field("day", arrow::int32())});
  EXPECT_EQ(twice.Validate(1).message(),
            "partitioning: the schema names 'day' twice or is missing a name");
  PartitionOptions unnamed;
  unnamed.schema = arrow::schema({arrow::field("", arrow::utf8())});
  EXPECT_TRUE(unnamed.Validate(1).IsInvalid());
}

}  // namespace
}  // namespace stoker
