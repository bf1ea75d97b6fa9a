// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/storage.h"

#include <arrow/filesystem/s3fs.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "stoker/error.h"

namespace stoker {
namespace {

TEST(StorageTest, PlainPathsAndFileUrisAreTheLocalFileSystem) {
  std::string path;
  auto local = OpenFileSystem("/data/set/part-0.parquet", {}, nullptr, &path).ValueOrDie();
  EXPECT_EQ(local->type_name(), "local");
  EXPECT_EQ(path, "/data/set/part-0.parquet");
  auto uri = OpenFileSystem("file:///data/set/", {}, nullptr, &path).ValueOrDie();
  EXPECT_EQ(uri->type_name(), "local");
  EXPECT_EQ(path, "/data/set");
  EXPECT_FALSE(OpenFileSystem("nosuchscheme://bucket/x", {}, nullptr, &path).ok());
}

TEST(StorageTest, AnS3UriWithAnEndpointIsBucketAndKeyWithoutARequest) {
  StorageOptions storage;
  storage.endpoint_override = "127.0.0.1:9";  // nothing listens: no request may be made
  storage.scheme = "http";
  storage.region = "us-east-1";
  storage.anonymous = true;
  std::string path;
  {
    auto fs = OpenFileSystem("s3://bucket/prefix/part-0.parquet", storage, nullptr, &path);
    ASSERT_TRUE(fs.ok()) << fs.status().ToString();
    EXPECT_EQ((*fs)->type_name(), "s3");
    EXPECT_EQ(path, "bucket/prefix/part-0.parquet");
    const auto& options = static_cast<const arrow::fs::S3FileSystem&>(**fs).options();
    EXPECT_EQ(options.endpoint_override, "127.0.0.1:9");
    EXPECT_EQ(options.scheme, "http");
    EXPECT_EQ(options.region, "us-east-1");
    EXPECT_NE(options.retry_strategy, nullptr);
  }
  // Arrow requires S3 shut down before exit, once: after every test of the binary (the
  // test may run more than once in a process).
  static const bool finalized_at_exit =
      std::atexit([] { (void)arrow::fs::EnsureS3Finalized(); }) == 0;
  EXPECT_TRUE(finalized_at_exit);
}

TEST(StorageTest, DeniedAccessSaysWhatToCheck) {
  for (const char* cause :
       {"AWS Error ACCESS_DENIED during GetObject", "InvalidAccessKeyId: the key does not exist",
        "SignatureDoesNotMatch", "HTTP 403 Forbidden"}) {
    const auto status =
        ExplainStorageError(arrow::Status::IOError(cause), "s3://bucket/part-0.parquet");
    ASSERT_TRUE(status.IsIOError());
    EXPECT_EQ(status.message().rfind("access denied to 's3://bucket/part-0.parquet': check the "
                                     "credentials",
                                     0),
              0u)
        << status.message();
    EXPECT_NE(status.message().find(std::string("(") + cause + ")"), std::string::npos);
  }
}

TEST(StorageTest, OtherErrorsKeepTheirCodeAndDetailAndNameTheLocation) {
  EXPECT_TRUE(ExplainStorageError(arrow::Status::OK(), "x").ok());
  const auto timeout = ExplainStorageError(arrow::Status::IOError("connection reset"), "/a/b");
  ASSERT_TRUE(timeout.IsIOError());
  EXPECT_EQ(timeout.message(), "'/a/b': connection reset");
  const auto missing = ExplainStorageError(NotFound("no such file"), "/a/b");
  EXPECT_TRUE(IsNotFound(missing));
  EXPECT_EQ(missing.message(), "'/a/b': no such file");
  EXPECT_TRUE(ExplainStorageError(arrow::Status::Invalid("bad"), "/a").IsInvalid());
}

}  // namespace
}  // namespace stoker
