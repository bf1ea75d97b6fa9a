// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#pragma once

#include <arrow/compute/exec.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "stoker/transform_options.h"
#include "transform/column_set.h"
#include "transform/row_draws.h"

namespace stoker {

class CanonicalWriter;
struct SchemaStep;

/// One key a spec dict may give an op (Python checks the dicts' shape against these).
struct OpParam {
  /// The key as the spec writes it ("column", "num_buckets", ...).
  const char* key;
  /// Whether a spec must give it; an optional key takes TransformOp's default.
  bool required;
  /// A key accepted instead of this list key, holding one item of it ("column" for drop's
  /// "columns"); nullptr when there is none.
  const char* singular = nullptr;
};

/// An op checked against the columns it meets, holding what its apply needs (resolved types,
/// typed scalars, a loaded vocabulary). Immutable once made: worker threads share it.
class CompiledOp {
 public:
  explicit CompiledOp(TransformOp op) : op_(std::move(op)) {}
  virtual ~CompiledOp() = default;

  const TransformOp& op() const { return op_; }

  /// Writes the op's parameters, after the op name and its column(s), to the canonical form.
  virtual void WriteParams(CanonicalWriter* /*writer*/) const {}
  /// Whether the op draws random numbers: it then runs per epoch after the disk cache, and
  /// the ops after it too (TransformSpec::ApplyDraws).
  virtual bool draws() const { return false; }
  /// Transforms one batch's columns as compile did their types: the op's own ones in place,
  /// or adding and removing columns. `draws` says where the unit's rows stand (only ops that
  /// draw read it); `exec` runs Arrow compute functions and holds the pool to allocate from.
  virtual arrow::Status Apply(ArrayColumns* columns, const DrawContext& draws,
                              arrow::compute::ExecContext* exec) const = 0;

 protected:
  /// The position of the op's (first) column in `columns`; compile checked it is there.
  int Position(const ArrayColumns& columns) const { return columns.Find(op_.columns[0]); }
  /// The op's (first) column in `columns`.
  std::shared_ptr<arrow::Array>& Column(ArrayColumns* columns) const {
    return columns->values[Position(*columns)];
  }

 private:
  TransformOp op_;
};

/// Everything about one transform op: its name, the keys of its spec dict, and how it is
/// checked against a schema and compiled. Each op is one file in this folder defining one
/// descriptor; registry.cc lists them.
struct OpDescriptor {
  TransformKind kind;
  /// The name a spec writes ("log1p").
  const char* name;
  /// The keys of its spec dict, "column" or "columns" first.
  std::span<const OpParam> params;
  /// Checks `op` against the columns it meets (`step`, which already holds the op's column or
  /// columns), updates `step` to the columns that follow the op and returns the compiled op.
  /// Errors name the column and what was expected; the spec prefixes the op's position and
  /// name.
  arrow::Result<std::unique_ptr<CompiledOp>> (*compile)(const TransformOp& op, SchemaStep* step);

  /// Whether the op takes a list of columns ("columns", e.g. stack, drop) rather than one.
  bool TakesColumnList() const {
    for (const OpParam& param : params) {
      if (std::string_view(param.key) == "columns") return true;
    }
    return false;
  }
};

}  // namespace stoker
