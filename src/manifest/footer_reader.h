// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>
#include <parquet/arrow/schema.h>
#include <parquet/metadata.h>

#include <memory>
#include <string>
#include <vector>

#include "manifest/source.h"
#include "manifest/summary_skim.h"
#include "telemetry/stats.h"

namespace stoker {

/// A dataset index's summary bytes and their skim, held once for all the footers cut from
/// it (SerializedFooter).
struct IndexSummary {
  std::shared_ptr<arrow::Buffer> bytes;
  SummarySkim skim;
  /// What CutFooter drops from the key-value entries (the index's own entries).
  std::string drop_prefix;
};

/// A footer, Thrift-serialized: a file's own bytes, or its cut of a dataset index's
/// summary, made again each time it is needed, so that a summary's bytes are held once
/// rather than once more in a copy per file (a million row groups: 0.36 GB, not 0.72).
class SerializedFooter {
 public:
  SerializedFooter() = default;
  explicit SerializedFooter(std::string own) : own_(std::move(own)) {}
  SerializedFooter(std::shared_ptr<const IndexSummary> summary, std::vector<int> row_groups)
      : summary_(std::move(summary)), row_groups_(std::move(row_groups)) {}

  /// The bytes Parquet decodes.
  std::string Serialized() const {
    return summary_ == nullptr ? own_
                               : CutFooter(summary_->skim, row_groups_, summary_->drop_prefix);
  }
  /// The summary it is cut from; null for a file's own footer.
  const IndexSummary* summary() const { return summary_.get(); }
  /// Bytes held for this footer alone (a summary, shared by many, is not counted).
  int64_t HeldBytes() const {
    return static_cast<int64_t>(own_.capacity() + row_groups_.capacity() * sizeof(int));
  }

 private:
  std::string own_;
  std::shared_ptr<const IndexSummary> summary_;
  std::vector<int> row_groups_;
};

/// What one footer tells about a file, before the files are checked against each other.
struct Footer {
  /// The footer, Thrift-serialized as in the file: decoded footers take kilobytes per row
  /// group, and a million row groups' worth would not fit beside the data.
  SerializedFooter bytes;
  /// The Arrow schema and the leaves of each field, as Parquet's Arrow reader derives them;
  /// shared by the files of a summary file.
  std::shared_ptr<arrow::Schema> schema;
  std::shared_ptr<const parquet::arrow::SchemaManifest> schema_manifest;
  /// For a footer cut from a dataset index: each row group's row count as the skimmer read
  /// it, checked against the decoded footer (CheckCut). Empty for a footer read from a file.
  std::vector<int64_t> skimmed_rows;
  /// For a footer cut from an index `stoker index --checksums` wrote: its column chunks'
  /// checksums (IndexedFile::checksums). Empty otherwise.
  std::vector<uint64_t> checksums;
};

/// The Arrow schema and schema manifest a parquet::arrow::FileReader with default
/// properties derives from `metadata` (`serialized` left empty).
arrow::Result<Footer> DescribeFooter(const parquet::FileMetaData& metadata);

/// Decodes a SerializedFooter::Serialized() (no Thrift size limits: it was read and checked once).
arrow::Result<std::shared_ptr<parquet::FileMetaData>> DecodeFooter(const std::string& serialized);

/// Reads every file's footer, `concurrency` (>= 1) requests in flight at once on threads of
/// its own (a footer read is one round trip, latency-bound, not CPU-bound); counts the
/// requests in `stats` (metadata_requests) when it is not null. The first failure, saying
/// whether the store or the file is at fault; with `failed` (on_error="skip"), no failure
/// fails the call: (*failed)[i] is file i's error (OK when it was read) and its Footer empty.
arrow::Result<std::vector<Footer>> ReadFooters(const std::vector<SourceFile>& sources,
                                               int concurrency, Stats* stats,
                                               std::vector<arrow::Status>* failed = nullptr);

}  // namespace stoker
