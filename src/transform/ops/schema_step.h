// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/result.h>
#include <arrow/scalar.h>
#include <arrow/type.h>

#include <memory>
#include <string>
#include <vector>

#include "stoker/transform_options.h"
#include "transform/column_set.h"

namespace stoker {

/// Column types an op takes, and how its errors name them ("numbers").
struct ColumnKind {
  bool (*accepts)(const arrow::DataType& type);
  const char* description;
};

/// The columns and types an op meets at its step of a spec, while the spec is compiled: each
/// op's compile checks its parameters against them and leaves them as they are after the op.
struct SchemaStep {
  TypeColumns columns;
  /// Output columns that reach tensors as values + offsets (ragged ops so far).
  std::vector<std::string> ragged;

  /// The position of column `name`; a KeyError listing the columns at this step otherwise.
  arrow::Result<int> Require(const std::string& name) const;
  /// The position of column `name`, which op `op` needs to be of `kind`; a KeyError, or a
  /// TypeError saying what the op takes.
  arrow::Result<int> Require(const std::string& name, const char* op, const ColumnKind& kind) const;
};

/// The TypeError of an op that cannot take column `column` of type `type`; `takes` says what it
/// takes ("numbers").
arrow::Status WrongType(const char* op, const std::string& column, const arrow::DataType& type,
                        const std::string& takes);

/// `value` as a scalar of `type`, or an Invalid "<what> <value> is not representable as <type>"
/// (out of range, or a fraction for an integer type).
arrow::Result<std::shared_ptr<arrow::Scalar>> Representable(
    double value, const std::shared_ptr<arrow::DataType>& type, const char* what);

/// `value` as a scalar of `type` (a safe cast: an error when it does not fit).
arrow::Result<std::shared_ptr<arrow::Scalar>> CastScalar(
    std::shared_ptr<arrow::Scalar> value, const std::shared_ptr<arrow::DataType>& type);

/// The type a spec's dtype names (bool, int8..int64, uint8..uint64, float16/32/64).
arrow::Result<std::shared_ptr<arrow::DataType>> ParseDtype(const std::string& name);

/// Integer or floating point.
bool IsNumber(const arrow::DataType& type);
/// A number or bool.
bool IsNumberOrBool(const arrow::DataType& type);
/// An id: integer, string or binary.
bool IsId(const arrow::DataType& type);
/// String or binary, of either offset width.
bool IsText(const arrow::DataType& type);
/// A variable-length list (either offset width) of numbers.
bool IsNumericList(const arrow::DataType& type);
/// The float type a numeric column computes in: float64 stays float64, all else is float32.
std::shared_ptr<arrow::DataType> FloatFor(const arrow::DataType& type);

/// OK when `op.keep` (pad's and truncate's end of a longer list) is "first" or "last".
arrow::Status CheckKeep(const TransformOp& op);

inline constexpr ColumnKind kNumbers{&IsNumber, "numbers"};
inline constexpr ColumnKind kIds{&IsId, "integer or string ids"};
inline constexpr ColumnKind kNumericLists{&IsNumericList, "variable-length lists of numbers"};

}  // namespace stoker
