// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/manifest.h"

#include <arrow/io/interfaces.h>
#include <arrow/util/logging.h>
#include <arrow/util/parallel.h>
#include <malloc.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/statistics.h>

#include <algorithm>
#include <set>

#include "manifest/dataset_index.h"
#include "manifest/footer_reader.h"
#include "stoker/error.h"
#include "util/digest.h"

namespace stoker {

namespace {

void CollectLeaves(const parquet::arrow::SchemaField& field, std::vector<int>* leaves) {
  if (field.is_leaf()) {
    leaves->push_back(field.column_index);
    return;
  }
  for (const auto& child : field.children) CollectLeaves(child, leaves);
}

std::string JoinNames(const arrow::Schema& schema) {
  std::string out;
  for (const auto& field : schema.fields()) {
    if (!out.empty()) out += ", ";
    out += field->name();
  }
  return out;
}

// Field index of `name` in `schema`, or an error naming the file and what it does hold.
arrow::Result<int> FindColumn(const arrow::Schema& schema, const std::string& name,
                              const std::string& path) {
  const auto indices = schema.GetAllFieldIndices(name);
  if (indices.size() == 1) return indices[0];
  if (indices.empty()) {
    return arrow::Status::KeyError("column '", name, "' not found in '", path,
                                   "'; available columns: ", JoinNames(schema));
  }
  return arrow::Status::Invalid("column '", name, "' appears ", indices.size(), " times in '", path,
                                "'");
}

// Checks a file's column chunks and appends its non-empty row groups as units. Reads column
// metadata, which Parquet decodes lazily and may throw on.
arrow::Status AddUnits(size_t i, const ManifestFile& file, const parquet::FileMetaData& metadata,
                       std::vector<Unit>* units, int64_t* num_rows, Digest* fingerprint) {
  fingerprint->Add(file.source.display);
  fingerprint->Add(static_cast<uint64_t>(file.source.size));
  fingerprint->Add(static_cast<uint64_t>(file.source.mtime_ns));
  fingerprint->Add(static_cast<uint64_t>(metadata.num_row_groups()));
  int64_t rows_in_file = 0;
  for (int rg = 0; rg < metadata.num_row_groups(); ++rg) {
    auto row_group = metadata.RowGroup(rg);
    fingerprint->Add(static_cast<uint64_t>(row_group->num_rows()));
    const int64_t first_row_in_file = rows_in_file;
    rows_in_file += std::max<int64_t>(row_group->num_rows(), 0);
    if (row_group->num_rows() <= 0) continue;
    Unit unit;
    unit.file = static_cast<int32_t>(i);
    unit.row_group = rg;
    unit.num_rows = row_group->num_rows();
    unit.first_row = *num_rows;
    unit.first_row_in_file = first_row_in_file;
    for (int leaf : file.leaf_columns) {
      unit.bytes += row_group->ColumnChunk(leaf)->total_compressed_size();
    }
    units->push_back(unit);
    *num_rows += unit.num_rows;
  }
  return arrow::Status::OK();
}

// The projected fields as the first file has them: `columns`, or all of its columns when
// that is empty.
arrow::Result<arrow::FieldVector> ProjectFields(const arrow::Schema& first,
                                                const std::string& first_path,
                                                const std::vector<std::string>& columns) {
  std::vector<std::string> names = columns;
  if (names.empty()) {
    for (const auto& field : first.fields()) names.push_back(field->name());
  }
  arrow::FieldVector fields;
  for (const auto& name : names) {
    ARROW_ASSIGN_OR_RAISE(int index, FindColumn(first, name, first_path));
    fields.push_back(first.field(index));
  }
  return fields;
}

// A file of the dataset, once its columns are checked against the first file's `fields`
// (and, with `all_columns`, its column count too), with the leaves holding them.
arrow::Result<ManifestFile> DescribeFile(const SourceFile& source, const Footer& footer,
                                         const arrow::Schema& first, const std::string& first_path,
                                         const arrow::FieldVector& fields, bool all_columns) {
  ManifestFile file;
  file.source = source;
  if (all_columns && footer.schema->num_fields() != first.num_fields()) {
    return arrow::Status::Invalid("files disagree on their columns: '", first_path, "' has ",
                                  first.num_fields(), " (", JoinNames(first), ") but '",
                                  file.source.display, "' has ", footer.schema->num_fields(), " (",
                                  JoinNames(*footer.schema), ")");
  }
  for (const auto& field : fields) {
    auto found = FindColumn(*footer.schema, field->name(), file.source.display);
    if (!found.ok()) {
      return WithContext(found.status(), "files disagree on their columns: '" + first_path +
                                             "' has column '" + field->name() + "'");
    }
    const auto& other = footer.schema->field(*found);
    if (!other->type()->Equals(*field->type())) {
      return arrow::Status::Invalid("files disagree on column '", field->name(), "': it is ",
                                    field->type()->ToString(), " in '", first_path, "' but ",
                                    other->type()->ToString(), " in '", file.source.display, "'");
    }
    std::vector<int> leaves;
    CollectLeaves(footer.schema_manifest->schema_fields[*found], &leaves);
    file.leaf_columns.insert(file.leaf_columns.end(), leaves.begin(), leaves.end());
    file.column_leaves.push_back(std::move(leaves));
  }
  return file;
}

// Every file's footer, source by source: from the directory's summary file when it has a
// current one (and `index` allows), otherwise read from the file.
arrow::Result<std::vector<Footer>> GatherFooters(const std::vector<ResolvedSource>& resolved,
                                                 const StorageOptions& storage, IndexPolicy index,
                                                 Stats* stats) {
  std::vector<Footer> footers;
  int64_t used = 0, stale = 0;
  for (const auto& source : resolved) {
    std::optional<std::vector<Footer>> from_summary;
    if (index != IndexPolicy::kIgnore && !source.summary.path.empty()) {
      ARROW_ASSIGN_OR_RAISE(from_summary, ReadSummaryFooters(source, index, stats));
      ++(from_summary.has_value() ? used : stale);
    }
    if (!from_summary.has_value()) {
      ARROW_ASSIGN_OR_RAISE(from_summary,
                            ReadFooters(source.files, storage.ResolvedMetadataThreads(), stats));
    }
    for (auto& footer : *from_summary) footers.push_back(std::move(footer));
  }
  if (stats != nullptr) stats->SetIndexUse(used, stale);
  return footers;
}

}  // namespace

arrow::Result<std::shared_ptr<Manifest>> Manifest::Make(const std::vector<std::string>& source_list,
                                                        const std::vector<std::string>& columns,
                                                        const StorageOptions& storage,
                                                        const RetryCounter& retries,
                                                        IndexPolicy index, Stats* stats) {
  // The loader's Validate() rejects an empty list; a direct caller gets the same answer.
  if (source_list.empty()) {
    return arrow::Status::Invalid("source: no file, directory or glob was given");
  }
  const auto started = Stats::Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveSourceList(source_list, storage, retries));
  ARROW_ASSIGN_OR_RAISE(auto footers, GatherFooters(resolved, storage, index, stats));
  if (stats != nullptr) stats->AddMetadataTime(Stats::Clock::now() - started);
  std::vector<SourceFile> sources;
  for (auto& source : resolved) {
    for (auto& file : source.files) sources.push_back(std::move(file));
  }
  // Each source resolves to at least one file or fails.
  ARROW_DCHECK(!sources.empty());
  // Held apart: the footers are dropped one by one below.
  const std::shared_ptr<arrow::Schema> first_schema = footers[0].schema;
  const arrow::Schema& first = *first_schema;
  const std::string& first_path = sources[0].display;

  auto manifest = std::make_shared<Manifest>();
  ARROW_ASSIGN_OR_RAISE(auto fields, ProjectFields(first, first_path, columns));
  manifest->schema_ = arrow::schema(fields);
  Digest fingerprint;
  for (size_t i = 0; i < sources.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto file, DescribeFile(sources[i], footers[i], first, first_path, fields,
                                                  columns.empty()));
    // Column metadata is decoded lazily and may throw (encrypted columns, corrupt footers).
    ARROW_RETURN_NOT_OK(
        WithContext(CatchAll([&]() -> arrow::Status {
                      BEGIN_PARQUET_CATCH_EXCEPTIONS
                      ARROW_ASSIGN_OR_RAISE(auto metadata, DecodeFooter(footers[i].serialized));
                      ARROW_RETURN_NOT_OK(AddUnits(i, file, *metadata, &manifest->units_,
                                                   &manifest->num_rows_, &fingerprint));
                      file.footer = std::move(footers[i].serialized);
                      return arrow::Status::OK();
                      END_PARQUET_CATCH_EXCEPTIONS
                    }),
                    "'" + file.source.display + "' could not be read as Parquet"));
    manifest->files_.push_back(std::move(file));
    footers[i] = Footer();  // the decoded form is dropped file by file
  }
  manifest->fingerprint_ = fingerprint.Hex();
#ifdef __GLIBC__
  // Decoding footers left megabytes per thousand row groups freed in malloc's arenas (Thrift
  // objects, not Arrow buffers): give them back, or the rank keeps the peak for good.
  malloc_trim(0);
#endif
  return manifest;
}

int64_t Manifest::HeldBytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(Manifest) + units_.capacity() * sizeof(Unit) +
                                       files_.capacity() * sizeof(ManifestFile));
  for (const auto& file : files_) {
    bytes += static_cast<int64_t>(file.footer.capacity() + file.source.path.capacity() +
                                  file.source.display.capacity() +
                                  file.leaf_columns.capacity() * sizeof(int));
    for (const auto& leaves : file.column_leaves) {
      bytes += static_cast<int64_t>(sizeof(leaves) + leaves.capacity() * sizeof(int));
    }
  }
  return bytes;
}

arrow::Status CheckNoNullsByStatistics(const Manifest& manifest,
                                       const std::vector<std::string>& columns) {
  for (size_t i = 0; i < manifest.files().size(); ++i) {
    const auto& file = manifest.files()[i];
    if (columns.empty()) break;
    ARROW_ASSIGN_OR_RAISE(auto decoded, manifest.FileMetadata(static_cast<int32_t>(i)));
    const auto& metadata = *decoded;
    for (const auto& name : columns) {
      const int field = manifest.schema()->GetFieldIndex(name);
      if (field < 0) continue;
      for (int rg = 0; rg < metadata.num_row_groups(); ++rg) {
        for (int leaf : file.column_leaves[field]) {
          int64_t nulls = 0;
          auto status = CatchAll([&]() -> arrow::Status {
            BEGIN_PARQUET_CATCH_EXCEPTIONS
            auto stats = metadata.RowGroup(rg)->ColumnChunk(leaf)->statistics();
            if (stats != nullptr && stats->HasNullCount()) nulls = stats->null_count();
            return arrow::Status::OK();
            END_PARQUET_CATCH_EXCEPTIONS
          });
          ARROW_RETURN_NOT_OK(WithContext(status, "'" + file.source.display + "'"));
          if (nulls <= 0) continue;
          return arrow::Status::Invalid(
              "column '", name, "' has ", nulls, " null values in '", file.source.display,
              "' (row group ", rg,
              "); numpy/torch output cannot hold nulls and Stoker does not fill them silently: "
              "read it with output=\"arrow\", fill them with a fill_null transform, or leave "
              "it out of columns");
        }
      }
    }
  }
  return arrow::Status::OK();
}

}  // namespace stoker
