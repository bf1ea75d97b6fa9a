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
#include "telemetry/stats.h"

namespace stoker {

/// What one footer tells about a file, before the files are checked against each other.
struct Footer {
  /// The footer, Thrift-serialized as in the file: decoded footers take kilobytes per row
  /// group, and a million row groups' worth would not fit beside the data.
  std::string serialized;
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

/// Decodes a Footer::serialized (no Thrift size limits: it was read and checked once).
arrow::Result<std::shared_ptr<parquet::FileMetaData>> DecodeFooter(const std::string& serialized);

/// Reads every file's footer, `concurrency` (>= 1) requests in flight at once on threads of
/// its own (a footer read is one round trip, latency-bound, not CPU-bound); counts the
/// requests in `stats` (metadata_requests) when it is not null. The first failure, saying
/// whether the store or the file is at fault.
arrow::Result<std::vector<Footer>> ReadFooters(const std::vector<SourceFile>& sources,
                                               int concurrency, Stats* stats);

}  // namespace stoker
