// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/transform_spec.h"

#include <arrow/compute/exec.h>

#include <algorithm>

#include "stoker/error.h"
#include "transform/canonical_writer.h"
#include "transform/ops/registry.h"
#include "transform/ops/schema_step.h"
#include "util/digest.h"

namespace stoker {

namespace {

// Checks the op's column count, then lets its descriptor check and compile it.
arrow::Result<std::unique_ptr<CompiledOp>> CompileOp(const OpDescriptor& descriptor,
                                                     const TransformOp& op, SchemaStep* step) {
  if (!descriptor.TakesColumnList() && op.columns.size() != 1) {
    return arrow::Status::Invalid("takes exactly one column, got ", op.columns.size());
  }
  if (op.columns.empty()) return arrow::Status::Invalid("names no column");
  return descriptor.compile(op, step);
}

void WriteCanonical(const OpDescriptor& descriptor, const CompiledOp& compiled,
                    CanonicalWriter* w) {
  const TransformOp& op = compiled.op();
  w->Begin(descriptor.name);
  if (descriptor.TakesColumnList()) {
    w->Field("columns", op.columns);
  } else {
    w->Field("column", op.columns[0]);
  }
  compiled.WriteParams(w);
  w->End();
}

}  // namespace

arrow::Result<std::shared_ptr<TransformSpec>> TransformSpec::Make(
    std::vector<TransformOp> ops, const std::shared_ptr<arrow::Schema>& input_schema) {
  auto spec = std::make_shared<TransformSpec>();
  spec->input_schema_ = input_schema;
  SchemaStep step;
  for (const auto& field : input_schema->fields()) {
    step.columns.names.push_back(field->name());
    step.columns.values.push_back(field->type());
  }
  CanonicalWriter writer;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDescriptor* descriptor = FindOp(ops[i].kind);
    std::string label = "transform " + std::to_string(i) + " (" +
                        (descriptor != nullptr ? descriptor->name : "?") + ")";
    if (descriptor == nullptr) return arrow::Status::Invalid(label, ": unsupported op");
    auto compiled = CompileOp(*descriptor, ops[i], &step);
    if (!compiled.ok()) return WithContext(compiled.status(), label);
    WriteCanonical(*descriptor, **compiled, &writer);
    spec->steps_.push_back({std::move(label), std::move(compiled).ValueUnsafe()});
  }
  spec->first_draw_ = spec->steps_.size();
  for (size_t i = 0; i < spec->steps_.size(); ++i) {
    if (spec->steps_[i].op->draws()) {
      spec->first_draw_ = i;
      break;
    }
  }
  spec->ragged_ = std::move(step.ragged);
  const auto untouched = spec->UntouchedColumns();
  arrow::FieldVector fields;
  for (size_t i = 0; i < step.columns.names.size(); ++i) {
    const auto& name = step.columns.names[i];
    if (std::find(untouched.begin(), untouched.end(), name) != untouched.end()) {
      fields.push_back(input_schema->GetFieldByName(name));  // keeps nullability, metadata
    } else {
      fields.push_back(arrow::field(name, step.columns.values[i]));
    }
  }
  spec->output_schema_ = arrow::schema(fields);
  spec->canonical_ = writer.Finish();
  Digest digest;
  digest.Add(spec->canonical_);
  spec->digest_ = digest.Hex();
  return spec;
}

std::vector<std::string> TransformSpec::UntouchedColumns() const {
  std::vector<std::string> out;
  for (const auto& field : input_schema_->fields()) {
    bool touched = false;
    for (const auto& step : steps_) {
      for (const auto& column : step.op->op().columns) {
        touched = touched || column == field->name();
      }
    }
    if (!touched) out.push_back(field->name());
  }
  return out;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TransformSpec::Apply(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool,
    DrawContext draws) const {
  if (steps_.empty()) return batch;
  return ApplySteps(batch, pool, draws, 0, steps_.size());
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TransformSpec::ApplyBeforeDraws(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const {
  if (first_draw_ == 0) return batch;
  return ApplySteps(batch, pool, DrawContext{}, 0, first_draw_);
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TransformSpec::ApplyDraws(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool,
    DrawContext draws) const {
  if (!this->draws()) return batch;
  return ApplySteps(batch, pool, draws, first_draw_, steps_.size());
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TransformSpec::ApplySteps(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool, DrawContext draws,
    size_t from, size_t to) const {
  arrow::compute::ExecContext exec(pool);
  ArrayColumns columns;
  for (int i = 0; i < batch->num_columns(); ++i) {
    columns.names.push_back(batch->schema()->field(i)->name());
    columns.values.push_back(batch->column(i));
  }
  draws.num_rows = batch->num_rows();
  for (size_t i = from; i < to; ++i) {
    const Step& step = steps_[i];
    draws.op_index = static_cast<int>(i);
    auto status = step.op->Apply(&columns, draws, &exec);
    if (!status.ok()) {
      return WithContext(status, step.label + " on column '" + step.op->op().columns[0] + "'");
    }
  }
  if (to == steps_.size()) {
    return arrow::RecordBatch::Make(output_schema_, batch->num_rows(), std::move(columns.values));
  }
  // Part way: the columns as they stand, keeping the fields (nullability, metadata) of those
  // that came through unchanged.
  arrow::FieldVector fields;
  for (size_t i = 0; i < columns.names.size(); ++i) {
    auto field = batch->schema()->GetFieldByName(columns.names[i]);
    if (field == nullptr || !field->type()->Equals(*columns.values[i]->type())) {
      field = arrow::field(columns.names[i], columns.values[i]->type());
    }
    fields.push_back(std::move(field));
  }
  return arrow::RecordBatch::Make(arrow::schema(std::move(fields)), batch->num_rows(),
                                  std::move(columns.values));
}

}  // namespace stoker
