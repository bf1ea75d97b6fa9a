// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The fuzz targets (tests/fuzz/README.md). Each runs one input through the real engine and
// returns 0. An error Status is the expected answer to bad input; a target aborts (a
// finding) only when the engine breaks a contract: it crashes, a sanitizer reports, or it
// delivers data that is wrong without an error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker::fuzz {

/// The bytes as a Parquet file: footer, schema, pages through Loader::Make and one epoch.
int ParquetInput(const uint8_t* data, size_t size);
/// The bytes as a serialized filter expression (what stoker.Loader(filter=...) hands the
/// engine): arrow::compute::Deserialize, the loader's checks, statistics pruning, an epoch;
/// the rows delivered must be those the expression selects.
int FilterInput(const uint8_t* data, size_t size);
/// The bytes as a Flight ticket: DecodeTicket (which must round-trip through EncodeTicket),
/// then the server's path for it: PlanStream and StartStream on a small loader.
int TicketInput(const uint8_t* data, size_t size);
/// The bytes drive a transform spec (up to four ops, any kinds, columns and parameters)
/// compiled against a small dataset of every column type and applied for one epoch.
int TransformInput(const uint8_t* data, size_t size);
/// The bytes as one encoded value (ndarray, compressed ndarray, png, jpeg; the first byte picks
/// the codec, shape and dtype) decoded by the workers' ColumnDecoder.
int CodecInput(const uint8_t* data, size_t size);
/// The bytes as a summary file's footer (Thrift compact FileMetaData): skimmed and cut file
/// by file (manifest/summary_skim.h); the cuts must decode as Parquet decodes the original.
int SummaryInput(const uint8_t* data, size_t size);

}  // namespace stoker::fuzz
