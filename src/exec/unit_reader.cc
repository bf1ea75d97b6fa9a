// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/unit_reader.h"

#include <arrow/array.h>
#include <arrow/array/util.h>
#include <arrow/filesystem/filesystem.h>
#include <arrow/io/caching.h>
#include <arrow/table.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>

#include <algorithm>
#include <numeric>

#include "assemble/column_types.h"
#include "exec/value_check.h"
#include "manifest/chunk_checksums.h"
#include "manifest/counting_file.h"
#include "stoker/error.h"
#include "util/digest.h"

namespace stoker {

namespace {

std::string Where(const Manifest& manifest, const Unit& unit) {
  return "'" + manifest.files()[unit.file].source.display + "' (row group " +
         std::to_string(unit.row_group) + ")";
}

// Keeps the status's code, adds where it happened. A feature Parquet C++ lacks (e.g. a
// nested column chunk over 2 GiB) is a property of this file the user must act on, like
// any other unreadable data.
arrow::Status ReadError(arrow::Status status, const Manifest& manifest, const Unit& unit) {
  if (status.IsNotImplemented()) status = arrow::Status::IOError(status.message());
  return WithContext(status, "reading " + Where(manifest, unit));
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
  auto start_reading = [&]() -> arrow::Status {
    // Opening by FileInfo skips a metadata request (the size is known from the listing).
    arrow::fs::FileInfo info(file.source.path, arrow::fs::FileType::File);
    info.set_size(file.source.size);
    ARROW_ASSIGN_OR_RAISE(auto input, file.source.filesystem->OpenInputFile(info));
    auto counted = std::make_shared<CountingFile>(std::move(input), stats, RequestKind::kData, log);
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
  };
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
  std::shared_ptr<arrow::Table> table;
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  parquet::ArrowReaderProperties properties;
  properties.set_use_threads(false);  // parallelism is across units, in our pool
  properties.set_pre_buffer(false);   // done by StartFetch
  ARROW_ASSIGN_OR_RAISE(
      auto reader, parquet::arrow::FileReader::Make(pool, std::move(fetch->reader), properties));
  ARROW_ASSIGN_OR_RAISE(table, reader->ReadRowGroup(unit.row_group, fetch->leaves));
  END_PARQUET_CATCH_EXCEPTIONS

  // A unit that reads partition columns only decodes no column at all: its row count is
  // the row group's.
  int64_t num_rows = table->num_rows();
  if (fetch->leaves.empty()) {
    ARROW_ASSIGN_OR_RAISE(auto metadata, manifest.FileMetadata(unit.file));
    num_rows = metadata->RowGroup(unit.row_group)->num_rows();
  }
  // Columns in the order asked for, whatever order the file stores them in; a partition
  // column is the file's constant, repeated.
  arrow::FieldVector fields;
  arrow::ChunkedArrayVector chunks;
  for (int c : fetch->columns) {
    const auto& field = manifest.schema()->field(c);
    if (auto value = manifest.PartitionValue(unit.file, c); value != nullptr) {
      ARROW_ASSIGN_OR_RAISE(auto constant, arrow::MakeArrayFromScalar(*value, num_rows, pool));
      fields.push_back(field);
      chunks.push_back(std::make_shared<arrow::ChunkedArray>(std::move(constant)));
      continue;
    }
    auto column = table->GetColumnByName(field->name());
    if (column == nullptr || !column->type()->Equals(*field->type())) {
      return arrow::Status::Invalid("column '", field->name(), "' did not decode as ",
                                    field->type()->ToString());
    }
    fields.push_back(field);
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

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FilterAndTransform(
    const UnitSource& source, std::shared_ptr<arrow::RecordBatch> batch) {
  if (source.filter != nullptr) {
    ARROW_ASSIGN_OR_RAISE(batch, source.filter->Apply(batch, source.pool));
    for (const auto& name : source.filter_only_columns) {
      ARROW_ASSIGN_OR_RAISE(batch, batch->RemoveColumn(batch->schema()->GetFieldIndex(name)));
    }
  }
  if (source.decoder != nullptr && !source.decoder->empty()) {
    ARROW_ASSIGN_OR_RAISE(batch, source.decoder->Apply(std::move(batch), source.pool));
  }
  return source.transforms->ApplyBeforeDraws(batch, source.pool);
}

// A unit with other than the counted rows: the file changed since the loader was made.
arrow::Status CheckRowCount(const Manifest& manifest, const Unit& unit,
                            const arrow::RecordBatch& batch) {
  if (batch.num_rows() == unit.num_rows) return arrow::Status::OK();
  return arrow::Status::IOError(Where(manifest, unit), " gave ", batch.num_rows(), " rows where ",
                                unit.num_rows,
                                " were counted when the loader was made: the file changed");
}

}  // namespace

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

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadRowGroup(const UnitSource& source,
                                                                const Unit& unit,
                                                                std::vector<int> columns,
                                                                Stats* stats) {
  ARROW_ASSIGN_OR_RAISE(auto fetch, StartFetch(*source.manifest, unit, std::move(columns),
                                               source.io_context(), stats));
  fetch->ready.Wait();
  NoteArrived(*fetch, stats);
  return DecodeFetch(*source.manifest, unit, fetch.get(), source.pool, stats);
}

void NoteArrived(const RowGroupFetch& fetch, Stats* stats) {
  const auto now = Stats::Clock::now();
  stats->AddRead(fetch.bytes_needed, now - fetch.started);
  stats->Trace(TraceStage::kFetch, fetch.started, now, fetch.file, fetch.row_group);
}

std::vector<int> AllColumns(const UnitSource& source) {
  std::vector<int> all(source.manifest->schema()->num_fields());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FinishUnit(
    const UnitSource& source, const Unit& unit, std::shared_ptr<arrow::RecordBatch> raw,
    Stats* stats) {
  const Manifest& manifest = *source.manifest;
  const auto start = Stats::Clock::now();
  auto finished = CatchAll([&] { return FilterAndTransform(source, std::move(raw)); });
  const auto end = Stats::Clock::now();
  stats->AddTransform(end - start);
  stats->Trace(TraceStage::kTransform, start, end, unit.file, unit.row_group);
  if (!finished.ok()) return WithContext(finished.status(), Where(manifest, unit));
  ARROW_RETURN_NOT_OK(CheckRowCount(manifest, unit, **finished));
  return finished;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> DrawUnit(
    const UnitSource& source, const Unit& unit, std::shared_ptr<arrow::RecordBatch> finished,
    uint64_t seed, uint64_t epoch, Stats* stats) {
  if (source.transforms->draws()) {
    const auto start = Stats::Clock::now();
    const DrawContext draws{.seed = seed, .epoch = epoch, .first_row = unit.first_row};
    auto drawn = CatchAll(
        [&] { return source.transforms->ApplyDraws(std::move(finished), source.pool, draws); });
    const auto end = Stats::Clock::now();
    stats->AddTransform(end - start);
    stats->Trace(TraceStage::kTransform, start, end, unit.file, unit.row_group);
    if (!drawn.ok()) return WithContext(drawn.status(), Where(*source.manifest, unit));
    finished = std::move(drawn).ValueUnsafe();
  }
  ARROW_RETURN_NOT_OK(CheckUnit(source, unit, *finished));
  return finished;
}

arrow::Status CheckUnit(const UnitSource& source, const Unit& unit,
                        const arrow::RecordBatch& batch) {
  const Manifest& manifest = *source.manifest;
  ARROW_RETURN_NOT_OK(CheckRowCount(manifest, unit, batch));
  if (!batch.schema()->Equals(*source.output_schema, /*check_metadata=*/false)) {
    return arrow::Status::Invalid(Where(manifest, unit), " gave columns ",
                                  batch.schema()->ToString(), " where ",
                                  source.output_schema->ToString(), " were expected");
  }
  if (source.output != OutputKind::kTensor) {
    for (int i = 0; i < batch.num_columns(); ++i) {
      if (!source.non_null[i] || !HasNulls(*batch.column_data(i))) continue;
      return arrow::Status::Invalid(
          "column '", batch.schema()->field(i)->name(), "' has null values in ",
          Where(manifest, unit),
          " although the file's Parquet statistics record none: the file is corrupt; "
          "rewrite it");
    }
    return arrow::Status::OK();
  }
  const auto& ragged = source.transforms->ragged_columns();
  for (int i = 0; i < batch.num_columns(); ++i) {
    const auto& data = *batch.column_data(i);
    const std::string& name = batch.schema()->field(i)->name();
    const bool is_ragged = std::find(ragged.begin(), ragged.end(), name) != ragged.end();
    // A null list of a ragged column arrives as an empty one; its values must not be null.
    if (is_ragged ? HasNulls(*data.child_data[0]) : HasNulls(data)) {
      return arrow::Status::Invalid(
          "column '", name, "' has null values in ", Where(manifest, unit),
          "; numpy/torch output cannot hold nulls and Stoker does not fill them silently: "
          "read it with output=\"arrow\", fill them with a fill_null transform, or leave "
          "it out of columns");
    }
  }
  return arrow::Status::OK();
}

std::string CacheKey(const UnitSource& source, const Unit& unit) {
  const SourceFile& file = source.manifest->files()[unit.file].source;
  Digest key;
  key.Add(source.cache_config_digest);
  key.Add(file.display);
  key.Add(static_cast<uint64_t>(file.size));
  key.Add(static_cast<uint64_t>(file.mtime_ns));
  key.Add(static_cast<uint64_t>(unit.row_group));
  return key.Hex();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const UnitSource& source,
                                                            const Unit& unit, uint64_t seed,
                                                            uint64_t epoch, Stats* stats) {
  ARROW_ASSIGN_OR_RAISE(auto raw, ReadRowGroup(source, unit, AllColumns(source), stats));
  ARROW_ASSIGN_OR_RAISE(auto finished, FinishUnit(source, unit, std::move(raw), stats));
  return DrawUnit(source, unit, std::move(finished), seed, epoch, stats);
}

}  // namespace stoker
