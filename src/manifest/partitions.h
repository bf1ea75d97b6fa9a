// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include <memory>
#include <vector>

#include "manifest/source.h"
#include "stoker/partition_options.h"

namespace stoker {

/// The partition columns of a dataset and every file's value of each: constants per file.
struct FilePartitions {
  /// The partition columns; no fields when the dataset has none.
  std::shared_ptr<arrow::Schema> schema = arrow::schema({});
  /// values[i][k]: column k's value for file i of the sources' files in order (a null
  /// scalar of the column's type for null); empty when there are no partition columns.
  std::vector<arrow::ScalarVector> values;

  bool empty() const { return schema->num_fields() == 0; }
};

/// Each file's partition values: from `options.file_values` when given, else (with
/// `options.hive`) from the `key=value` directory names between a directory source and its
/// files. A value that does not parse as its column's type, a key named twice in one path,
/// or a key with no non-null value to infer a type from is an error naming the file.
arrow::Result<FilePartitions> ResolvePartitions(const std::vector<ResolvedSource>& sources,
                                                const PartitionOptions& options);

}  // namespace stoker
