// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>
#include <arrow/type.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "assemble/batch_layout.h"
#include "assemble/plan_columns.h"
#include "cache/disk_cache.h"
#include "decode/column_decoder.h"
#include "exec/error_budget.h"
#include "manifest/manifest.h"
#include "stoker/options.h"
#include "transform/row_filter.h"
#include "transform/transform_spec.h"

namespace stoker {

/// Everything a worker needs to turn a unit into the rows the plan counts on. Immutable,
/// shared by the epochs of a loader.
struct UnitSource {
  std::shared_ptr<const Manifest> manifest;
  /// The units the plan schedules: row groups that may match the filter, with num_rows the
  /// count of matching rows (all rows without a filter).
  std::vector<Unit> units;
  /// Applied first, to every row group read; null for none.
  std::shared_ptr<const RowFilter> filter;
  std::optional<arrow::compute::Expression> filter_expression;
  /// Columns read only because the filter needs them; dropped after it.
  std::vector<std::string> filter_only_columns;
  /// Decodes the encoded columns, after the filter (LoaderOptions::codecs); null for none.
  std::shared_ptr<const ColumnDecoder> decoder;
  /// Applied after the decoder.
  std::shared_ptr<const TransformSpec> transforms;
  /// The output columns that reach tensors as values + offsets: those the ragged ops name,
  /// in their order, then (OutputKind::kJagged) the other lists of numbers in column order.
  std::vector<std::string> ragged;
  /// Columns of a finished unit (the transforms' output).
  std::shared_ptr<arrow::Schema> output_schema;
  /// The columns the assembler adds from the plan (mask, row origin).
  PlanColumns plan_columns;
  /// Columns of a batch with plan columns: output_schema, then the plan columns (without
  /// them a batch has output_schema).
  std::shared_ptr<arrow::Schema> batch_schema;
  OutputKind output = OutputKind::kTensor;
  /// Per output column: no unit holds a null in it, so batches need no validity for it. With
  /// tensor output every column (checked per unit); with Arrow output the columns read as
  /// they are whose Parquet statistics prove it (checked per unit too: statistics that lie
  /// are an error, never a lost null).
  std::vector<bool> non_null;
  arrow::MemoryPool* pool = nullptr;
  /// Where batches are allocated (they outlive the loader in the consumer's hands); null:
  /// `pool`.
  arrow::MemoryPool* output_pool = nullptr;
  /// Where range reads run: an executor of StorageOptions::io_threads, apart from the
  /// decode threads, so a slow store keeps many requests in flight.
  std::shared_ptr<arrow::internal::Executor> io_executor;
  /// The units skipped so far and their budget; null with on_error="raise".
  std::shared_ptr<ErrorBudget> error_budget;
  /// Finished units on local disk; null without a cache.
  std::shared_ptr<DiskCache> cache;
  /// Digest of everything besides the file and row group that a finished unit depends on
  /// (columns read and their types, filter, transforms, cache format).
  std::string cache_config_digest;
  arrow::io::IOContext io_context() const { return arrow::io::IOContext(pool, io_executor.get()); }
};

/// What the assembler needs of `source`: its units, batch columns and output pool (the units
/// stay `source`'s, kept alive by the layout).
BatchLayout LayoutOf(const std::shared_ptr<const UnitSource>& source);

}  // namespace stoker
