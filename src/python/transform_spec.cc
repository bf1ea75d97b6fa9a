// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The transform spec as Python users write it (a list of dicts, docs/transforms.md) into the
// engine's TransformOps: the one parser of the spec's shape. The keys each op takes come from
// its descriptor (src/transform/ops/); what the values mean against the dataset's columns and
// types is the engine's check when the loader compiles the spec. Errors name the op's
// position and name, and the key.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "binding.h"
#include "stoker/transform_options.h"
#include "transform/ops/op.h"
#include "transform/ops/registry.h"

namespace stoker::python {
namespace {

std::string Repr(nb::handle value) { return nb::cast<std::string>(nb::repr(value)); }

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// One op's dict, read key by key; `label` is "transform i (name)".
class SpecReader {
 public:
  SpecReader(nb::dict spec, std::string label) : spec_(std::move(spec)), label_(std::move(label)) {}

  bool Has(const char* key) const { return spec_.contains(key); }

  std::string Name(const char* key, const std::string& what) const {
    nb::handle value = spec_[key];
    if (!nb::isinstance<nb::str>(value)) {
      throw nb::type_error(
          (label_ + ": " + key + " must be " + what + ", got " + Repr(value)).c_str());
    }
    return nb::cast<std::string>(value);
  }

  std::vector<std::string> Names(const char* key) const {
    nb::handle value = spec_[key];
    std::vector<std::string> names;
    bool ok = !nb::isinstance<nb::str>(value);
    if (ok) {
      nb::object items = nb::steal(PyObject_GetIter(value.ptr()));
      if (!items.is_valid()) {
        PyErr_Clear();  // not iterable: the TypeError below says what was expected
        ok = false;
      }
      while (ok) {
        nb::object item = nb::steal(PyIter_Next(items.ptr()));
        if (!item.is_valid()) {
          if (PyErr_Occurred() != nullptr) throw nb::python_error();
          break;
        }
        ok = nb::isinstance<nb::str>(item);
        if (ok) names.push_back(nb::cast<std::string>(item));
      }
    }
    if (!ok) {
      throw nb::type_error(
          (label_ + ": " + key + " must be a list of names, got " + Repr(value)).c_str());
    }
    return names;
  }

  double Number(const char* key) const { return Number(key, spec_[key]); }

  double Number(const char* key, nb::handle value) const {
    if (nb::isinstance<nb::bool_>(value) ||
        !(nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value))) {
      throw nb::type_error((label_ + ": " + key + " must be a number, got " + Repr(value)).c_str());
    }
    return nb::cast<double>(nb::float_(value));
  }

  std::vector<double> Numbers(const char* key) const {
    std::vector<double> out;
    for (nb::handle item : nb::iter(spec_[key])) out.push_back(Number(key, item));
    return out;
  }

  int64_t Integer(const char* key) const {
    nb::handle value = spec_[key];
    int64_t out = 0;
    if (nb::isinstance<nb::bool_>(value) || !nb::isinstance<nb::int_>(value) ||
        !nb::try_cast(value, out)) {
      throw nb::type_error((label_ + ": " + key + " must be an int, got " + Repr(value)).c_str());
    }
    return out;
  }

 private:
  nb::dict spec_;
  std::string label_;
};

// The keys whose values are numbers, and integers, with the TransformOp field each sets ("min"
// and "max" are clip's bounds, "low" and "high" the random ops' range: the same fields).
template <typename T>
struct KeyField {
  const char* key;
  T TransformOp::*field;
};
constexpr KeyField<double> kNumberKeys[] = {
    {"min", &TransformOp::low},   {"max", &TransformOp::high},  {"low", &TransformOp::low},
    {"high", &TransformOp::high}, {"mean", &TransformOp::mean}, {"std", &TransformOp::std},
    {"p", &TransformOp::p}};
constexpr KeyField<int64_t> kIntegerKeys[] = {{"num_buckets", &TransformOp::num_buckets},
                                              {"default", &TransformOp::default_id},
                                              {"length", &TransformOp::length},
                                              {"size", &TransformOp::size}};

// The op `name_value` names; a ValueError listing the ops otherwise.
const OpDescriptor& FindOp(const std::string& position, nb::handle name_value) {
  const OpDescriptor* descriptor = nullptr;
  std::string names;
  for (const OpDescriptor* op : AllOps()) {
    if (nb::isinstance<nb::str>(name_value) && nb::cast<std::string>(name_value) == op->name) {
      descriptor = op;
    }
    names += (names.empty() ? "" : ", ") + std::string(op->name);
  }
  if (descriptor == nullptr) {
    throw nb::value_error(
        (position + ": unknown op " + Repr(name_value) + "; the ops are " + names).c_str());
  }
  return *descriptor;
}

// Rewrites a single item given for a list key ("column" for drop's "columns") as a list of
// one, then checks `spec` names only keys the op takes and every key it requires.
void CheckKeys(const OpDescriptor& descriptor, const std::string& label, nb::dict* spec) {
  std::set<std::string> allowed;
  std::vector<std::string> required;
  for (const OpParam& param : descriptor.params) {
    allowed.insert(param.key);
    if (param.required) required.push_back(param.key);
    if (param.singular != nullptr && spec->contains(param.singular) && !spec->contains(param.key)) {
      nb::list one;
      one.append((*spec)[param.singular]);
      (*spec)[param.key] = one;
      PyDict_DelItemString(spec->ptr(), param.singular);
    }
  }
  std::vector<std::string> unknown;
  for (auto [key, value] : *spec) {
    const std::string text = nb::isinstance<nb::str>(key) ? nb::cast<std::string>(key) : Repr(key);
    if (text != "op" && !allowed.contains(text)) unknown.push_back(text);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    throw nb::value_error((label + ": unknown key(s) " + Join(unknown) + "; it takes " +
                           Join({allowed.begin(), allowed.end()}))
                              .c_str());
  }
  std::vector<std::string> missing;
  for (const std::string& key : required) {
    if (!spec->contains(key.c_str())) missing.push_back(key);
  }
  if (!missing.empty()) throw nb::value_error((label + ": missing " + Join(missing)).c_str());
}

// The TransformOp of a checked `spec`: keys left out keep TransformOp's defaults.
TransformOp ReadOp(const OpDescriptor& descriptor, nb::dict spec, const std::string& label,
                   const nb::module_& os) {
  const SpecReader read(spec, label);
  TransformOp op;
  op.kind = descriptor.kind;
  if (read.Has("column")) op.columns = {read.Name("column", "a column name")};
  if (read.Has("columns")) op.columns = read.Names("columns");
  if (read.Has("key")) op.key = read.Name("key", "a column name");
  for (const char* key : {"output", "to"}) {
    if (read.Has(key)) op.output = read.Name(key, "a column name");
  }
  if (read.Has("dtype")) op.dtype = nb::cast<std::string>(nb::str(spec["dtype"]));
  if (read.Has("keep")) op.keep = nb::cast<std::string>(nb::str(spec["keep"]));
  if (read.Has("value")) {
    op.is_text = nb::isinstance<nb::str>(spec["value"]);
    if (op.is_text) {
      op.text = nb::cast<std::string>(spec["value"]);
    } else {
      op.number = read.Number("value");
    }
  }
  for (const auto& [key, field] : kNumberKeys) {
    if (read.Has(key)) op.*field = read.Number(key);
  }
  if (read.Has("boundaries")) op.boundaries = read.Numbers("boundaries");
  for (const auto& [key, field] : kIntegerKeys) {
    if (read.Has(key)) op.*field = read.Integer(key);
  }
  if (read.Has("path")) op.path = nb::cast<std::string>(os.attr("fsdecode")(spec["path"]));
  return op;
}

TransformOp OpFromSpec(size_t index, nb::handle item, const nb::module_& os) {
  const std::string position = "transform " + std::to_string(index);
  if (!nb::isinstance<nb::dict>(item) || !nb::borrow<nb::dict>(item).contains("op")) {
    throw nb::type_error(
        (position + ": expected a dict with an 'op' key, got " + Repr(item)).c_str());
  }
  // A copy: singular keys are rewritten (CheckKeys).
  nb::dict spec = nb::steal<nb::dict>(PyDict_Copy(item.ptr()));
  const OpDescriptor& descriptor = FindOp(position, spec["op"]);
  const std::string label = position + " (" + descriptor.name + ")";
  CheckKeys(descriptor, label, &spec);
  return ReadOp(descriptor, spec, label, os);
}

}  // namespace

std::vector<TransformOp> TransformsFromSpec(nb::handle transforms) {
  std::vector<TransformOp> ops;
  if (transforms.is_none()) return ops;
  if (nb::isinstance<nb::dict>(transforms) || nb::isinstance<nb::str>(transforms) ||
      nb::isinstance<nb::bytes>(transforms) || PySequence_Check(transforms.ptr()) != 1) {
    throw nb::type_error(
        "transforms must be a list of dicts such as {'op': 'log1p', 'column': 'x'}");
  }
  const nb::module_ os = nb::module_::import_("os");
  size_t index = 0;
  for (nb::handle item : nb::iter(transforms)) ops.push_back(OpFromSpec(index++, item, os));
  return ops;
}

void BindTransformSpec(nb::module_& m) {
  m.def("transforms_from_spec", &TransformsFromSpec, nb::arg("transforms").none(),
        "The engine's ops for a transform spec (a list of dicts, docs/transforms.md), its shape "
        "checked against each op's keys; None gives none.");
}

}  // namespace stoker::python
