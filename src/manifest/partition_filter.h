// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include <optional>

namespace stoker {

/// The part of a row filter that reads partition columns only (the conjuncts of its top-level
/// AND that name no other column): evaluated on a file's partition values, it rules the whole
/// file out before its footer is read. The row filter still runs on every row, so pruning
/// only saves work, never changes what is delivered.
class PartitionFilter {
 public:
  /// The conjuncts of `filter` that name only fields of `partition_schema`, bound to it.
  static arrow::Result<PartitionFilter> Make(
      const arrow::compute::Expression& filter,
      const std::shared_ptr<arrow::Schema>& partition_schema);

  /// False when no row of a file with these partition values can match (the conjuncts are
  /// false or null for them).
  arrow::Result<bool> MayMatch(const arrow::ScalarVector& values) const;

 private:
  std::shared_ptr<arrow::Schema> schema_;
  /// Null when no conjunct names partition columns only: nothing to prune by.
  std::optional<arrow::compute::Expression> bound_;
};

}  // namespace stoker
