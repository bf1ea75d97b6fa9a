// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/row_filter.h"

#include <arrow/array.h>
#include <arrow/compute/api_aggregate.h>
#include <arrow/compute/api_vector.h>
#include <arrow/compute/exec.h>
#include <arrow/dataset/file_parquet.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <parquet/statistics.h>

#include <algorithm>

#include "stoker/error.h"
#include "util/digest.h"

namespace stoker {

namespace {

// Arrow's Deserialize reads an IPC file and takes the expression's scalars out of its batch
// without validating it: a corrupt list offset aborts the process (a failed ARROW_CHECK in
// ArrayData::Slice), a corrupt string length throws std::length_error (both found by
// `make fuzz`). So the file is read and its batches fully validated first.
arrow::Status ValidateSerialized(const std::shared_ptr<arrow::Buffer>& serialized) {
  ARROW_ASSIGN_OR_RAISE(auto reader, arrow::ipc::RecordBatchFileReader::Open(
                                         std::make_shared<arrow::io::BufferReader>(serialized)));
  for (int i = 0; i < reader->num_record_batches(); ++i) {
    ARROW_ASSIGN_OR_RAISE(auto batch, reader->ReadRecordBatch(i));
    ARROW_RETURN_NOT_OK(batch->ValidateFull());
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<arrow::compute::Expression> RowFilter::Deserialize(
    std::shared_ptr<arrow::Buffer> serialized) {
  auto expression = CatchAll([&]() -> arrow::Result<arrow::compute::Expression> {
    ARROW_RETURN_NOT_OK(ValidateSerialized(serialized));
    return arrow::compute::Deserialize(std::move(serialized));
  });
  if (expression.ok()) return expression;
  return arrow::Status::Invalid(
      "filter is not an expression in Arrow's serialized form (arrow::compute::Serialize): ",
      expression.status().message());
}

arrow::Result<std::vector<std::string>> RowFilter::ColumnsOf(
    const arrow::compute::Expression& expression) {
  std::vector<std::string> names;
  for (const auto& ref : arrow::compute::FieldsInExpression(expression)) {
    if (ref.name() == nullptr) {
      return arrow::Status::Invalid("filter: refer to columns by name, got ", ref.ToString());
    }
    if (std::find(names.begin(), names.end(), *ref.name()) == names.end()) {
      names.push_back(*ref.name());
    }
  }
  return names;
}

arrow::Result<std::shared_ptr<RowFilter>> RowFilter::Make(
    arrow::compute::Expression expression, const std::shared_ptr<arrow::Schema>& schema) {
  auto filter = std::make_shared<RowFilter>();
  auto bound = expression.Bind(*schema);
  if (!bound.ok()) {
    return arrow::Status::Invalid("filter ", expression.ToString(), ": ", bound.status().message());
  }
  if (!bound->type()->Equals(*arrow::boolean())) {
    return arrow::Status::TypeError("filter ", expression.ToString(), " gives ",
                                    bound->type()->ToString(), ", not a boolean");
  }
  filter->bound_ = *bound;
  filter->schema_ = schema;
  ARROW_ASSIGN_OR_RAISE(auto serialized, arrow::compute::Serialize(expression));
  Digest digest;
  digest.Add(serialized->ToString());
  filter->digest_ = digest.Hex();
  return filter;
}

bool RowFilter::MayMatch(const parquet::RowGroupMetaData& row_group,
                         const std::vector<int>& leaves) const {
  std::vector<arrow::compute::Expression> facts;
  for (int i = 0; i < schema_->num_fields(); ++i) {
    if (leaves[i] < 0) continue;
    try {
      auto chunk = row_group.ColumnChunk(leaves[i]);
      auto stats = chunk->statistics();
      if (stats == nullptr || !chunk->is_stats_set()) continue;
      auto fact = arrow::dataset::ParquetFileFragment::EvaluateStatisticsAsExpression(
          *schema_->field(i), *stats);
      if (fact.has_value()) facts.push_back(std::move(*fact));
    } catch (const std::exception&) {
      // Unreadable statistics prove nothing: read the row group.
    }
  }
  if (facts.empty()) return true;
  auto simplified = arrow::compute::SimplifyWithGuarantee(bound_, arrow::compute::and_(facts));
  if (!simplified.ok()) return true;
  return simplified->IsSatisfiable();
}

arrow::Result<std::shared_ptr<arrow::Array>> RowFilter::Mask(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const {
  arrow::compute::ExecContext ctx(pool);
  ARROW_ASSIGN_OR_RAISE(auto mask, arrow::compute::ExecuteScalarExpression(
                                       bound_, *schema_, arrow::Datum(batch), &ctx));
  if (mask.is_scalar()) {
    ARROW_ASSIGN_OR_RAISE(auto array,
                          arrow::MakeArrayFromScalar(*mask.scalar(), batch->num_rows(), pool));
    return array;
  }
  return mask.make_array();
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> RowFilter::Apply(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const {
  ARROW_ASSIGN_OR_RAISE(auto mask, Mask(batch, pool));
  arrow::compute::ExecContext ctx(pool);
  ARROW_ASSIGN_OR_RAISE(
      auto filtered,
      arrow::compute::Filter(batch, mask, arrow::compute::FilterOptions::Defaults(), &ctx));
  return filtered.record_batch();
}

arrow::Result<int64_t> RowFilter::Count(const std::shared_ptr<arrow::RecordBatch>& batch,
                                        arrow::MemoryPool* pool) const {
  ARROW_ASSIGN_OR_RAISE(auto mask, Mask(batch, pool));
  const auto& bools = static_cast<const arrow::BooleanArray&>(*mask);
  return bools.true_count();
}

}  // namespace stoker
