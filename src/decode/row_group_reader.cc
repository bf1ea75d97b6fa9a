// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "decode/row_group_reader.h"

#include <arrow/array.h>
#include <arrow/array/util.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/io/caching.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "decode/flat_column.h"
#include "decode/value_check.h"
#include "manifest/chunk_checksums.h"
#include "manifest/counting_file.h"
#include "stoker/error.h"

namespace stoker {

namespace {

// Keeps the status's code, adds where it happened. A feature Parquet C++ lacks (e.g. a
// nested column chunk over 2 GiB) is a property of this file the user must act on, like
// any other unreadable data.
arrow::Status ReadError(arrow::Status status, const Manifest& manifest, const Unit& unit) {
  if (status.IsNotImplemented()) status = arrow::Status::IOError(status.message());
  return WithContext(status, "reading " + DescribeUnit(manifest, unit));
}

// OK when each of `leaves`' column chunks in `unit` (its file's footer: `metadata`), as `log`
// holds the bytes read, has the checksum the dataset index recorded for it.
arrow::Status CheckChunks(const Manifest& manifest, const Unit& unit,
                          const std::shared_ptr<parquet::FileMetaData>& metadata,
                          const std::vector<int>& leaves, const ReadLog& log) {
  const ManifestFile& file = manifest.files()[unit.file];
  return CatchAll([&]() -> arrow::Status {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    const auto row_group = metadata->RowGroup(unit.row_group);
    const auto columns = static_cast<size_t>(metadata->num_columns());
    for (int leaf : leaves) {
      const auto chunk = row_group->ColumnChunk(leaf);
      ARROW_ASSIGN_OR_RAISE(const uint64_t got, log.Checksum(ChunkRangeOf(*chunk)));
      const uint64_t indexed =
          file.checksums[static_cast<size_t>(unit.row_group) * columns + static_cast<size_t>(leaf)];
      if (got != indexed) {
        return arrow::Status::Invalid(
            "'", file.source.display, "' changed after the dataset index '", *file.trusted_index,
            "' was written: column '", chunk->path_in_schema()->ToDotString(), "' of row group ",
            unit.row_group, " does not have the bytes indexed (checksum ", EncodeChecksums({got}),
            ", indexed ", EncodeChecksums({indexed}),
            "); rewrite the index with `stoker index --overwrite --checksums`");
      }
    }
    return arrow::Status::OK();
    END_PARQUET_CATCH_EXCEPTIONS
  });
}

// Opens the unit's file and starts reading `fetch`'s leaves of its row group on `io`
// (pre-buffered; fetch->ready completes once they are in memory), counted in `stats` and,
// when given, kept in `log` for their checksums. May throw (CatchAll it).
arrow::Status StartReading(const Manifest& manifest, const Unit& unit,
                           const arrow::io::IOContext& io, Stats* stats,
                           const std::shared_ptr<ReadLog>& log, RowGroupFetch* fetch) {
  const ManifestFile& file = manifest.files()[unit.file];
  // Opening by FileInfo skips a metadata request (the size is known from the listing).
  arrow::fs::FileInfo info(file.source.path, arrow::fs::FileType::File);
  info.set_size(file.source.size);
  ARROW_ASSIGN_OR_RAISE(auto input, file.source.filesystem->OpenInputFile(info));
  auto counted =
      std::make_shared<CountingFile>(std::move(input), stats, RequestKind::kData, log, io.pool());
  const std::vector<int> row_groups{unit.row_group};
  ARROW_ASSIGN_OR_RAISE(auto metadata, manifest.FileMetadata(unit.file));
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  fetch->reader =
      parquet::ParquetFileReader::Open(counted, parquet::ReaderProperties(io.pool()), metadata);
  auto row_group = metadata->RowGroup(unit.row_group);
  fetch->first_byte = file.source.size;
  for (int leaf : fetch->leaves) {
    const ChunkRange range = ChunkRangeOf(*row_group->ColumnChunk(leaf));
    fetch->bytes_needed += range.length;
    fetch->first_byte = std::min(fetch->first_byte, range.start);
    fetch->end_byte = std::max(fetch->end_byte, range.start + range.length);
  }
  // Pre-buffered bytes live as long as this reader: one reader per unit frees them when
  // the unit is decoded (docs/design.md, "Building on the pyarrow wheel").
  fetch->reader->PreBuffer(row_groups, fetch->leaves, io, arrow::io::CacheOptions::Defaults());
  fetch->ready = fetch->reader->WhenBuffered(row_groups, fetch->leaves);
  END_PARQUET_CATCH_EXCEPTIONS
  return arrow::Status::OK();
}

arrow::Result<std::shared_ptr<RowGroupFetch>> StartFetchUnchecked(const Manifest& manifest,
                                                                  const Unit& unit,
                                                                  std::vector<int> columns,
                                                                  const arrow::io::IOContext& io,
                                                                  Stats* stats) {
  const ManifestFile& file = manifest.files()[unit.file];
  auto fetch = std::make_shared<RowGroupFetch>();
  fetch->columns = std::move(columns);
  for (int c : fetch->columns) {
    const auto& leaves = file.column_leaves[c];
    fetch->leaves.insert(fetch->leaves.end(), leaves.begin(), leaves.end());
  }
  fetch->started = Stats::Clock::now();
  fetch->file = unit.file;
  fetch->row_group = unit.row_group;
  // A file that only a dataset index named (index="trust") is checked beside its first data
  // read, and its bytes are not used before the check has passed. With the index's
  // checksums, the chunks read are checked instead (no request), and the identity only
  // when a read fails, to say why.
  const bool by_checksums = !file.checksums.empty();
  auto verify = [&manifest, file_index = unit.file, executor = io.executor(), stats] {
    return manifest.VerifyFile(file_index, executor, stats);
  };
  auto verified = by_checksums ? arrow::Future<>::MakeFinished() : verify();
  auto log = by_checksums ? std::make_shared<ReadLog>() : nullptr;
  auto start_reading = [&] { return StartReading(manifest, unit, io, stats, log, fetch.get()); };
  if (const arrow::Status started = CatchAll(start_reading); !started.ok()) {
    // A file that cannot be opened, or not read as its footer says: the check, when there
    // is one, says why (removed, rewritten).
    if (by_checksums) verified = verify();
    verified.Wait();
    ARROW_RETURN_NOT_OK(verified.status());
    return started;
  }
  if (by_checksums) {
    fetch->ready = fetch->ready.Then(
        // The footer the reader holds: the manifest's cache may have dropped it meanwhile.
        [&manifest, unit, metadata = fetch->reader->metadata(), leaves = fetch->leaves,
         log]() -> arrow::Future<> {
          return arrow::Future<>::MakeFinished(CheckChunks(manifest, unit, metadata, leaves, *log));
        },
        [verify](const arrow::Status& failed) -> arrow::Future<> {
          // A removed or rewritten file's read fails: the identity check says so.
          return verify().Then([failed] { return failed; });
        });
  } else if (!verified.is_finished() || !verified.status().ok()) {
    // The check's error, when it fails, says why the data read failed too.
    fetch->ready = arrow::AllFinished({verified, fetch->ready})
                       .Then([] { return arrow::Status::OK(); },
                             [verified](const arrow::Status& failed) {
                               return verified.status().ok() ? failed : verified.status();
                             });
  }
  return fetch;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> DecodeUnchecked(const Manifest& manifest,
                                                                   const Unit& unit,
                                                                   RowGroupFetch* fetch,
                                                                   arrow::MemoryPool* pool,
                                                                   Stats* stats) {
  if (!fetch->ready.status().ok()) {
    return WithContext(fetch->ready.status(), "fetching bytes " +
                                                  std::to_string(fetch->first_byte) + "-" +
                                                  std::to_string(fetch->end_byte));
  }
  const auto fetched = Stats::Clock::now();
  const ManifestFile& file = manifest.files()[unit.file];
  int64_t num_rows = 0;
  // Flat number columns straight from Parquet's column reader (flat_column.h); the rest,
  // and any such column that holds a null or fails to read, by Parquet's Arrow reader.
  std::vector<std::shared_ptr<arrow::ArrayData>> flat(fetch->columns.size());
  std::vector<int> others;
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  // The footer the reader holds (the manifest's cache may have dropped it meanwhile).
  const parquet::FileMetaData& metadata = *fetch->reader->metadata();
  num_rows = metadata.RowGroup(unit.row_group)->num_rows();
  const parquet::SchemaDescriptor& descriptors = *metadata.schema();
  std::shared_ptr<parquet::RowGroupReader> row_group;
  for (size_t k = 0; k < fetch->columns.size(); ++k) {
    const int c = fetch->columns[k];
    const auto& leaves = file.column_leaves[c];
    const auto& type = manifest.schema()->field(c)->type();
    if (leaves.size() == 1 && DecodesFlat(*descriptors.Column(leaves[0]), *type)) {
      if (row_group == nullptr) row_group = fetch->reader->RowGroup(unit.row_group);
      auto decoded = CatchAll(
          [&] { return DecodeFlatColumn(row_group.get(), leaves[0], type, num_rows, pool); });
      if (decoded.ok() && *decoded != nullptr) {
        flat[k] = std::move(decoded).ValueUnsafe();
        continue;
      }
    }
    others.insert(others.end(), leaves.begin(), leaves.end());
  }
  END_PARQUET_CATCH_EXCEPTIONS
  std::shared_ptr<arrow::Table> table;
  if (!others.empty()) {
    BEGIN_PARQUET_CATCH_EXCEPTIONS
    parquet::ArrowReaderProperties properties;
    properties.set_use_threads(false);  // parallelism is across units, in our pool
    properties.set_pre_buffer(false);   // done by StartFetch
    ARROW_ASSIGN_OR_RAISE(
        auto reader, parquet::arrow::FileReader::Make(pool, std::move(fetch->reader), properties));
    ARROW_ASSIGN_OR_RAISE(table, reader->ReadRowGroup(unit.row_group, others));
    END_PARQUET_CATCH_EXCEPTIONS
    if (table->num_rows() != num_rows) {
      // Rows other than the footer's: with no flat column, the unit's row check says the
      // file changed (exec/unit_reader.cc), as it did before flat columns were decoded apart.
      const bool any_flat =
          std::any_of(flat.begin(), flat.end(), [](const auto& array) { return array != nullptr; });
      if (any_flat) {
        return arrow::Status::IOError("its columns decoded to ", table->num_rows(),
                                      " rows where its footer says ", num_rows);
      }
      num_rows = table->num_rows();
    }
  }

  // Columns in the order asked for, whatever order the file stores them in; a partition
  // column is the file's constant, repeated.
  arrow::FieldVector fields;
  arrow::ChunkedArrayVector chunks;
  for (size_t k = 0; k < fetch->columns.size(); ++k) {
    const int c = fetch->columns[k];
    const auto& field = manifest.schema()->field(c);
    fields.push_back(field);
    if (flat[k] != nullptr) {
      chunks.push_back(std::make_shared<arrow::ChunkedArray>(arrow::MakeArray(flat[k])));
      continue;
    }
    if (auto value = manifest.PartitionValue(unit.file, c); value != nullptr) {
      ARROW_ASSIGN_OR_RAISE(auto constant, arrow::MakeArrayFromScalar(*value, num_rows, pool));
      chunks.push_back(std::make_shared<arrow::ChunkedArray>(std::move(constant)));
      continue;
    }
    auto column = table->GetColumnByName(field->name());
    if (column == nullptr || !column->type()->Equals(*field->type())) {
      return arrow::Status::Invalid("column '", field->name(), "' did not decode as ",
                                    field->type()->ToString());
    }
    chunks.push_back(std::move(column));
  }
  table = arrow::Table::Make(arrow::schema(fields), std::move(chunks), num_rows);
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch(pool));
  ARROW_RETURN_NOT_OK(CheckValues(*batch));
  const auto decoded = Stats::Clock::now();
  stats->AddDecode(decoded - fetched);
  stats->Trace(TraceStage::kDecode, fetched, decoded, unit.file, unit.row_group);
  return batch;
}

}  // namespace

std::string DescribeUnit(const Manifest& manifest, const Unit& unit) {
  return "'" + manifest.files()[unit.file].source.display + "' (row group " +
         std::to_string(unit.row_group) + ")";
}

arrow::Result<std::shared_ptr<RowGroupFetch>> StartFetch(const Manifest& manifest, const Unit& unit,
                                                         std::vector<int> columns,
                                                         const arrow::io::IOContext& io,
                                                         Stats* stats) {
  auto result =
      CatchAll([&] { return StartFetchUnchecked(manifest, unit, std::move(columns), io, stats); });
  if (!result.ok()) return ReadError(result.status(), manifest, unit);
  return result;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> DecodeFetch(const Manifest& manifest,
                                                               const Unit& unit,
                                                               RowGroupFetch* fetch,
                                                               arrow::MemoryPool* pool,
                                                               Stats* stats) {
  auto result = CatchAll([&] { return DecodeUnchecked(manifest, unit, fetch, pool, stats); });
  if (!result.ok()) return ReadError(result.status(), manifest, unit);
  return result;
}

void NoteArrived(const RowGroupFetch& fetch, Stats* stats) {
  const auto now = Stats::Clock::now();
  stats->AddRead(fetch.bytes_needed, now - fetch.started);
  stats->Trace(TraceStage::kFetch, fetch.started, now, fetch.file, fetch.row_group);
}

}  // namespace stoker
