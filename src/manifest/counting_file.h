// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <arrow/util/future.h>

#include <memory>

#include "manifest/chunk_checksums.h"
#include "telemetry/stats.h"

namespace stoker {

/// What a counted file's requests are for: data (row groups) or metadata (footers, the
/// summary file); stats() reports them apart.
enum class RequestKind { kData, kMetadata };

/// A RandomAccessFile that forwards to another and counts the read requests and bytes it
/// asks of the store (after Parquet's range coalescing), for stats(); given a ReadLog, it
/// keeps there the bytes each read returned, for the index's checksums.
class CountingFile final : public arrow::io::RandomAccessFile {
 public:
  /// Given a `pool`, the reads that return buffers allocate them there (the inner file's own
  /// pool is its filesystem's, pyarrow's default mimalloc, which gives freed blocks back to
  /// the kernel at once: every row group's bytes then land on fresh pages the kernel must
  /// zero, a fifth of a shuffled epoch's CPU over list columns).
  CountingFile(std::shared_ptr<arrow::io::RandomAccessFile> inner, Stats* stats,
               RequestKind kind = RequestKind::kData, std::shared_ptr<ReadLog> log = nullptr,
               arrow::MemoryPool* pool = nullptr)
      : inner_(std::move(inner)), stats_(stats), kind_(kind), log_(std::move(log)), pool_(pool) {}

  arrow::Status Close() override { return inner_->Close(); }
  bool closed() const override { return inner_->closed(); }
  arrow::Result<int64_t> Tell() const override { return inner_->Tell(); }
  arrow::Status Seek(int64_t position) override { return inner_->Seek(position); }
  arrow::Result<int64_t> GetSize() override { return inner_->GetSize(); }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override;
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, bool allow_short_read,
                                void* out) override;
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes,
                                                       bool allow_short_read) override;
  // ReadAsync is RandomAccessFile's own (in libarrow): it runs the ReadAt above on the
  // context's I/O executor, so the async reads are counted, logged and land in pool_ alike.
  // (Neither the local nor the object-store files override it.) An override here would
  // instantiate Future<Buffer>'s completion in Stoker's code, where ThreadSanitizer sees its
  // writes but not the atomics in libarrow that order them (tests/sanitizers/tsan.supp).

 private:
  void Count(int64_t nbytes) {
    if (kind_ == RequestKind::kData) {
      stats_->AddRequest(nbytes);
    } else {
      stats_->AddMetadataRequest(nbytes);
    }
  }

  // ReadAt into a buffer of pool_ (set).
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadIntoPool(int64_t position, int64_t nbytes,
                                                             bool allow_short_read);
  // The buffer-returning reads, through pool_ when set.
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadBuffer(int64_t position, int64_t nbytes,
                                                           bool allow_short_read);
  arrow::Result<std::shared_ptr<arrow::Buffer>> Log(
      int64_t position, arrow::Result<std::shared_ptr<arrow::Buffer>> read);

  std::shared_ptr<arrow::io::RandomAccessFile> inner_;
  Stats* stats_;
  RequestKind kind_;
  std::shared_ptr<ReadLog> log_;
  arrow::MemoryPool* pool_;
};

}  // namespace stoker
