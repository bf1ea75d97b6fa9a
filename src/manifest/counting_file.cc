// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/counting_file.h"

#include <arrow/buffer.h>
#include <arrow/util/future.h>

namespace stoker {

arrow::Result<int64_t> CountingFile::Read(int64_t nbytes, void* out) {
  Count(nbytes);
  return inner_->Read(nbytes, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::Read(int64_t nbytes) {
  Count(nbytes);
  return inner_->Read(nbytes);
}

arrow::Result<int64_t> CountingFile::ReadAt(int64_t position, int64_t nbytes, void* out) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAt(int64_t position,
                                                                   int64_t nbytes) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes);
}

arrow::Future<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAsync(
    const arrow::io::IOContext& context, int64_t position, int64_t nbytes) {
  Count(nbytes);
  return inner_->ReadAsync(context, position, nbytes);
}

arrow::Result<int64_t> CountingFile::ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                            void* out) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes, allow_short_read, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAt(int64_t position, int64_t nbytes,
                                                                   bool allow_short_read) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes, allow_short_read);
}

arrow::Future<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAsync(
    const arrow::io::IOContext& context, int64_t position, int64_t nbytes, bool allow_short_read) {
  Count(nbytes);
  return inner_->ReadAsync(context, position, nbytes, allow_short_read);
}

}  // namespace stoker
