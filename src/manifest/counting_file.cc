// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/counting_file.h"

#include <arrow/buffer.h>
#include <arrow/util/future.h>

namespace stoker {

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::Log(
    int64_t position, arrow::Result<std::shared_ptr<arrow::Buffer>> read) {
  if (log_ != nullptr && read.ok()) log_->Add(position, *read);
  return read;
}

arrow::Future<std::shared_ptr<arrow::Buffer>> CountingFile::Log(
    int64_t position, arrow::Future<std::shared_ptr<arrow::Buffer>> read) {
  if (log_ == nullptr) return read;
  return read.Then([log = log_, position](const std::shared_ptr<arrow::Buffer>& bytes) {
    log->Add(position, bytes);
    return bytes;
  });
}

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
  return Log(position, inner_->ReadAt(position, nbytes));
}

arrow::Future<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAsync(
    const arrow::io::IOContext& context, int64_t position, int64_t nbytes) {
  Count(nbytes);
  return Log(position, inner_->ReadAsync(context, position, nbytes));
}

arrow::Result<int64_t> CountingFile::ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                            void* out) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes, allow_short_read, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAt(int64_t position, int64_t nbytes,
                                                                   bool allow_short_read) {
  Count(nbytes);
  return Log(position, inner_->ReadAt(position, nbytes, allow_short_read));
}

arrow::Future<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAsync(
    const arrow::io::IOContext& context, int64_t position, int64_t nbytes, bool allow_short_read) {
  Count(nbytes);
  return Log(position, inner_->ReadAsync(context, position, nbytes, allow_short_read));
}

}  // namespace stoker
