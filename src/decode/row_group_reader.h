// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// Parquet decoding of one unit (a row group): its column chunks fetched in coalesced ranges
// (checked against the dataset index's checksums, or the file's identity, when the manifest
// says so), then decoded into one RecordBatch with the columns in the order asked for,
// partition columns filled in, and every value checked (value_check.h). Errors name the file
// and row group.
#pragma once

#include <arrow/io/interfaces.h>
#include <arrow/record_batch.h>
#include <arrow/result.h>
#include <arrow/util/future.h>
#include <parquet/file_reader.h>

#include <memory>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "telemetry/stats.h"

namespace stoker {

/// A row group whose column chunks are being fetched.
struct RowGroupFetch {
  std::unique_ptr<parquet::ParquetFileReader> reader;
  std::vector<int> columns;  // indices into the manifest's schema
  std::vector<int> leaves;   // their leaf columns in this file
  /// Completes when every byte is in memory.
  arrow::Future<> ready;
  Stats::Clock::time_point started;
  int64_t bytes_needed = 0;
  /// The unit it reads (for the trace), and the byte span of the file, for error messages.
  int32_t file = 0;
  int32_t row_group = 0;
  int64_t first_byte = 0;
  int64_t end_byte = 0;
};

/// Starts fetching the `columns` of one row group in coalesced ranges, without waiting.
arrow::Result<std::shared_ptr<RowGroupFetch>> StartFetch(const Manifest& manifest, const Unit& unit,
                                                         std::vector<int> columns,
                                                         const arrow::io::IOContext& io,
                                                         Stats* stats);

/// Records a fetch's bytes and time waiting on the store; call when `ready` completes.
void NoteArrived(const RowGroupFetch& fetch, Stats* stats);

/// Decodes a fetch whose `ready` future completed (its error, if it failed).
arrow::Result<std::shared_ptr<arrow::RecordBatch>> DecodeFetch(const Manifest& manifest,
                                                               const Unit& unit,
                                                               RowGroupFetch* fetch,
                                                               arrow::MemoryPool* pool,
                                                               Stats* stats);

/// "'path' (row group n)": where a unit's data comes from, for error messages.
std::string DescribeUnit(const Manifest& manifest, const Unit& unit);

}  // namespace stoker
