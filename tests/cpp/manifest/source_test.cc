// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/source.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "stoker/error.h"

namespace stoker {
namespace {

std::vector<std::string> Names(const std::vector<SourceFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(std::filesystem::path(f.path).filename().string());
  return out;
}

void Touch(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "x";
}

TEST(SourceTest, DirectoryIsSearchedRecursivelyInSortedOrder) {
  testing::TempDir dir;
  Touch(dir.path() / "b.parquet");
  Touch(dir.path() / "a" / "z.parquet");
  Touch(dir.path() / "c.txt");
  auto files = ResolveSources({dir.path().string()}).ValueOrDie();
  EXPECT_EQ(Names(files), (std::vector<std::string>{"z.parquet", "b.parquet"}));
  EXPECT_GT(files[0].mtime_ns, 0);
  EXPECT_EQ(files[0].size, 1);
}

TEST(SourceTest, GlobMatchesWithinOneComponent) {
  testing::TempDir dir;
  Touch(dir.path() / "part-1.parquet");
  Touch(dir.path() / "part-0.parquet");
  Touch(dir.path() / "other.parquet");
  auto files = ResolveSources({(dir.path() / "part-*.parquet").string()}).ValueOrDie();
  EXPECT_EQ(Names(files), (std::vector<std::string>{"part-0.parquet", "part-1.parquet"}));
}

TEST(SourceTest, HiddenPathsAreNeverData) {
  EXPECT_TRUE(IsHiddenPath("_metadata"));
  EXPECT_TRUE(IsHiddenPath("_temporary/0/part-0.parquet"));
  EXPECT_TRUE(IsHiddenPath("day=1/.part-0.parquet.crc"));
  EXPECT_FALSE(IsHiddenPath("day=1/part_0.parquet"));
  EXPECT_FALSE(IsHiddenPath("a/b.parquet"));

  testing::TempDir dir;
  Touch(dir.path() / "a.parquet");
  Touch(dir.path() / "_metadata");
  Touch(dir.path() / "_SUCCESS");
  Touch(dir.path() / "_hidden.parquet");
  Touch(dir.path() / ".a.parquet");
  Touch(dir.path() / "_temporary" / "b.parquet");
  Touch(dir.path() / "sub" / "_c.parquet");
  auto resolved = ResolveSourceList({dir.path().string()}).ValueOrDie();
  ASSERT_EQ(resolved.size(), 1u);
  EXPECT_EQ(Names(resolved[0].files), (std::vector<std::string>{"a.parquet"}));
  EXPECT_EQ(std::filesystem::path(resolved[0].summary.path).filename(), "_metadata");
  EXPECT_EQ(resolved[0].root, dir.path().string());
  auto glob = ResolveSourceList({(dir.path() / "*").string()}).ValueOrDie();
  EXPECT_EQ(Names(glob[0].files), (std::vector<std::string>{"a.parquet"}));
  EXPECT_TRUE(glob[0].summary.path.empty());
  EXPECT_TRUE(glob[0].root.empty());
}

TEST(SourceTest, ListKeepsSourceOrder) {
  testing::TempDir dir;
  Touch(dir.path() / "b.parquet");
  Touch(dir.path() / "a.parquet");
  auto files =
      ResolveSources({(dir.path() / "b.parquet").string(), (dir.path() / "a.parquet").string()})
          .ValueOrDie();
  EXPECT_EQ(Names(files), (std::vector<std::string>{"b.parquet", "a.parquet"}));
}

TEST(SourceTest, ErrorsNameThePath) {
  testing::TempDir dir;
  auto missing = ResolveSources({(dir.path() / "nope").string()});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(IsNotFound(missing.status()));
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);

  auto empty = ResolveSources({dir.path().string()});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("no *.parquet"), std::string::npos);

  auto glob = ResolveSources({(dir.path() / "*.parquet").string()});
  ASSERT_FALSE(glob.ok());
  EXPECT_TRUE(IsNotFound(glob.status()));

  Touch(dir.path() / "a.parquet");
  auto twice = ResolveSources({dir.path().string(), (dir.path() / "a.parquet").string()});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("more than one source"), std::string::npos);
}

}  // namespace
}  // namespace stoker
