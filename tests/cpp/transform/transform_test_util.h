// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// What the transform tests share: batches written as JSON, one-op specs compiled and applied
// (their output checked against the schema the spec promised), and the draws of the random ops.
#pragma once

#include <arrow/api.h>
#include <arrow/json/from_string.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "stoker/transform_options.h"
#include "transform/row_draws.h"
#include "transform/transform_spec.h"

// In namespace stoker itself, so that the tests name them without using-declarations.
namespace stoker {

/// An array of `type` written as JSON ("[1, null, 3]").
inline std::shared_ptr<arrow::Array> Json(const std::shared_ptr<arrow::DataType>& type,
                                          const std::string& json) {
  return arrow::json::ArrayFromJSONString(type, json).ValueOrDie();
}

/// A batch of the named columns (all of one length).
inline std::shared_ptr<arrow::RecordBatch> Batch(
    const std::vector<std::pair<std::string, std::shared_ptr<arrow::Array>>>& columns) {
  arrow::FieldVector fields;
  arrow::ArrayVector arrays;
  for (const auto& [name, array] : columns) {
    fields.push_back(arrow::field(name, array->type()));
    arrays.push_back(array);
  }
  return arrow::RecordBatch::Make(arrow::schema(fields), arrays.front()->length(), arrays);
}

/// An op of `kind` on `columns`, every parameter at its default.
inline TransformOp Op(TransformKind kind, std::vector<std::string> columns) {
  TransformOp op;
  op.kind = kind;
  op.columns = std::move(columns);
  return op;
}

/// The spec of `ops` compiled against `batch`'s schema (a failure fails the test).
inline std::shared_ptr<TransformSpec> Compile(std::vector<TransformOp> ops,
                                              const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto spec = TransformSpec::Make(std::move(ops), batch->schema());
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ValueOrDie();
}

/// The spec's output on `batch`, checked against the output schema it promised.
inline std::shared_ptr<arrow::RecordBatch> Transform(
    const TransformSpec& spec, const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto out = spec.Apply(batch, arrow::default_memory_pool());
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out.ValueOrDie()->schema()->Equals(*spec.output_schema()));
  EXPECT_TRUE(out.ValueOrDie()->ValidateFull().ok());
  return out.ValueOrDie();
}

/// The error Make reports for a spec of one op on `batch`.
inline arrow::Status CompileError(TransformOp op,
                                  const std::shared_ptr<arrow::RecordBatch>& batch) {
  auto spec = TransformSpec::Make({std::move(op)}, batch->schema());
  EXPECT_FALSE(spec.ok());
  return spec.status();
}

/// Expects column `name` of `batch` to equal `expected` (type, values and nulls).
inline void ExpectColumn(const arrow::RecordBatch& batch, const std::string& name,
                         const std::shared_ptr<arrow::Array>& expected) {
  const auto column = batch.GetColumnByName(name);
  ASSERT_NE(column, nullptr) << name;
  EXPECT_TRUE(column->Equals(*expected))
      << name << ": " << column->ToString() << " vs " << expected->ToString();
}

/// Where a unit stands for the random ops: the loader's seed, the epoch, its first row.
inline DrawContext Draws(uint64_t seed, uint64_t epoch, int64_t first_row) {
  return DrawContext{.seed = seed, .epoch = epoch, .first_row = first_row};
}

/// The spec's output on `batch` drawing from `draws`, checked against its output schema.
inline std::shared_ptr<arrow::RecordBatch> Drawn(const TransformSpec& spec,
                                                 const std::shared_ptr<arrow::RecordBatch>& batch,
                                                 const DrawContext& draws) {
  auto out = spec.Apply(batch, arrow::default_memory_pool(), draws);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out.ValueOrDie()->schema()->Equals(*spec.output_schema()));
  EXPECT_TRUE(out.ValueOrDie()->ValidateFull().ok());
  return out.ValueOrDie();
}

/// A batch of `n` rows of one int64 column "id" = 1000 + 7 i.
inline std::shared_ptr<arrow::RecordBatch> Ids(int64_t n) {
  arrow::Int64Builder ids;
  for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(ids.Append(1000 + 7 * i).ok());
  return Batch({{"id", ids.Finish().ValueOrDie()}});
}

}  // namespace stoker
