// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "exec/unit_reader.h"

#include <arrow/array.h>

#include <algorithm>
#include <numeric>

#include "assemble/column_types.h"
#include "stoker/error.h"
#include "util/digest.h"

namespace stoker {

namespace {

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
  return arrow::Status::IOError(DescribeUnit(manifest, unit), " gave ", batch.num_rows(),
                                " rows where ", unit.num_rows,
                                " were counted when the loader was made: the file changed");
}

}  // namespace

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

std::vector<int> AllColumns(const UnitSource& source) {
  std::vector<int> all(source.manifest->schema()->num_fields());
  std::iota(all.begin(), all.end(), 0);
  return all;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> FinishUnit(
    const UnitSource& source, const Unit& unit, std::shared_ptr<arrow::RecordBatch> raw,
    Stats* stats) {
  const Manifest& manifest = *source.manifest;
  const int64_t decoded_rows = raw->num_rows();
  const auto start = Stats::Clock::now();
  auto finished = CatchAll([&] { return FilterAndTransform(source, std::move(raw)); });
  const auto end = Stats::Clock::now();
  stats->AddTransform(end - start);
  stats->Trace(TraceStage::kTransform, start, end, unit.file, unit.row_group);
  if (!finished.ok()) return WithContext(finished.status(), DescribeUnit(manifest, unit));
  ARROW_RETURN_NOT_OK(CheckRowCount(manifest, unit, **finished));
  stats->AddFiltered(decoded_rows - (*finished)->num_rows());
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
    if (!drawn.ok()) return WithContext(drawn.status(), DescribeUnit(*source.manifest, unit));
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
    return arrow::Status::Invalid(DescribeUnit(manifest, unit), " gave columns ",
                                  batch.schema()->ToString(), " where ",
                                  source.output_schema->ToString(), " were expected");
  }
  if (source.output == OutputKind::kArrow) {
    for (int i = 0; i < batch.num_columns(); ++i) {
      if (!source.non_null[i] || !HasNulls(*batch.column_data(i))) continue;
      return arrow::Status::Invalid(
          "column '", batch.schema()->field(i)->name(), "' has null values in ",
          DescribeUnit(manifest, unit),
          " although the file's Parquet statistics record none: the file is corrupt; "
          "rewrite it");
    }
    return arrow::Status::OK();
  }
  const auto& ragged = source.ragged;
  for (int i = 0; i < batch.num_columns(); ++i) {
    const auto& data = *batch.column_data(i);
    const std::string& name = batch.schema()->field(i)->name();
    const bool is_ragged = std::find(ragged.begin(), ragged.end(), name) != ragged.end();
    // A null list of a ragged column arrives as an empty one; its values must not be null.
    if (is_ragged ? HasNulls(*data.child_data[0]) : HasNulls(data)) {
      return arrow::Status::Invalid(
          "column '", name, "' has null values in ", DescribeUnit(manifest, unit),
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
