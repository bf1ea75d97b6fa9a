// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/ops/schema_step.h"

#include <arrow/compute/cast.h>

#include <cmath>
#include <utility>

namespace stoker {

namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

arrow::Result<int> SchemaStep::Require(const std::string& name) const {
  const int i = columns.Find(name);
  if (i < 0) {
    return arrow::Status::KeyError("column '", name,
                                   "' not found; columns at this step: ", Join(columns.names));
  }
  return i;
}

arrow::Result<int> SchemaStep::Require(const std::string& name, const char* op,
                                       const ColumnKind& kind) const {
  ARROW_ASSIGN_OR_RAISE(int i, Require(name));
  if (!kind.accepts(*columns.values[i])) {
    return WrongType(op, name, *columns.values[i], kind.description);
  }
  return i;
}

arrow::Status WrongType(const char* op, const std::string& column, const arrow::DataType& type,
                        const std::string& takes) {
  return arrow::Status::TypeError("column '", column, "' has type ", type.ToString(), "; ", op,
                                  " takes ", takes);
}

arrow::Result<std::shared_ptr<arrow::Scalar>> Representable(
    double value, const std::shared_ptr<arrow::DataType>& type, const char* what) {
  auto cast = CastScalar(arrow::MakeScalar(value), type);
  if (!cast.ok() || (arrow::is_integer(type->id()) && value != std::floor(value))) {
    return arrow::Status::Invalid(what, " ", value, " is not representable as ", type->ToString());
  }
  return cast;
}

arrow::Result<std::shared_ptr<arrow::Scalar>> CastScalar(
    std::shared_ptr<arrow::Scalar> value, const std::shared_ptr<arrow::DataType>& type) {
  ARROW_ASSIGN_OR_RAISE(auto cast, arrow::compute::Cast(arrow::Datum(std::move(value)), type,
                                                        arrow::compute::CastOptions::Safe(type)));
  return cast.scalar();
}

arrow::Result<std::shared_ptr<arrow::DataType>> ParseDtype(const std::string& name) {
  static const std::pair<const char*, std::shared_ptr<arrow::DataType>> kTypes[] = {
      {"bool", arrow::boolean()},    {"int8", arrow::int8()},       {"int16", arrow::int16()},
      {"int32", arrow::int32()},     {"int64", arrow::int64()},     {"uint8", arrow::uint8()},
      {"uint16", arrow::uint16()},   {"uint32", arrow::uint32()},   {"uint64", arrow::uint64()},
      {"float16", arrow::float16()}, {"float32", arrow::float32()}, {"float64", arrow::float64()},
  };
  for (const auto& [n, type] : kTypes) {
    if (name == n) return type;
  }
  return arrow::Status::Invalid("dtype '", name,
                                "' is not one of bool, int8, int16, int32, int64, uint8, uint16, "
                                "uint32, uint64, float16, float32, float64");
}

arrow::Status CheckKeep(const TransformOp& op) {
  if (op.keep == "first" || op.keep == "last") return arrow::Status::OK();
  return arrow::Status::Invalid("keep must be \"first\" or \"last\", got \"", op.keep, "\"");
}

bool IsNumber(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || arrow::is_floating(type.id());
}

bool IsNumberOrBool(const arrow::DataType& type) {
  return IsNumber(type) || type.id() == arrow::Type::BOOL;
}

bool IsId(const arrow::DataType& type) { return arrow::is_integer(type.id()) || IsText(type); }

bool IsText(const arrow::DataType& type) { return arrow::is_base_binary_like(type.id()); }

bool IsNumericList(const arrow::DataType& type) {
  return (type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST) &&
         IsNumber(*type.field(0)->type());
}

std::shared_ptr<arrow::DataType> FloatFor(const arrow::DataType& type) {
  return type.id() == arrow::Type::DOUBLE ? arrow::float64() : arrow::float32();
}

}  // namespace stoker
