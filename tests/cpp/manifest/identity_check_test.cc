// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/identity_check.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/fixtures.h"
#include "stoker/error.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// The file at `path` as a listing describes it.
SourceFile Listed(const fs::path& path) {
  auto files = ResolveSources({path.string()}).ValueOrDie();
  EXPECT_EQ(files.size(), 1u);
  return files[0];
}

arrow::Status Check(IdentityCheck* check, int32_t index, const SourceFile& file, Stats* stats) {
  return check->Verify(index, file, "/data/_metadata", arrow::internal::GetCpuThreadPool(), stats)
      .status();
}

TEST(IdentityCheckTest, AnUnchangedFilePassesWithOneRequestSharedByLaterCalls) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "a.parquet") << "12345";
  const SourceFile file = Listed(dir.path() / "a.parquet");
  IdentityCheck check(2);
  Stats stats;
  EXPECT_TRUE(Check(&check, 1, file, &stats).ok());
  EXPECT_TRUE(Check(&check, 1, file, &stats).ok());
  EXPECT_EQ(stats.Snapshot().metadata_requests, 1);
  // Once checked, a file is not checked again: a later rewrite is not this check's to see.
  std::ofstream(dir.path() / "a.parquet") << "123456789";
  EXPECT_TRUE(Check(&check, 1, file, &stats).ok());
  EXPECT_EQ(stats.Snapshot().metadata_requests, 1);
  // Another file of the manifest gets its own request.
  EXPECT_FALSE(Check(&check, 0, file, &stats).ok());
  EXPECT_EQ(stats.Snapshot().metadata_requests, 2);
}

TEST(IdentityCheckTest, ARewrittenFileNamesTheFileTheIndexAndBothIdentities) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "a.parquet") << "12345";
  const SourceFile file = Listed(dir.path() / "a.parquet");
  std::ofstream(dir.path() / "a.parquet") << "1234567";
  const SourceFile now = Listed(dir.path() / "a.parquet");
  IdentityCheck check(1);
  const auto status = Check(&check, 0, file, nullptr);
  ASSERT_TRUE(status.IsInvalid()) << status.ToString();
  EXPECT_EQ(status.message(),
            "'" + file.display + "' was rewritten after the dataset index '/data/_metadata' was " +
                "written (size 7 bytes, modified at " + std::to_string(now.mtime_ns) +
                " ns; indexed 5 bytes at " + std::to_string(file.mtime_ns) +
                " ns); rewrite the index with `stoker index --overwrite` (index=\"trust\" reads "
                "no listing, so a changed file is found at its first read)");
}

TEST(IdentityCheckTest, ASameSizedFileTouchedLaterIsRewrittenToo) {
  testing::TempDir dir;
  const fs::path path = dir.path() / "a.parquet";
  std::ofstream(path) << "12345";
  const SourceFile file = Listed(path);
  fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(3));
  IdentityCheck check(1);
  const auto status = Check(&check, 0, file, nullptr);
  ASSERT_TRUE(status.IsInvalid());
  EXPECT_NE(status.message().find("(size 5 bytes"), std::string::npos) << status.message();
}

TEST(IdentityCheckTest, ARemovedFileIsNotFound) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "a.parquet") << "12345";
  const SourceFile file = Listed(dir.path() / "a.parquet");
  fs::remove(dir.path() / "a.parquet");
  IdentityCheck check(1);
  const auto status = Check(&check, 0, file, nullptr);
  EXPECT_TRUE(IsNotFound(status)) << status.ToString();
  EXPECT_NE(status.message().find("'" + file.display +
                                  "' is in the dataset index '/data/_metadata' but no longer in "
                                  "the store (removed after the index was written)"),
            std::string::npos)
      << status.message();
}

}  // namespace
}  // namespace stoker
