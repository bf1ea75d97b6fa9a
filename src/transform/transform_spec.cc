// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "transform/transform_spec.h"

#include <arrow/compute/api_scalar.h>
#include <arrow/compute/cast.h>
#include <arrow/scalar.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "transform/transform_kernels.h"
#include "util/digest.h"

namespace stoker {

namespace {

struct KindName {
  TransformKind kind;
  const char* name;
};

constexpr KindName kKindNames[] = {
    {TransformKind::kCast, "cast"},
    {TransformKind::kFillNull, "fill_null"},
    {TransformKind::kClip, "clip"},
    {TransformKind::kLog1p, "log1p"},
    {TransformKind::kStandardize, "standardize"},
    {TransformKind::kBucketize, "bucketize"},
    {TransformKind::kHash, "hash"},
    {TransformKind::kVocabulary, "vocabulary"},
    {TransformKind::kStack, "stack"},
    {TransformKind::kRename, "rename"},
    {TransformKind::kDrop, "drop"},
    {TransformKind::kPad, "pad"},
    {TransformKind::kRagged, "ragged"},
};

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

bool IsNumber(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || arrow::is_floating(type.id());
}

bool IsText(const arrow::DataType& type) { return arrow::is_base_binary_like(type.id()); }

bool IsNumericList(const arrow::DataType& type) {
  return (type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST) &&
         IsNumber(*type.field(0)->type());
}

// `value` as a scalar of `type` (a safe cast: an error when it does not fit).
arrow::Result<std::shared_ptr<arrow::Scalar>> CastScalar(
    std::shared_ptr<arrow::Scalar> value, const std::shared_ptr<arrow::DataType>& type) {
  ARROW_ASSIGN_OR_RAISE(auto cast, arrow::compute::Cast(arrow::Datum(std::move(value)), type,
                                                        arrow::compute::CastOptions::Safe(type)));
  return cast.scalar();
}

std::shared_ptr<arrow::DataType> FloatFor(const arrow::DataType& type) {
  return type.id() == arrow::Type::DOUBLE ? arrow::float64() : arrow::float32();
}

// Columns by name, in order, with values of T (a type at compile time, an array at apply).
template <typename T>
struct ColumnSet {
  std::vector<std::string> names;
  std::vector<T> values;

  int Find(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  void Remove(int i) {
    names.erase(names.begin() + i);
    values.erase(values.begin() + i);
  }
  void Insert(int i, std::string name, T value) {
    names.insert(names.begin() + i, std::move(name));
    values.insert(values.begin() + i, std::move(value));
  }
};

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Minimal JSON writing for the canonical form: fixed key order, round-trip number format.
class CanonicalWriter {
 public:
  void Begin(const char* op) {
    out_ += std::string(out_.empty() ? "[" : ",") + "{\"op\":\"" + op + "\"";
  }
  void End() { out_ += "}"; }
  void Key(const char* key) { out_ += std::string(",\"") + key + "\":"; }
  void String(const std::string& s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') out_ += '\\';
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out_ += buf;
      } else {
        out_ += c;
      }
    }
    out_ += '"';
  }
  void Number(double v) {
    if (std::isinf(v)) {
      out_ += v > 0 ? "\"inf\"" : "\"-inf\"";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.17g", v);
    out_ += buf;
  }
  void Strings(const std::vector<std::string>& values) {
    out_ += '[';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_ += ',';
      String(values[i]);
    }
    out_ += ']';
  }
  void Numbers(const std::vector<double>& values) {
    out_ += '[';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_ += ',';
      Number(values[i]);
    }
    out_ += ']';
  }
  std::string Finish() { return out_.empty() ? "[]" : out_ + "]"; }

 private:
  std::string out_;
};

}  // namespace

struct TransformSpec::CompiledOp {
  TransformOp op;
  std::string label;                    // "transform 3 (log1p)"
  std::shared_ptr<arrow::DataType> to;  // cast/stack dtype; float type of log1p/standardize
  std::shared_ptr<arrow::Scalar> fill, low, high, mean, std_dev;
  std::shared_ptr<Vocabulary> vocabulary;
};

const char* TransformKindName(TransformKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "?";
}

arrow::Result<TransformKind> ParseTransformKind(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [kind, n] : kKindNames) {
    if (name == n) return kind;
    names.push_back(n);
  }
  return arrow::Status::Invalid("unknown transform op '", name, "'; the ops are ", Join(names));
}

namespace {

// Checks one op against the columns it will meet, fills in its compiled form and updates the
// column set to what follows the op.
arrow::Status Compile(TransformSpec::CompiledOp* c,
                      ColumnSet<std::shared_ptr<arrow::DataType>>* set,
                      std::vector<std::string>* ragged) {
  const TransformOp& op = c->op;
  const std::string& label = c->label;
  auto fail = [&](auto&&... args) {
    return arrow::Status::Invalid(label, ": ", std::forward<decltype(args)>(args)...);
  };
  auto require = [&](const std::string& name) -> arrow::Result<int> {
    const int i = set->Find(name);
    if (i < 0) {
      return arrow::Status::KeyError(label, ": column '", name,
                                     "' not found; columns at this step: ", Join(set->names));
    }
    return i;
  };
  auto wrong_type = [&](const std::string& name, const arrow::DataType& type, const char* takes) {
    return arrow::Status::TypeError(label, ": column '", name, "' has type ", type.ToString(), "; ",
                                    TransformKindName(op.kind), " takes ", takes);
  };
  auto typed = [&](double value, const std::shared_ptr<arrow::DataType>& type,
                   const char* what) -> arrow::Result<std::shared_ptr<arrow::Scalar>> {
    auto cast = CastScalar(arrow::MakeScalar(value), type);
    if (!cast.ok() || (arrow::is_integer(type->id()) && value != std::floor(value))) {
      return arrow::Status::Invalid(label, ": ", what, " ", value, " is not representable as ",
                                    type->ToString());
    }
    return cast;
  };
  const bool single = op.kind != TransformKind::kStack && op.kind != TransformKind::kDrop;
  if (single && op.columns.size() != 1) {
    return fail("takes exactly one column, got ", op.columns.size());
  }
  if (op.columns.empty()) return fail("names no column");
  const std::string& name = op.columns[0];

  switch (op.kind) {
    case TransformKind::kCast: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      auto to = ParseDtype(op.dtype);
      if (!to.ok()) return fail(to.status().message());
      if (!arrow::compute::CanCast(*set->values[i], **to)) {
        return wrong_type(name, *set->values[i], ("a type castable to " + op.dtype).c_str());
      }
      c->to = *to;
      set->values[i] = *to;
      return arrow::Status::OK();
    }
    case TransformKind::kFillNull: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (op.is_text) {
        if (!IsText(*type)) return wrong_type(name, *type, "a number here (the value is text)");
        ARROW_ASSIGN_OR_RAISE(c->fill, CastScalar(arrow::MakeScalar(op.text), type));
      } else if (IsNumber(*type) || type->id() == arrow::Type::BOOL) {
        ARROW_ASSIGN_OR_RAISE(c->fill, typed(op.number, type, "fill value"));
      } else {
        return wrong_type(name, *type, "numbers, bool or strings");
      }
      return arrow::Status::OK();
    }
    case TransformKind::kClip: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (!IsNumber(*type)) return wrong_type(name, *type, "numbers");
      if (std::isnan(op.low) || std::isnan(op.high) || op.low > op.high) {
        return fail("needs min <= max, got min ", op.low, ", max ", op.high);
      }
      if (std::isfinite(op.low)) {
        ARROW_ASSIGN_OR_RAISE(c->low, typed(op.low, type, "min"));
      }
      if (std::isfinite(op.high)) {
        ARROW_ASSIGN_OR_RAISE(c->high, typed(op.high, type, "max"));
      }
      return arrow::Status::OK();
    }
    case TransformKind::kLog1p:
    case TransformKind::kStandardize: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (!IsNumber(*type)) return wrong_type(name, *type, "numbers");
      c->to = FloatFor(*type);
      if (op.kind == TransformKind::kStandardize) {
        if (!(op.std > 0) || !std::isfinite(op.std) || !std::isfinite(op.mean)) {
          return fail("needs a finite mean and std > 0, got mean ", op.mean, ", std ", op.std);
        }
        ARROW_ASSIGN_OR_RAISE(c->mean, CastScalar(arrow::MakeScalar(op.mean), c->to));
        ARROW_ASSIGN_OR_RAISE(c->std_dev, CastScalar(arrow::MakeScalar(op.std), c->to));
      }
      set->values[i] = c->to;
      return arrow::Status::OK();
    }
    case TransformKind::kBucketize: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (!IsNumber(*type)) return wrong_type(name, *type, "numbers");
      if (op.boundaries.empty()) return fail("needs at least one boundary");
      for (size_t k = 0; k < op.boundaries.size(); ++k) {
        if (std::isnan(op.boundaries[k]) || (k > 0 && op.boundaries[k] <= op.boundaries[k - 1])) {
          return fail("boundaries must be strictly increasing numbers (position ", k, ")");
        }
      }
      set->values[i] = arrow::int32();
      return arrow::Status::OK();
    }
    case TransformKind::kHash:
    case TransformKind::kVocabulary: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      const bool integer = arrow::is_integer(type->id());
      if (!integer && !IsText(*type)) return wrong_type(name, *type, "integer or string ids");
      if (op.kind == TransformKind::kHash) {
        if (op.num_buckets < 1) return fail("num_buckets must be >= 1, got ", op.num_buckets);
      } else {
        auto vocabulary = LoadVocabulary(op.path, integer);
        if (!vocabulary.ok()) {
          return arrow::Status(vocabulary.status().code(),
                               label + ": " + vocabulary.status().message(),
                               vocabulary.status().detail());
        }
        c->vocabulary = *vocabulary;
      }
      set->values[i] = arrow::int64();
      return arrow::Status::OK();
    }
    case TransformKind::kStack: {
      auto to = ParseDtype(op.dtype.empty() ? "float32" : op.dtype);
      if (!to.ok()) return fail(to.status().message());
      c->to = *to;
      if (op.output.empty()) return fail("needs an output column name");
      std::vector<int> inputs;
      for (const auto& column : op.columns) {
        ARROW_ASSIGN_OR_RAISE(int i, require(column));
        const auto& type = set->values[i];
        if (!IsNumber(*type) && type->id() != arrow::Type::BOOL) {
          return wrong_type(column, *type, "scalar numbers or bool");
        }
        inputs.push_back(i);
      }
      std::sort(inputs.rbegin(), inputs.rend());
      if (std::adjacent_find(inputs.begin(), inputs.end()) != inputs.end()) {
        return fail("lists a column twice");
      }
      for (int i : inputs) set->Remove(i);
      if (set->Find(op.output) >= 0) return fail("output '", op.output, "' already exists");
      set->Insert(static_cast<int>(set->names.size()), op.output,
                  arrow::fixed_size_list(c->to, static_cast<int>(op.columns.size())));
      return arrow::Status::OK();
    }
    case TransformKind::kRename: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      if (op.output.empty()) return fail("needs a new name");
      if (set->Find(op.output) >= 0) return fail("'", op.output, "' already exists");
      for (auto& r : *ragged) {
        if (r == name) r = op.output;
      }
      set->names[i] = op.output;
      return arrow::Status::OK();
    }
    case TransformKind::kDrop: {
      for (const auto& column : op.columns) {
        ARROW_ASSIGN_OR_RAISE(int i, require(column));
        set->Remove(i);
        ragged->erase(std::remove(ragged->begin(), ragged->end(), column), ragged->end());
      }
      return arrow::Status::OK();
    }
    case TransformKind::kPad: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (!IsNumericList(*type)) return wrong_type(name, *type, "variable-length lists of numbers");
      if (op.length < 1) return fail("length must be >= 1, got ", op.length);
      const auto& value_type = type->field(0)->type();
      ARROW_RETURN_NOT_OK(typed(op.number, value_type, "pad value").status());
      const std::string lengths = name + "_length";
      if (set->Find(lengths) >= 0) return fail("'", lengths, "' already exists");
      set->values[i] = arrow::fixed_size_list(value_type, static_cast<int>(op.length));
      set->Insert(i + 1, lengths, arrow::int32());
      return arrow::Status::OK();
    }
    case TransformKind::kRagged: {
      ARROW_ASSIGN_OR_RAISE(int i, require(name));
      const auto& type = set->values[i];
      if (!IsNumericList(*type)) return wrong_type(name, *type, "variable-length lists of numbers");
      ragged->push_back(name);
      return arrow::Status::OK();
    }
  }
  return fail("unsupported op");
}

void WriteCanonical(const TransformSpec::CompiledOp& c, CanonicalWriter* w) {
  const TransformOp& op = c.op;
  w->Begin(TransformKindName(op.kind));
  const bool many = op.kind == TransformKind::kStack || op.kind == TransformKind::kDrop;
  w->Key(many ? "columns" : "column");
  if (many) {
    w->Strings(op.columns);
  } else {
    w->String(op.columns.at(0));
  }
  switch (op.kind) {
    case TransformKind::kCast:
      w->Key("dtype");
      w->String(op.dtype);
      break;
    case TransformKind::kFillNull:
      w->Key("value");
      if (op.is_text) {
        w->String(op.text);
      } else {
        w->Number(op.number);
      }
      break;
    case TransformKind::kClip:
      w->Key("min");
      w->Number(op.low);
      w->Key("max");
      w->Number(op.high);
      break;
    case TransformKind::kStandardize:
      w->Key("mean");
      w->Number(op.mean);
      w->Key("std");
      w->Number(op.std);
      break;
    case TransformKind::kBucketize:
      w->Key("boundaries");
      w->Numbers(op.boundaries);
      break;
    case TransformKind::kHash:
      w->Key("num_buckets");
      w->Number(static_cast<double>(op.num_buckets));
      break;
    case TransformKind::kVocabulary:
      w->Key("vocabulary_digest");
      w->String(c.vocabulary->digest);
      w->Key("default");
      w->Number(static_cast<double>(op.default_id));
      break;
    case TransformKind::kStack:
      w->Key("output");
      w->String(op.output);
      w->Key("dtype");
      w->String(op.dtype.empty() ? "float32" : op.dtype);
      break;
    case TransformKind::kRename:
      w->Key("to");
      w->String(op.output);
      break;
    case TransformKind::kPad:
      w->Key("length");
      w->Number(static_cast<double>(op.length));
      w->Key("value");
      w->Number(op.number);
      break;
    default:
      break;
  }
  w->End();
}

}  // namespace

arrow::Result<std::shared_ptr<TransformSpec>> TransformSpec::Make(
    std::vector<TransformOp> ops, const std::shared_ptr<arrow::Schema>& input_schema) {
  auto spec = std::make_shared<TransformSpec>();
  spec->input_schema_ = input_schema;
  ColumnSet<std::shared_ptr<arrow::DataType>> set;
  for (const auto& field : input_schema->fields()) {
    set.names.push_back(field->name());
    set.values.push_back(field->type());
  }
  CanonicalWriter writer;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto compiled = std::make_shared<CompiledOp>();
    compiled->op = std::move(ops[i]);
    compiled->label =
        "transform " + std::to_string(i) + " (" + TransformKindName(compiled->op.kind) + ")";
    ARROW_RETURN_NOT_OK(Compile(compiled.get(), &set, &spec->ragged_));
    WriteCanonical(*compiled, &writer);
    spec->ops_.push_back(std::move(compiled));
  }
  const auto untouched = spec->UntouchedColumns();
  arrow::FieldVector fields;
  for (size_t i = 0; i < set.names.size(); ++i) {
    const auto& name = set.names[i];
    if (std::find(untouched.begin(), untouched.end(), name) != untouched.end()) {
      fields.push_back(input_schema->GetFieldByName(name));  // keeps nullability, metadata
    } else {
      fields.push_back(arrow::field(name, set.values[i]));
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
    for (const auto& op : ops_) {
      for (const auto& column : op->op.columns) touched = touched || column == field->name();
    }
    if (!touched) out.push_back(field->name());
  }
  return out;
}

namespace {

arrow::Result<std::shared_ptr<arrow::Array>> Call(const std::string& function,
                                                  std::vector<arrow::Datum> args,
                                                  const arrow::compute::FunctionOptions* options,
                                                  arrow::compute::ExecContext* ctx) {
  ARROW_ASSIGN_OR_RAISE(auto out, arrow::compute::CallFunction(function, args, options, ctx));
  return out.make_array();
}

arrow::Result<std::shared_ptr<arrow::Array>> ToType(const std::shared_ptr<arrow::Array>& values,
                                                    const std::shared_ptr<arrow::DataType>& type,
                                                    arrow::compute::ExecContext* ctx) {
  if (values->type()->Equals(*type)) return values;
  return arrow::compute::Cast(*values, type, arrow::compute::CastOptions::Safe(type), ctx);
}

arrow::Status ApplyOne(const TransformSpec::CompiledOp& c,
                       ColumnSet<std::shared_ptr<arrow::Array>>* set, arrow::MemoryPool* pool,
                       arrow::compute::ExecContext* ctx) {
  const TransformOp& op = c.op;
  const int i = set->Find(op.columns[0]);
  auto& x = set->values[i];
  switch (op.kind) {
    case TransformKind::kCast: {
      ARROW_ASSIGN_OR_RAISE(x, ToType(x, c.to, ctx));
      return arrow::Status::OK();
    }
    case TransformKind::kFillNull: {
      if (x->null_count() > 0) {
        ARROW_ASSIGN_OR_RAISE(x, Call("coalesce", {x, c.fill}, nullptr, ctx));
      }
      return arrow::Status::OK();
    }
    case TransformKind::kClip: {
      const arrow::compute::ElementWiseAggregateOptions keep_nulls(/*skip_nulls=*/false);
      if (c.low) {
        ARROW_ASSIGN_OR_RAISE(x, Call("max_element_wise", {x, c.low}, &keep_nulls, ctx));
      }
      if (c.high) {
        ARROW_ASSIGN_OR_RAISE(x, Call("min_element_wise", {x, c.high}, &keep_nulls, ctx));
      }
      return arrow::Status::OK();
    }
    case TransformKind::kLog1p: {
      ARROW_ASSIGN_OR_RAISE(x, ToType(x, c.to, ctx));
      ARROW_ASSIGN_OR_RAISE(x, Call("log1p", {x}, nullptr, ctx));
      return arrow::Status::OK();
    }
    case TransformKind::kStandardize: {
      ARROW_ASSIGN_OR_RAISE(x, ToType(x, c.to, ctx));
      ARROW_ASSIGN_OR_RAISE(x, Call("subtract", {x, c.mean}, nullptr, ctx));
      ARROW_ASSIGN_OR_RAISE(x, Call("divide", {x, c.std_dev}, nullptr, ctx));
      return arrow::Status::OK();
    }
    case TransformKind::kBucketize: {
      ARROW_ASSIGN_OR_RAISE(x, Bucketize(*x, op.boundaries, pool));
      return arrow::Status::OK();
    }
    case TransformKind::kHash: {
      ARROW_ASSIGN_OR_RAISE(x, HashIds(*x, op.num_buckets, pool));
      return arrow::Status::OK();
    }
    case TransformKind::kVocabulary: {
      ARROW_ASSIGN_OR_RAISE(x, LookupVocabulary(*x, *c.vocabulary, op.default_id, pool));
      return arrow::Status::OK();
    }
    case TransformKind::kStack: {
      arrow::ArrayVector inputs;
      std::vector<int> positions;
      for (const auto& column : op.columns) {
        const int k = set->Find(column);
        ARROW_ASSIGN_OR_RAISE(auto cast, ToType(set->values[k], c.to, ctx));
        inputs.push_back(std::move(cast));
        positions.push_back(k);
      }
      ARROW_ASSIGN_OR_RAISE(auto stacked, Stack(inputs, pool));
      std::sort(positions.rbegin(), positions.rend());
      for (int k : positions) set->Remove(k);
      set->Insert(static_cast<int>(set->names.size()), op.output, std::move(stacked));
      return arrow::Status::OK();
    }
    case TransformKind::kRename:
      set->names[i] = op.output;
      return arrow::Status::OK();
    case TransformKind::kDrop:
      for (const auto& column : op.columns) set->Remove(set->Find(column));
      return arrow::Status::OK();
    case TransformKind::kPad: {
      ARROW_ASSIGN_OR_RAISE(auto padded, PadLists(*x, op.length, op.number, pool));
      x = std::move(padded.first);
      set->Insert(i + 1, op.columns[0] + "_length", std::move(padded.second));
      return arrow::Status::OK();
    }
    case TransformKind::kRagged:
      return arrow::Status::OK();
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TransformSpec::Apply(
    const std::shared_ptr<arrow::RecordBatch>& batch, arrow::MemoryPool* pool) const {
  if (ops_.empty()) return batch;
  arrow::compute::ExecContext ctx(pool);
  ColumnSet<std::shared_ptr<arrow::Array>> set;
  for (int i = 0; i < batch->num_columns(); ++i) {
    set.names.push_back(batch->schema()->field(i)->name());
    set.values.push_back(batch->column(i));
  }
  for (const auto& op : ops_) {
    auto status = ApplyOne(*op, &set, pool, &ctx);
    if (!status.ok()) {
      return arrow::Status(
          status.code(), op->label + " on column '" + op->op.columns[0] + "': " + status.message(),
          status.detail());
    }
  }
  return arrow::RecordBatch::Make(output_schema_, batch->num_rows(), std::move(set.values));
}

}  // namespace stoker
