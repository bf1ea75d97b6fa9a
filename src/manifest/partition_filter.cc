// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "manifest/partition_filter.h"

#include <arrow/array/util.h>
#include <arrow/compute/exec.h>
#include <arrow/record_batch.h>

#include <string>
#include <vector>

#include "stoker/error.h"

namespace stoker {

namespace {

// The members of a chain of ANDs (`a & b & c` is and_kleene(and_kleene(a, b), c)).
void CollectConjuncts(const arrow::compute::Expression& expression,
                      std::vector<arrow::compute::Expression>* out) {
  const auto* call = expression.call();
  if (call != nullptr && (call->function_name == "and_kleene" || call->function_name == "and")) {
    for (const auto& argument : call->arguments) CollectConjuncts(argument, out);
    return;
  }
  out->push_back(expression);
}

// True when every field `expression` names is a top-level field of `schema`.
bool NamesOnly(const arrow::compute::Expression& expression, const arrow::Schema& schema) {
  const auto fields = arrow::compute::FieldsInExpression(expression);
  if (fields.empty()) return false;  // a literal: nothing the partitions decide
  for (const auto& ref : fields) {
    if (ref.name() == nullptr || schema.GetFieldIndex(*ref.name()) < 0) return false;
  }
  return true;
}

}  // namespace

arrow::Result<PartitionFilter> PartitionFilter::Make(
    const arrow::compute::Expression& filter,
    const std::shared_ptr<arrow::Schema>& partition_schema) {
  PartitionFilter out;
  out.schema_ = partition_schema;
  std::vector<arrow::compute::Expression> conjuncts, on_partitions;
  CollectConjuncts(filter, &conjuncts);
  for (auto& conjunct : conjuncts) {
    if (NamesOnly(conjunct, *partition_schema)) on_partitions.push_back(std::move(conjunct));
  }
  if (on_partitions.empty()) return out;
  auto bound = arrow::compute::and_(on_partitions).Bind(*partition_schema);
  if (!bound.ok()) return WithContext(bound.status(), "filter on partition columns");
  out.bound_ = std::move(bound).ValueUnsafe();
  return out;
}

arrow::Result<bool> PartitionFilter::MayMatch(const arrow::ScalarVector& values) const {
  if (!bound_.has_value()) return true;
  arrow::ArrayVector columns;
  for (const auto& value : values) {
    ARROW_ASSIGN_OR_RAISE(auto column, arrow::MakeArrayFromScalar(*value, 1));
    columns.push_back(std::move(column));
  }
  const auto batch = arrow::RecordBatch::Make(schema_, 1, std::move(columns));
  ARROW_ASSIGN_OR_RAISE(auto result,
                        arrow::compute::ExecuteScalarExpression(*bound_, *schema_, batch));
  std::shared_ptr<arrow::Scalar> answer;
  if (result.is_scalar()) {
    answer = result.scalar();
  } else {
    ARROW_ASSIGN_OR_RAISE(answer, result.make_array()->GetScalar(0));
  }
  // Not a boolean: the row filter's own check names the mistake; nothing is pruned here.
  if (answer->type->id() != arrow::Type::BOOL) return true;
  // Null, like false, keeps no row (the row filter counts null as false).
  return answer->is_valid && static_cast<const arrow::BooleanScalar&>(*answer).value;
}

}  // namespace stoker
