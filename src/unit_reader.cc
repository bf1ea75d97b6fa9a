// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "unit_reader.h"

#include <arrow/array.h>
#include <arrow/io/caching.h>
#include <arrow/io/interfaces.h>
#include <arrow/table.h>
#include <arrow/util/future.h>
#include <parquet/arrow/reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>

#include <algorithm>
#include <numeric>

#include "stoker/column_types.h"
#include "stoker/error.h"

namespace stoker {

namespace {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadRowGroupUnchecked(
    const Manifest& manifest, const Unit& unit, const std::vector<int>& columns,
    arrow::MemoryPool* pool, Stats* stats) {
  const ManifestFile& file = manifest.files()[unit.file];
  const std::vector<int> row_groups{unit.row_group};
  std::vector<int> leaves;
  for (int c : columns) {
    leaves.insert(leaves.end(), file.column_leaves[c].begin(), file.column_leaves[c].end());
  }
  std::shared_ptr<arrow::Table> table;

  const auto start = Stats::Clock::now();
  Stats::Clock::time_point fetched;
  ARROW_ASSIGN_OR_RAISE(auto input, file.source.filesystem->OpenInputFile(file.source.path));
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  auto parquet_reader =
      parquet::ParquetFileReader::Open(input, parquet::ReaderProperties(pool), file.metadata);
  ARROW_ASSIGN_OR_RAISE(auto ranges, parquet_reader->GetReadRanges(row_groups, leaves));
  int64_t bytes = 0;
  for (const auto& range : ranges) bytes += range.length;
  parquet_reader->PreBuffer(row_groups, leaves, arrow::io::IOContext(pool),
                            arrow::io::CacheOptions::Defaults());
  ARROW_RETURN_NOT_OK(parquet_reader->WhenBuffered(row_groups, leaves).status());
  fetched = Stats::Clock::now();
  stats->AddRead(bytes, fetched - start);

  parquet::ArrowReaderProperties properties;
  properties.set_use_threads(false);  // parallelism is across units, in our pool
  properties.set_pre_buffer(false);   // done above, so fetch and decode are timed apart
  ARROW_ASSIGN_OR_RAISE(
      auto reader, parquet::arrow::FileReader::Make(pool, std::move(parquet_reader), properties));
  ARROW_ASSIGN_OR_RAISE(table, reader->ReadRowGroup(unit.row_group, leaves));
  END_PARQUET_CATCH_EXCEPTIONS

  // Columns in the order asked for, whatever order the file stores them in.
  arrow::FieldVector fields;
  arrow::ChunkedArrayVector chunks;
  for (int c : columns) {
    const auto& field = manifest.schema()->field(c);
    auto column = table->GetColumnByName(field->name());
    if (column == nullptr || !column->type()->Equals(*field->type())) {
      return arrow::Status::Invalid("column '", field->name(), "' did not decode as ",
                                    field->type()->ToString());
    }
    fields.push_back(field);
    chunks.push_back(std::move(column));
  }
  table = arrow::Table::Make(arrow::schema(fields), std::move(chunks), table->num_rows());
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch(pool));
  stats->AddDecode(Stats::Clock::now() - fetched);
  return batch;
}

std::string Where(const Manifest& manifest, const Unit& unit) {
  return "'" + manifest.files()[unit.file].source.path + "' (row group " +
         std::to_string(unit.row_group) + ")";
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FinishUnit(
    const UnitSource& source, std::shared_ptr<arrow::RecordBatch> batch) {
  if (source.filter != nullptr) {
    ARROW_ASSIGN_OR_RAISE(batch, source.filter->Apply(batch, source.pool));
    for (const auto& name : source.filter_only_columns) {
      ARROW_ASSIGN_OR_RAISE(batch, batch->RemoveColumn(batch->schema()->GetFieldIndex(name)));
    }
  }
  return source.transforms->Apply(batch, source.pool);
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadRowGroup(const Manifest& manifest,
                                                                const Unit& unit,
                                                                const std::vector<int>& columns,
                                                                arrow::MemoryPool* pool,
                                                                Stats* stats) {
  auto result =
      CatchAll([&] { return ReadRowGroupUnchecked(manifest, unit, columns, pool, stats); });
  if (!result.ok()) {
    auto status = result.status();
    // A feature Parquet C++ lacks (e.g. a nested column chunk over 2 GiB) is a property of
    // this file the user must act on, like any other unreadable data.
    if (status.IsNotImplemented()) status = arrow::Status::IOError(status.message());
    return WithContext(status, "reading " + Where(manifest, unit));
  }
  return result;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const UnitSource& source,
                                                            const Unit& unit, Stats* stats) {
  const Manifest& manifest = *source.manifest;
  std::vector<int> all(manifest.schema()->num_fields());
  std::iota(all.begin(), all.end(), 0);
  ARROW_ASSIGN_OR_RAISE(auto raw, ReadRowGroup(manifest, unit, all, source.pool, stats));
  const auto start = Stats::Clock::now();
  auto finished = CatchAll([&] { return FinishUnit(source, raw); });
  stats->AddTransform(Stats::Clock::now() - start);
  if (!finished.ok()) return WithContext(finished.status(), Where(manifest, unit));
  const auto& batch = *finished;
  if (batch->num_rows() != unit.num_rows) {
    return arrow::Status::IOError(Where(manifest, unit), " gave ", batch->num_rows(),
                                  " rows where ", unit.num_rows,
                                  " were counted when the loader was made: the file changed");
  }
  if (source.output == OutputKind::kTensor) {
    const auto& ragged = source.transforms->ragged_columns();
    for (int i = 0; i < batch->num_columns(); ++i) {
      const auto& data = *batch->column_data(i);
      const bool is_ragged = std::find(ragged.begin(), ragged.end(),
                                       batch->schema()->field(i)->name()) != ragged.end();
      // A null list of a ragged column arrives as an empty one; its values must not be null.
      if (is_ragged ? HasNulls(*data.child_data[0]) : HasNulls(data)) {
        return arrow::Status::Invalid(
            "column '", batch->schema()->field(i)->name(), "' has null values in ",
            Where(manifest, unit),
            "; numpy/torch output cannot hold nulls and Stoker does not fill them silently: "
            "read it with output=\"arrow\", fill them with a fill_null transform, or leave "
            "it out of columns");
      }
    }
  }
  return batch;
}

}  // namespace stoker
