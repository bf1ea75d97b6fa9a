// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/partitions.h"

#include <arrow/compute/expression.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "manifest/partition_filter.h"

namespace stoker {
namespace {

namespace cp = arrow::compute;

void Touch(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

PartitionOptions Hive() {
  PartitionOptions options;
  options.hive = true;
  return options;
}

TEST(PartitionsTest, HiveKeysAreTypedAsPyarrowInfersThem) {
  testing::TempDir dir;
  Touch(dir.path() / "day=2026-01-01" / "shard=1" / "a.parquet");
  Touch(dir.path() / "day=a%2Fb%20c" / "shard=__HIVE_DEFAULT_PARTITION__" / "b.parquet");
  Touch(dir.path() / "day=z" / "shard=-3" / "c.parquet");
  auto sources = ResolveSourceList({dir.path().string()}).ValueOrDie();
  auto partitions = ResolvePartitions(sources, Hive()).ValueOrDie();
  ASSERT_EQ(partitions.schema->ToString(), "day: string\nshard: int32");
  ASSERT_EQ(partitions.values.size(), 3u);
  // Files in sorted path order: day=2026..., day=a%2F..., day=z.
  EXPECT_EQ(partitions.values[0][0]->ToString(), "2026-01-01");
  EXPECT_EQ(partitions.values[0][1]->ToString(), "1");
  EXPECT_EQ(partitions.values[1][0]->ToString(), "a/b c");
  EXPECT_FALSE(partitions.values[1][1]->is_valid);
  EXPECT_EQ(partitions.values[2][1]->ToString(), "-3");
  // Off unless asked for; a value beyond int32 makes the key a string.
  EXPECT_TRUE(ResolvePartitions(sources, PartitionOptions()).ValueOrDie().empty());
  Touch(dir.path() / "day=y" / "shard=3000000000" / "d.parquet");
  sources = ResolveSourceList({dir.path().string()}).ValueOrDie();
  EXPECT_EQ(ResolvePartitions(sources, Hive()).ValueOrDie().schema->field(1)->type()->id(),
            arrow::Type::STRING);
}

TEST(PartitionsTest, ErrorsNameTheKeyAndThePath) {
  testing::TempDir dir;
  Touch(dir.path() / "k=__HIVE_DEFAULT_PARTITION__" / "a.parquet");
  auto sources = ResolveSourceList({dir.path().string()}).ValueOrDie();
  auto all_null = ResolvePartitions(sources, Hive());
  ASSERT_FALSE(all_null.ok());
  EXPECT_NE(all_null.status().message().find("partition key 'k' is null"), std::string::npos);
  Touch(dir.path() / "k=x" / "k=y" / "b.parquet");
  sources = ResolveSourceList({dir.path().string()}).ValueOrDie();
  auto twice = ResolvePartitions(sources, Hive());
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'k' appears twice in the path of"), std::string::npos);
  PartitionOptions typed = Hive();
  typed.schema = arrow::schema({arrow::field("k", arrow::int64())});
  std::filesystem::remove_all(dir.path() / "k=x");
  Touch(dir.path() / "k=seven" / "c.parquet");
  sources = ResolveSourceList({dir.path().string()}).ValueOrDie();
  auto unparsable = ResolvePartitions(sources, typed);
  ASSERT_FALSE(unparsable.ok());
  EXPECT_NE(unparsable.status().message().find("partition value 'seven' of 'k' is not a valid "
                                               "int64"),
            std::string::npos);
  EXPECT_NE(unparsable.status().message().find("k=seven/c.parquet"), std::string::npos);
}

TEST(PartitionsTest, FilterPrunesByItsConjunctsOnPartitionColumnsOnly) {
  const auto schema =
      arrow::schema({arrow::field("day", arrow::utf8()), arrow::field("shard", arrow::int32())});
  const arrow::ScalarVector a{arrow::MakeScalar("2026-01-01"), arrow::MakeScalar(int32_t{1})};
  const arrow::ScalarVector b{arrow::MakeScalar("2026-01-02"),
                              arrow::MakeNullScalar(arrow::int32())};
  auto day = cp::equal(cp::field_ref("day"), cp::literal("2026-01-02"));
  auto x = cp::greater(cp::field_ref("x"), cp::literal(1.0));
  // (day == "2026-01-02") AND (x > 1): the day conjunct decides per file.
  auto filter = PartitionFilter::Make(cp::and_(day, x), schema).ValueOrDie();
  EXPECT_FALSE(filter.MayMatch(a).ValueOrDie());
  EXPECT_TRUE(filter.MayMatch(b).ValueOrDie());
  // A null partition value makes a comparison null: no row can match.
  auto shard =
      PartitionFilter::Make(cp::greater(cp::field_ref("shard"), cp::literal(int64_t{0})), schema)
          .ValueOrDie();
  EXPECT_TRUE(shard.MayMatch(a).ValueOrDie());
  EXPECT_FALSE(shard.MayMatch(b).ValueOrDie());
  // An OR with a file column decides nothing per file.
  auto either = PartitionFilter::Make(cp::or_(day, x), schema).ValueOrDie();
  EXPECT_TRUE(either.MayMatch(a).ValueOrDie());
  EXPECT_TRUE(either.MayMatch(b).ValueOrDie());
}

}  // namespace
}  // namespace stoker
