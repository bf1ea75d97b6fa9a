// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/error.h"

#include <arrow/result.h>
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

namespace stoker {
namespace {

TEST(ErrorTest, NotFoundIsAnIoErrorMarkedAsSuch) {
  const arrow::Status missing = NotFound("'", "/data/a.parquet", "' does not exist");
  EXPECT_TRUE(missing.IsIOError());
  EXPECT_EQ(missing.message(), "'/data/a.parquet' does not exist");
  EXPECT_TRUE(IsNotFound(missing));
  EXPECT_EQ(missing.detail()->ToString(), "path not found");
  EXPECT_FALSE(IsNotFound(arrow::Status::IOError("'/data/a.parquet' does not exist")));
  EXPECT_FALSE(IsNotFound(arrow::Status::OK()));
}

TEST(ErrorTest, WithContextPrefixesKeepingCodeAndDetail) {
  EXPECT_TRUE(WithContext(arrow::Status::OK(), "reading").ok());
  const arrow::Status key = WithContext(arrow::Status::KeyError("no column 'x'"), "file 'a'");
  EXPECT_TRUE(key.IsKeyError());
  EXPECT_EQ(key.message(), "file 'a': no column 'x'");
  const arrow::Status nested = WithContext(WithContext(NotFound("gone"), "inner"), "outer");
  EXPECT_TRUE(IsNotFound(nested));
  EXPECT_EQ(nested.message(), "outer: inner: gone");
}

TEST(ErrorTest, CatchAllTurnsExceptionsIntoIoErrors) {
  const arrow::Status thrown =
      CatchAll([]() -> arrow::Status { throw std::runtime_error("corrupt footer"); });
  EXPECT_TRUE(thrown.IsIOError());
  EXPECT_EQ(thrown.message(), "corrupt footer");
  const arrow::Result<int> bad_alloc =
      CatchAll([]() -> arrow::Result<int> { throw std::bad_alloc(); });
  EXPECT_TRUE(bad_alloc.status().IsIOError());
  // What the body returns passes through.
  EXPECT_EQ(CatchAll([]() -> arrow::Result<int> { return 7; }).ValueOrDie(), 7);
  EXPECT_TRUE(CatchAll([] { return arrow::Status::Invalid("x"); }).IsInvalid());
}

}  // namespace
}  // namespace stoker
