// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/ops/draw_op.h"

#include <cmath>
#include <utility>

#include "transform/canonical_writer.h"

namespace stoker {

namespace {

bool IsInteger(const arrow::DataType& type) { return arrow::is_integer(type.id()); }
constexpr ColumnKind kIntegers{&IsInteger, "integer ids as its key"};

}  // namespace

void DrawingOp::WriteKey(CanonicalWriter* w) const { w->Field("key", op().key); }

void DrawingOp::AddColumn(ArrayColumns* columns, std::shared_ptr<arrow::Array> values) const {
  columns->Insert(static_cast<int>(columns->names.size()), op().columns[0], std::move(values));
}

arrow::Status CheckKey(const TransformOp& op, const char* name, const SchemaStep& step) {
  if (op.key.empty()) return arrow::Status::OK();
  return step.Require(op.key, name, kIntegers).status();
}

arrow::Status AddDrawnColumn(const TransformOp& op, const char* name,
                             std::shared_ptr<arrow::DataType> type, SchemaStep* step) {
  const std::string& column = op.columns[0];
  if (step->columns.Find(column) >= 0) {
    return arrow::Status::Invalid("column '", column, "' exists already; ", name,
                                  " writes a new column: name one that does not exist");
  }
  ARROW_RETURN_NOT_OK(CheckKey(op, name, *step));
  step->columns.names.push_back(column);
  step->columns.values.push_back(std::move(type));
  return arrow::Status::OK();
}

arrow::Status CheckProbability(double p) {
  if (!(p >= 0 && p <= 1)) return arrow::Status::Invalid("p must be in [0, 1], got ", p);
  return arrow::Status::OK();
}

}  // namespace stoker
