// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/manifest.h"

#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>
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
#include "manifest/partition_filter.h"
#include "manifest/partitions.h"
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

// Adds file `i`'s row groups to what the statistics say of each projected column's nulls.
void NoteNullCounts(size_t i, const ManifestFile& file, const parquet::FileMetaData& metadata,
                    std::vector<ColumnNullCounts>* columns) {
  for (size_t field = 0; field < columns->size(); ++field) {
    ColumnNullCounts& column = (*columns)[field];
    const auto& leaves = file.column_leaves[field];
    if (leaves.empty()) column.proven_none = false;
    if (!column.proven_none && column.file >= 0) continue;  // nothing left to learn
    for (int rg = 0; rg < metadata.num_row_groups(); ++rg) {
      const auto row_group = metadata.RowGroup(rg);
      for (int leaf : leaves) {
        // Only the encoded null count: min and max need not be decoded for it.
        const auto stats = row_group->ColumnChunk(leaf)->encoded_statistics();
        const int64_t nulls = stats != nullptr && stats->has_null_count ? stats->null_count : -1;
        if (nulls != 0) column.proven_none = false;
        if (nulls > 0 && column.file < 0) {
          column.file = static_cast<int32_t>(i);
          column.row_group = rg;
          column.nulls = nulls;
        }
      }
    }
  }
}

// Moves the checksums the index gave `footer` to `file`, once their count is the footer's
// column chunks'. Only a file the index alone names (index="trust") uses them: a listed one
// is known by its listed size and mtime.
arrow::Status TakeChecksums(const parquet::FileMetaData& metadata, Footer* footer,
                            ManifestFile* file) {
  if (footer->checksums.empty() || file->trusted_index == nullptr) return arrow::Status::OK();
  const auto chunks =
      static_cast<size_t>(metadata.num_row_groups()) * static_cast<size_t>(metadata.num_columns());
  if (footer->checksums.size() != chunks) {
    return arrow::Status::Invalid("the dataset index '", *file->trusted_index, "' has ",
                                  footer->checksums.size(), " checksums for ", chunks,
                                  " column chunks; rewrite it with `stoker index --overwrite`");
  }
  file->checksums = std::move(footer->checksums);
  return arrow::Status::OK();
}

// The projected fields: `columns`, or all of the first file's columns then the partition
// columns when that is empty; a partition column by its partition schema's field, the others
// as the first file has them. `partition_field` gets each one's index among the partition
// columns (-1 for a file column). A partition key that is also a column of the file is an
// error: which of the two a row should carry is not ours to guess.
arrow::Result<arrow::FieldVector> ProjectFields(const arrow::Schema& first,
                                                const std::string& first_path,
                                                const std::vector<std::string>& columns,
                                                const arrow::Schema& partitions,
                                                std::vector<int>* partition_field) {
  for (const auto& key : partitions.fields()) {
    if (first.GetFieldIndex(key->name()) >= 0) {
      return arrow::Status::Invalid(
          "partition key '", key->name(),
          "' (from the directory names or the table's partition "
          "values) is also a column of '",
          first_path, "': rename one of them, or read without partitioning (partitioning=None)");
    }
  }
  std::vector<std::string> names = columns;
  if (names.empty()) {
    for (const auto& field : first.fields()) names.push_back(field->name());
    for (const auto& field : partitions.fields()) names.push_back(field->name());
  }
  arrow::FieldVector fields;
  for (const auto& name : names) {
    const int k = partitions.GetFieldIndex(name);
    partition_field->push_back(k);
    if (k >= 0) {
      fields.push_back(partitions.field(k));
      continue;
    }
    auto index = FindColumn(first, name, first_path);
    if (!index.ok() && partitions.num_fields() > 0) {
      return WithContext(index.status(), "partition columns: " + JoinNames(partitions));
    }
    ARROW_RETURN_NOT_OK(index);
    fields.push_back(first.field(*index));
  }
  return fields;
}

// A file of the dataset, once its columns are checked against the first file's `fields`
// (and, with `all_columns`, its column count too), with the leaves holding them.
arrow::Result<ManifestFile> DescribeFile(const SourceFile& source, const Footer& footer,
                                         const arrow::Schema& first, const std::string& first_path,
                                         const arrow::FieldVector& fields,
                                         const std::vector<int>& partition_field,
                                         bool all_columns) {
  ManifestFile file;
  file.source = source;
  if (all_columns && footer.schema->num_fields() != first.num_fields()) {
    return arrow::Status::Invalid("files disagree on their columns: '", first_path, "' has ",
                                  first.num_fields(), " (", JoinNames(first), ") but '",
                                  file.source.display, "' has ", footer.schema->num_fields(), " (",
                                  JoinNames(*footer.schema), ")");
  }
  for (size_t c = 0; c < fields.size(); ++c) {
    const auto& field = fields[c];
    if (partition_field[c] >= 0) {  // a constant of the file, not stored in it
      file.column_leaves.emplace_back();
      continue;
    }
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

// Each source's dataset index, read when `policy` allows and the directory has one; a source
// that was not listed (IndexPolicy::kTrust) takes its files from it.
arrow::Result<std::vector<std::optional<DatasetIndex>>> ReadIndexes(
    std::vector<ResolvedSource>* resolved, IndexPolicy policy, Stats* stats) {
  std::vector<std::optional<DatasetIndex>> indexes(resolved->size());
  if (policy == IndexPolicy::kIgnore) return indexes;
  for (size_t s = 0; s < resolved->size(); ++s) {
    ResolvedSource& source = (*resolved)[s];
    if (source.summary.path.empty()) continue;
    ARROW_ASSIGN_OR_RAISE(indexes[s], ReadDatasetIndex(source, stats));
    if (!source.listed) ARROW_RETURN_NOT_OK(ListFromIndex(*indexes[s], &source));
  }
  return indexes;
}

// The footers of the files `keep` marks (flat over the sources' files), source by source:
// from the source's index when it has a current one (the index covers the whole directory,
// so it was read whole), otherwise read from each kept file alone.
arrow::Result<std::vector<Footer>> GatherFooters(const std::vector<ResolvedSource>& resolved,
                                                 std::vector<std::optional<DatasetIndex>> indexes,
                                                 std::vector<bool>* keep_files,
                                                 const StorageOptions& storage, IndexPolicy index,
                                                 Stats* stats,
                                                 std::vector<UnreadableFile>* unreadable) {
  std::vector<bool>& keep = *keep_files;
  std::vector<Footer> footers;
  int64_t used = 0, stale = 0, opened = 0;
  size_t first = 0;  // flat index of the source's first file
  for (size_t s = 0; s < resolved.size(); ++s) {
    const ResolvedSource& source = resolved[s];
    const size_t count = source.files.size();
    std::optional<std::vector<Footer>> from_summary;
    if (indexes[s].has_value()) {
      ARROW_ASSIGN_OR_RAISE(from_summary, FootersFromIndex(std::move(*indexes[s]), source, index));
      indexes[s].reset();
      ++(from_summary.has_value() ? used : stale);
    }
    if (from_summary.has_value()) {
      for (size_t i = 0; i < count; ++i) {
        if (keep[first + i]) footers.push_back(std::move((*from_summary)[i]));
      }
    } else {
      std::vector<SourceFile> kept;
      std::vector<size_t> kept_at;  // each kept file's flat index
      for (size_t i = 0; i < count; ++i) {
        if (keep[first + i]) {
          kept.push_back(source.files[i]);
          kept_at.push_back(first + i);
        }
      }
      std::vector<arrow::Status> failed;
      ARROW_ASSIGN_OR_RAISE(auto read, ReadFooters(kept, storage.ResolvedMetadataThreads(), stats,
                                                   unreadable == nullptr ? nullptr : &failed));
      opened += static_cast<int64_t>(kept.size());
      for (size_t k = 0; k < read.size(); ++k) {
        if (!failed.empty() && !failed[k].ok()) {
          // Left out (on_error="skip"): its place in `keep` goes, so files and footers stay
          // paired.
          keep[kept_at[k]] = false;
          unreadable->push_back({kept[k].display, std::move(failed[k])});
          continue;
        }
        footers.push_back(std::move(read[k]));
      }
    }
    first += count;
  }
  if (stats != nullptr) {
    stats->SetIndexUse(used, stale);
    stats->SetFilesOpened(opened);
  }
  return footers;
}

// Which files (flat over the sources) `filter`'s conditions on partition columns leave in;
// at least the first, whose footer gives the schema. Files ruled out are counted in `stats`.
arrow::Result<std::vector<bool>> PruneByPartitions(
    const FilePartitions& partitions, size_t num_files,
    const std::optional<arrow::compute::Expression>& filter, Stats* stats) {
  std::vector<bool> keep(num_files, true);
  if (partitions.empty() || !filter.has_value()) return keep;
  ARROW_ASSIGN_OR_RAISE(auto pruner, PartitionFilter::Make(*filter, partitions.schema));
  int64_t pruned = 0;
  for (size_t i = 0; i < num_files; ++i) {
    ARROW_ASSIGN_OR_RAISE(bool may_match, pruner.MayMatch(partitions.values[i]));
    if (!may_match) {
      keep[i] = false;
      ++pruned;
    }
  }
  if (pruned == static_cast<int64_t>(num_files)) {
    keep[0] = true;
    --pruned;
  }
  if (stats != nullptr) stats->SetFilesPruned(pruned);
  return keep;
}

// The files `keep` marks (flat over the sources' files), taken out of `resolved`, with
// the dataset index each came from (null for a listed file) and, when the dataset has
// partition columns, its values, taken out of `partitions`.
struct KeptFiles {
  std::vector<SourceFile> sources;
  std::vector<std::shared_ptr<const std::string>> trusted_indexes;  // parallel to sources
  std::vector<arrow::ScalarVector> partition_values;
};

KeptFiles KeepFiles(std::vector<ResolvedSource>* resolved, const std::vector<bool>& keep,
                    FilePartitions* partitions) {
  KeptFiles kept;
  size_t flat = 0;
  for (auto& source : *resolved) {
    auto trusted =
        source.listed ? nullptr : std::make_shared<const std::string>(source.summary.display);
    for (auto& file : source.files) {
      if (keep[flat]) {
        kept.sources.push_back(std::move(file));
        kept.trusted_indexes.push_back(trusted);
        if (!partitions->empty()) {
          kept.partition_values.push_back(std::move(partitions->values[flat]));
        }
      }
      ++flat;
    }
  }
  return kept;
}

}  // namespace

arrow::Result<std::shared_ptr<Manifest>> Manifest::Make(
    const std::vector<std::string>& source_list, const std::vector<std::string>& columns,
    const StorageOptions& storage, const RetryCounter& retries, IndexPolicy index, Stats* stats,
    const PartitionOptions& partitioning, const std::optional<arrow::compute::Expression>& filter,
    bool skip_unreadable) {
  // The loader's Validate() rejects an empty list; a direct caller gets the same answer.
  if (source_list.empty()) {
    return arrow::Status::Invalid("source: no file, directory or glob was given");
  }
  const auto started = Stats::Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto resolved, ResolveSourceList(source_list, storage, retries,
                                                         index == IndexPolicy::kTrust));
  ARROW_ASSIGN_OR_RAISE(auto indexes, ReadIndexes(&resolved, index, stats));
  if (index == IndexPolicy::kTrust) ARROW_RETURN_NOT_OK(CheckNoFileTwice(resolved));
  ARROW_ASSIGN_OR_RAISE(auto partitions, ResolvePartitions(resolved, partitioning));
  size_t num_files = 0;
  for (const auto& source : resolved) num_files += source.files.size();
  ARROW_ASSIGN_OR_RAISE(auto keep, PruneByPartitions(partitions, num_files, filter, stats));
  std::vector<UnreadableFile> unreadable;
  ARROW_ASSIGN_OR_RAISE(auto footers,
                        GatherFooters(resolved, std::move(indexes), &keep, storage, index, stats,
                                      skip_unreadable ? &unreadable : nullptr));
  // Not one file could be read: there is no schema, nothing to skip to.
  if (footers.empty()) return unreadable.front().error;
  if (stats != nullptr) stats->AddMetadataTime(Stats::Clock::now() - started);
  KeptFiles kept = KeepFiles(&resolved, keep, &partitions);
  const std::vector<SourceFile>& sources = kept.sources;
  // Each source resolves to at least one file or fails, and pruning keeps one.
  ARROW_DCHECK(!sources.empty());
  // Held apart: the footers are dropped one by one below.
  const std::shared_ptr<arrow::Schema> first_schema = footers[0].schema;
  const arrow::Schema& first = *first_schema;
  const std::string& first_path = sources[0].display;

  auto manifest = std::make_shared<Manifest>();
  manifest->partition_schema_ = partitions.schema;
  // Partition values the files store themselves only prune: none is added as a column.
  const auto added = partitioning.stored_in_files ? arrow::schema({}) : partitions.schema;
  ARROW_ASSIGN_OR_RAISE(
      auto fields, ProjectFields(first, first_path, columns, *added, &manifest->partition_field_));
  manifest->schema_ = arrow::schema(fields);
  manifest->null_counts_.resize(fields.size());
  Digest fingerprint;
  for (size_t i = 0; i < sources.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto file, DescribeFile(sources[i], footers[i], first, first_path, fields,
                                                  manifest->partition_field_, columns.empty()));
    file.trusted_index = std::move(kept.trusted_indexes[i]);
    if (file.trusted_index != nullptr && manifest->identity_check_ == nullptr) {
      manifest->identity_check_ = std::make_unique<IdentityCheck>(sources.size());
    }
    arrow::ScalarVector values;
    if (!partitions.empty()) values = std::move(kept.partition_values[i]);
    ARROW_RETURN_NOT_OK(manifest->AddFile(std::move(file), std::move(values), &footers[i],
                                          &fingerprint, skip_unreadable ? &unreadable : nullptr));
    footers[i] = Footer();  // the decoded form is dropped file by file
  }
  if (manifest->files_.empty()) return unreadable.front().error;
  std::sort(unreadable.begin(), unreadable.end(),
            [](const UnreadableFile& a, const UnreadableFile& b) { return a.path < b.path; });
  manifest->unreadable_files_ = std::move(unreadable);
  manifest->fingerprint_ = fingerprint.Hex();
#ifdef __GLIBC__
  // Decoding footers left megabytes per thousand row groups freed in malloc's arenas (Thrift
  // objects, not Arrow buffers): give them back, or the rank keeps the peak for good.
  malloc_trim(0);
#endif
  // The footers' reads came from Arrow's default pool, which keeps freed memory for reuse:
  // return it too (a dataset index's bytes stay: the footers are cut from them).
  arrow::default_memory_pool()->ReleaseUnused();
  return manifest;
}

arrow::Status Manifest::AddFile(ManifestFile file, arrow::ScalarVector partition_values,
                                Footer* footer, Digest* fingerprint,
                                std::vector<UnreadableFile>* unreadable) {
  // What the file adds, to be taken back if its footer does not decode and it is skipped.
  const auto index = static_cast<int32_t>(files_.size());
  const size_t units_before = units_.size();
  const int64_t rows_before = num_rows_;
  const Digest fingerprint_before = *fingerprint;
  std::vector<ColumnNullCounts> nulls_before;
  if (unreadable != nullptr) nulls_before = null_counts_;
  // Datasets without partition columns keep the fingerprints they always had.
  for (const auto& value : partition_values) fingerprint->Add(value->ToString());
  file.partition_values = std::move(partition_values);
  // Column metadata is decoded lazily and may throw (encrypted columns, corrupt footers).
  arrow::Status decoded = WithContext(
      CatchAll([&]() -> arrow::Status {
        BEGIN_PARQUET_CATCH_EXCEPTIONS
        ARROW_ASSIGN_OR_RAISE(auto metadata, DecodeFooter(footer->bytes.Serialized()));
        if (!footer->skimmed_rows.empty()) {
          ARROW_RETURN_NOT_OK(CheckCut(*metadata, footer->skimmed_rows));
        }
        ARROW_RETURN_NOT_OK(AddUnits(index, file, *metadata, &units_, &num_rows_, fingerprint));
        NoteNullCounts(index, file, *metadata, &null_counts_);
        ARROW_RETURN_NOT_OK(TakeChecksums(*metadata, footer, &file));
        file.footer = std::move(footer->bytes);
        return arrow::Status::OK();
        END_PARQUET_CATCH_EXCEPTIONS
      }),
      "'" + file.source.display + "' could not be read as Parquet");
  if (!decoded.ok()) {
    if (unreadable == nullptr) return decoded;
    units_.resize(units_before);
    num_rows_ = rows_before;
    *fingerprint = fingerprint_before;
    null_counts_ = std::move(nulls_before);
    unreadable->push_back({file.source.display, std::move(decoded)});
    return arrow::Status::OK();
  }
  files_.push_back(std::move(file));
  return arrow::Status::OK();
}

int64_t Manifest::HeldBytes() const {
  int64_t bytes = static_cast<int64_t>(sizeof(Manifest) + units_.capacity() * sizeof(Unit) +
                                       files_.capacity() * sizeof(ManifestFile));
  std::set<const IndexSummary*> summaries;  // each counted once, however many files cut it
  for (const auto& file : files_) {
    bytes += static_cast<int64_t>(file.partition_values.size() * sizeof(arrow::Scalar));
    bytes += static_cast<int64_t>(file.checksums.capacity() * sizeof(uint64_t));
    if (const IndexSummary* summary = file.footer.summary(); summary != nullptr) {
      summaries.insert(summary);
    }
    bytes += file.footer.HeldBytes();
    bytes += static_cast<int64_t>(file.source.path.capacity() + file.source.display.capacity() +
                                  file.leaf_columns.capacity() * sizeof(int));
    for (const auto& leaves : file.column_leaves) {
      bytes += static_cast<int64_t>(sizeof(leaves) + leaves.capacity() * sizeof(int));
    }
  }
  for (const IndexSummary* summary : summaries) {
    const SummarySkim& skim = summary->skim;
    bytes += summary->bytes->size() +
             static_cast<int64_t>(skim.fields.capacity() * sizeof(SummarySkim::Field) +
                                  skim.row_groups.capacity() * sizeof(SummarySkim::RowGroup) +
                                  skim.key_values.capacity() * sizeof(SummarySkim::KeyValue));
  }
  return bytes;
}

arrow::Status CheckNoNullsByStatistics(const Manifest& manifest,
                                       const std::vector<std::string>& columns) {
  const ColumnNullCounts* first = nullptr;
  const std::string* name = nullptr;
  for (const auto& column : columns) {
    const int field = manifest.schema()->GetFieldIndex(column);
    if (field < 0) continue;
    const ColumnNullCounts& counts = manifest.null_counts()[field];
    if (counts.file >= 0 && (first == nullptr || counts.file < first->file)) {
      first = &counts;
      name = &column;
    }
  }
  if (first == nullptr) return arrow::Status::OK();
  return arrow::Status::Invalid(
      "column '", *name, "' has ", first->nulls, " null values in '",
      manifest.files()[first->file].source.display, "' (row group ", first->row_group,
      "); numpy/torch output cannot hold nulls and Stoker does not fill them silently: "
      "read it with output=\"arrow\", fill them with a fill_null transform, or leave it out "
      "of columns");
}

std::vector<std::string> ColumnsWithoutNullsByStatistics(const Manifest& manifest,
                                                         const std::vector<std::string>& columns) {
  std::vector<std::string> out;
  for (const auto& column : columns) {
    const int field = manifest.schema()->GetFieldIndex(column);
    if (field >= 0 && manifest.null_counts()[field].proven_none) out.push_back(column);
  }
  return out;
}

}  // namespace stoker
