// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/loader/partition_options.cc.
#pragma once

#include <arrow/status.h>
#include <arrow/type_fwd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stoker {

/// Directory name value that stands for a null partition value (Hive, Spark, pyarrow).
inline constexpr char kHiveNullValue[] = "__HIVE_DEFAULT_PARTITION__";

/// Where each file's partition values come from: a per-file constant that becomes a column
/// of every row of the file, and lets a filter on it rule whole files out before their
/// footers are read (docs/partitions-and-tables.md).
struct PartitionOptions {
  /// Take `key=value` directory names below a directory source as columns (Hive style,
  /// what Spark and pyarrow's write_dataset write): values URL-decoded,
  /// kHiveNullValue null, typed as pyarrow's hive discovery types them (int32 when every
  /// value is one, else string) unless `schema` names the key. A file without a key has
  /// null for it. Added after the file columns: the keys `schema` names in its order, then
  /// the others in the order they first appear. No
  /// effect when no directory name has the form; ignored when `file_values` is given. Off
  /// by default (as in pyarrow.dataset): a dataset whose directories happen to look like keys
  /// keeps its columns.
  bool hive = false;
  /// Types of partition keys (a key not named here is inferred). With `file_values`: the
  /// partition columns, in order. Null: none given.
  std::shared_ptr<arrow::Schema> schema;
  /// Values given per source (each source one file), as a table format's log lists them:
  /// file_values[i][k] is field k of `schema` for source i, as text (parsed to its type),
  /// nullopt for null. Empty: none given (Hive discovery, if `hive`).
  std::vector<std::vector<std::optional<std::string>>> file_values;
  /// The partition columns are columns of the files too (Iceberg's identity transforms): their
  /// values only rule files out; the rows carry the files' own columns, nothing is added.
  bool stored_in_files = false;

  /// Checks `file_values` against `schema` and `num_sources`; the message names the option.
  arrow::Status Validate(size_t num_sources) const;
};

}  // namespace stoker
