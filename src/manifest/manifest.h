// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type.h>
#include <parquet/metadata.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "manifest/footer_cache.h"
#include "manifest/identity_check.h"
#include "manifest/source.h"
#include "stoker/options.h"
#include "stoker/partition_options.h"
#include "telemetry/stats.h"

namespace stoker {

class Digest;
struct Footer;

/// A Parquet file of the dataset with its footer, read once.
/// A file a manifest left out because its footer could not be read or decoded (a manifest
/// made with skip_unreadable: on_error="skip").
struct UnreadableFile {
  std::string path;
  arrow::Status error;
};

struct ManifestFile {
  SourceFile source;
  /// The footer, Thrift-serialized (Manifest::FileMetadata decodes it): a few hundred bytes
  /// per row group where the decoded form takes kilobytes, so a million row groups fit in a
  /// few hundred MB. From a dataset index, a cut of the summary's bytes, held once.
  SerializedFooter footer;
  /// Leaf column indices in this file that hold the projected columns.
  std::vector<int> leaf_columns;
  /// The same, per projected column (parallel to Manifest::schema()); none for a partition
  /// column.
  std::vector<std::vector<int>> column_leaves;
  /// The file's value of each partition column (parallel to Manifest::partition_schema()).
  arrow::ScalarVector partition_values;
  /// The dataset index that gave this file's identity without a listing (IndexPolicy::kTrust):
  /// the identity is checked at the file's first read (Manifest::VerifyFile). Null when a
  /// listing gave it.
  std::shared_ptr<const std::string> trusted_index;
  /// With a trusted_index that `stoker index --checksums` wrote, its column chunks'
  /// checksums (row group by row group, leaf by leaf; empty otherwise): every chunk a fetch
  /// reads is checked against its checksum before it is decoded, instead of the identity.
  std::vector<uint64_t> checksums;
};

/// What Parquet statistics say of one projected column's nulls, over every row group of
/// every file (Manifest::null_counts).
struct ColumnNullCounts {
  /// Every row group of every file records a null count of 0 for each of the column's
  /// leaves. False for a partition column (it has no leaves).
  bool proven_none = true;
  /// The first row group, in dataset order, whose statistics count nulls in the column
  /// (file -1 when none does), and that count.
  int32_t file = -1;
  int32_t row_group = 0;
  int64_t nulls = 0;
};

/// The smallest piece of work the plan schedules: one row group.
struct Unit {
  int32_t file = 0;
  int32_t row_group = 0;
  int64_t num_rows = 0;
  /// Rows before this unit in dataset order (its first row's global index).
  int64_t first_row = 0;
  /// Rows before this unit in its file (its first row's index in the file).
  int64_t first_row_in_file = 0;
  /// Compressed bytes of the projected column chunks.
  int64_t bytes = 0;
};

/// The files of a source, their footers, the projected schema and the units, plus a
/// fingerprint of it all. Immutable once made; shared by every epoch of a loader.
class Manifest {
 public:
  /// Resolves the sources, takes every file's footer (from a directory's summary file
  /// `_metadata` as `index` says, otherwise read, storage.metadata_threads at a time) and
  /// checks that the files agree on `columns` (all of the first file's columns when empty).
  /// Counts the metadata requests and time in `stats` when it is not null. The manifest is
  /// the same whether footers come from the summary or the files.
  ///
  /// Partition columns (`partitioning`, src/manifest/partitions.h) follow the file columns
  /// when `columns` is empty and may be named in it. The conjuncts of `filter` that name
  /// partition columns only rule files out before their footers are read (counted in
  /// `stats` as files pruned); when they rule out every file, the first is kept, for the
  /// schema (the row filter then keeps none of its rows).
  ///
  /// With `skip_unreadable` (on_error="skip"), a file whose footer cannot be read or decoded
  /// is left out and listed in unreadable_files() instead of failing Make; a dataset none of
  /// whose files can be read still fails, with the first file's error.
  static arrow::Result<std::shared_ptr<Manifest>> Make(
      const std::vector<std::string>& sources, const std::vector<std::string>& columns,
      const StorageOptions& storage = {}, const RetryCounter& retries = nullptr,
      IndexPolicy index = IndexPolicy::kUse, Stats* stats = nullptr,
      const PartitionOptions& partitioning = {},
      const std::optional<arrow::compute::Expression>& filter = std::nullopt,
      bool skip_unreadable = false);

  /// The files in dataset order.
  const std::vector<ManifestFile>& files() const { return files_; }
  /// With skip_unreadable: the files left out because their footers could not be read or
  /// decoded, in path order (not in files(), their rows in no epoch). Without it such a file
  /// fails Make.
  const std::vector<UnreadableFile>& unreadable_files() const { return unreadable_files_; }
  /// File `file`'s footer, decoded (the last FooterCache::kCapacity decoded are kept).
  arrow::Result<std::shared_ptr<parquet::FileMetaData>> FileMetadata(int32_t file) const {
    return footers_.Get(file, files_[file].footer);
  }
  /// Completes OK once file `file` is known to be the one the manifest describes: at once
  /// for a listed file; for one only a dataset index named (ManifestFile::trusted_index),
  /// after one metadata request on `executor` at its first call, failing with an error
  /// naming the file when it was rewritten or removed since (IdentityCheck).
  /// A file with checksums is checked by them instead when its chunks are read: that
  /// costs no request; this check is then made for units the disk cache serves, and to
  /// say why a read failed.
  arrow::Future<> VerifyFile(int32_t file, arrow::internal::Executor* executor,
                             Stats* stats) const {
    const auto& index = files_[file].trusted_index;
    if (index == nullptr) return arrow::Future<>::MakeFinished();
    return identity_check_->Verify(file, files_[file].source, *index, executor, stats);
  }
  /// Non-empty row groups in dataset order (file order, then row-group order).
  const std::vector<Unit>& units() const { return units_; }
  /// The projected columns, in output order, as Arrow reads them.
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  /// Every partition column of the dataset, projected or not, added or stored in the files
  /// (no fields when none).
  const std::shared_ptr<arrow::Schema>& partition_schema() const { return partition_schema_; }
  /// File `file`'s value of projected column `field` when that is a partition column (a
  /// constant for every row of the file); null for a column stored in the file.
  std::shared_ptr<arrow::Scalar> PartitionValue(int32_t file, int field) const {
    const int k = partition_field_[field];
    return k < 0 ? nullptr : files_[file].partition_values[k];
  }
  /// Rows in the dataset.
  int64_t num_rows() const { return num_rows_; }
  /// Per projected column (parallel to schema()), its nulls by the footers' statistics,
  /// gathered in the one pass that builds the units.
  const std::vector<ColumnNullCounts>& null_counts() const { return null_counts_; }
  /// Digest of the ordered file identities (path, size, mtime) and row-group row counts.
  const std::string& fingerprint() const { return fingerprint_; }
  /// Bytes the manifest holds (serialized footers, units, paths, leaf lists; not the few
  /// footers FooterCache keeps decoded), for the memory curve in docs/large-datasets.md.
  int64_t HeldBytes() const;

 private:
  /// Adds `file` with its `partition_values` and `footer` (whose bytes it takes): its units,
  /// null counts and checksums, and its rows and partition values in `fingerprint`. A footer
  /// that does not decode is an error, or with `unreadable` listed there, everything it
  /// added taken back.
  arrow::Status AddFile(ManifestFile file, arrow::ScalarVector partition_values, Footer* footer,
                        Digest* fingerprint, std::vector<UnreadableFile>* unreadable);

  std::vector<ManifestFile> files_;
  std::vector<UnreadableFile> unreadable_files_;
  std::vector<Unit> units_;
  std::shared_ptr<arrow::Schema> schema_;
  std::shared_ptr<arrow::Schema> partition_schema_;
  /// Per projected column: its index in partition_schema_, or -1 for a file column.
  std::vector<int> partition_field_;
  int64_t num_rows_ = 0;
  std::vector<ColumnNullCounts> null_counts_;
  std::string fingerprint_;
  FooterCache footers_;
  /// Set when a file has a trusted_index.
  std::unique_ptr<IdentityCheck> identity_check_;
};

/// Rejects `columns` when Parquet statistics prove a row group holds nulls in them (tensor
/// outputs cannot hold nulls), before any data is read. The error names file and row group
/// (the first such in dataset order; of those in one file, the first of `columns`).
arrow::Status CheckNoNullsByStatistics(const Manifest& manifest,
                                       const std::vector<std::string>& columns);

/// The `columns` that Parquet statistics prove hold no nulls: every row group of every file
/// records a null count of 0 for each of the column's leaves. A column with no leaves (a
/// partition column), or with a row group whose statistics hold no null count, is not proven.
std::vector<std::string> ColumnsWithoutNullsByStatistics(const Manifest& manifest,
                                                         const std::vector<std::string>& columns);

}  // namespace stoker
