// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Bytes as the serialized filter expression stoker.Loader(filter=...) hands the engine,
// over a dataset with nulls, NaN, infinities and several row groups, so statistics pruning
// meets every edge. Differential: when the loader accepts the filter and reads the epoch,
// it must deliver as many rows as Arrow's own evaluation of the expression selects.
#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/compute/expression.h>

#include "fuzz_support.h"
#include "fuzz_targets.h"
#include "transform/row_filter.h"

namespace stoker::fuzz {

namespace {

const std::string& FilterSource() {
  static const auto* source = new std::string(PutParquet("filter.parquet", *SampleTable(),
                                                         /*row_group_size=*/70)
                                                  .ValueOrDie());
  return *source;
}

// Rows of the whole table for which `expression` is true (null is false), evaluated by
// Arrow alone; an error when Arrow cannot evaluate it.
arrow::Result<int64_t> ExpectedRows(const arrow::compute::Expression& expression) {
  const auto table = SampleTable();
  ARROW_ASSIGN_OR_RAISE(auto bound, expression.Bind(*table->schema()));
  ARROW_ASSIGN_OR_RAISE(auto batch, table->CombineChunksToBatch());
  ARROW_ASSIGN_OR_RAISE(
      auto mask, arrow::compute::ExecuteScalarExpression(bound, arrow::compute::ExecBatch(*batch)));
  ARROW_ASSIGN_OR_RAISE(auto kept, arrow::compute::Filter(batch, mask));
  return kept.record_batch()->num_rows();
}

}  // namespace

int FilterInput(const uint8_t* data, size_t size) {
  const std::string& source = FilterSource();
  auto expression = RowFilter::Deserialize(
      arrow::Buffer::FromString(std::string(reinterpret_cast<const char*>(data), size)));
  if (!expression.ok()) return 0;
  LoaderOptions options = SmallLoaderOptions(source);
  options.shuffle = size % 2 == 0;
  options.filter = *expression;
  auto loader = Loader::Make(options);
  if (!loader.ok()) return 0;
  const EpochRead read = ReadEpoch(**loader, /*max_batches=*/1000);
  if (!read.finished) return 0;
  auto expected = ExpectedRows(*expression);
  if (expected.ok() && *expected != read.rows) {
    Violation("filter " + expression->ToString() + " delivered " + std::to_string(read.rows) +
              " rows; Arrow selects " + std::to_string(*expected));
  }
  return 0;
}

}  // namespace stoker::fuzz
