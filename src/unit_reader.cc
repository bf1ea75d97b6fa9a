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

#include "stoker/column_types.h"
#include "stoker/error.h"

namespace stoker {

namespace {

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnitUnchecked(const Manifest& manifest,
                                                                     const Unit& unit,
                                                                     arrow::MemoryPool* pool,
                                                                     Stats* stats) {
  const ManifestFile& file = manifest.files()[unit.file];
  const std::vector<int> row_groups{unit.row_group};
  std::shared_ptr<arrow::Table> table;

  const auto start = Stats::Clock::now();
  Stats::Clock::time_point fetched;
  ARROW_ASSIGN_OR_RAISE(auto input, file.source.filesystem->OpenInputFile(file.source.path));
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  auto parquet_reader =
      parquet::ParquetFileReader::Open(input, parquet::ReaderProperties(pool), file.metadata);
  ARROW_ASSIGN_OR_RAISE(auto ranges, parquet_reader->GetReadRanges(row_groups, file.leaf_columns));
  int64_t bytes = 0;
  for (const auto& range : ranges) bytes += range.length;
  parquet_reader->PreBuffer(row_groups, file.leaf_columns, arrow::io::IOContext(pool),
                            arrow::io::CacheOptions::Defaults());
  ARROW_RETURN_NOT_OK(parquet_reader->WhenBuffered(row_groups, file.leaf_columns).status());
  fetched = Stats::Clock::now();
  stats->AddRead(bytes, fetched - start);

  parquet::ArrowReaderProperties properties;
  properties.set_use_threads(false);  // parallelism is across units, in our pool
  properties.set_pre_buffer(false);   // done above, so fetch and decode are timed apart
  ARROW_ASSIGN_OR_RAISE(
      auto reader, parquet::arrow::FileReader::Make(pool, std::move(parquet_reader), properties));
  ARROW_ASSIGN_OR_RAISE(table, reader->ReadRowGroup(unit.row_group, file.leaf_columns));
  END_PARQUET_CATCH_EXCEPTIONS

  // Columns in output order, whatever order the file stores them in.
  arrow::ChunkedArrayVector columns;
  for (const auto& field : manifest.schema()->fields()) {
    auto column = table->GetColumnByName(field->name());
    if (column == nullptr || !column->type()->Equals(*field->type())) {
      return arrow::Status::Invalid("column '", field->name(), "' did not decode as ",
                                    field->type()->ToString());
    }
    columns.push_back(std::move(column));
  }
  table = arrow::Table::Make(manifest.schema(), std::move(columns), table->num_rows());
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch(pool));
  stats->AddDecode(Stats::Clock::now() - fetched);
  if (batch->num_rows() != unit.num_rows) {
    return arrow::Status::Invalid("decoded ", batch->num_rows(), " rows but the footer says ",
                                  unit.num_rows);
  }
  return batch;
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> ReadUnit(const Manifest& manifest,
                                                            const Unit& unit, OutputKind output,
                                                            arrow::MemoryPool* pool, Stats* stats) {
  const std::string where = "'" + manifest.files()[unit.file].source.path + "' (row group " +
                            std::to_string(unit.row_group) + ")";
  auto result = CatchAll([&] { return ReadUnitUnchecked(manifest, unit, pool, stats); });
  if (!result.ok()) {
    auto status = result.status();
    // A feature Parquet C++ lacks (e.g. a nested column chunk over 2 GiB) is a property of
    // this file the user must act on, like any other unreadable data.
    if (status.IsNotImplemented()) status = arrow::Status::IOError(status.message());
    return WithContext(status, "reading " + where);
  }
  const auto& batch = *result;
  if (output == OutputKind::kTensor) {
    for (int i = 0; i < batch->num_columns(); ++i) {
      if (HasNulls(*batch->column_data(i))) {
        return arrow::Status::Invalid(
            "column '", batch->schema()->field(i)->name(), "' has null values in ", where,
            "; numpy/torch output cannot hold nulls and Stoker does not fill them silently: "
            "read it with output=\"arrow\", or leave it out of columns");
      }
    }
  }
  return batch;
}

}  // namespace stoker
