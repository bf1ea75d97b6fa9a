// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/counting_file.h"

#include <arrow/buffer.h>

namespace stoker {

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadIntoPool(int64_t position,
                                                                         int64_t nbytes,
                                                                         bool allow_short_read) {
  ARROW_ASSIGN_OR_RAISE(std::shared_ptr<arrow::ResizableBuffer> buffer,
                        arrow::AllocateResizableBuffer(nbytes, pool_));
  ARROW_ASSIGN_OR_RAISE(int64_t read,
                        inner_->ReadAt(position, nbytes, allow_short_read, buffer->mutable_data()));
  if (read < nbytes) ARROW_RETURN_NOT_OK(buffer->Resize(read, /*shrink_to_fit=*/false));
  return buffer;
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadBuffer(int64_t position,
                                                                       int64_t nbytes,
                                                                       bool allow_short_read) {
  if (pool_ != nullptr) return ReadIntoPool(position, nbytes, allow_short_read);
  return inner_->ReadAt(position, nbytes, allow_short_read);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::Log(
    int64_t position, arrow::Result<std::shared_ptr<arrow::Buffer>> read) {
  if (log_ != nullptr && read.ok()) log_->Add(position, *read);
  return read;
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
  return Log(position, ReadBuffer(position, nbytes, /*allow_short_read=*/false));
}

arrow::Result<int64_t> CountingFile::ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                            void* out) {
  Count(nbytes);
  return inner_->ReadAt(position, nbytes, allow_short_read, out);
}

arrow::Result<std::shared_ptr<arrow::Buffer>> CountingFile::ReadAt(int64_t position, int64_t nbytes,
                                                                   bool allow_short_read) {
  Count(nbytes);
  return Log(position, ReadBuffer(position, nbytes, allow_short_read));
}

}  // namespace stoker
