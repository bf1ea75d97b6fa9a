// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The transform ops the engine knows and the keys of their spec dicts, for Python-side tools
// (the transform_spec fuzz target builds its specs from them).

#include <nanobind/nanobind.h>

#include "binding.h"
#include "transform/ops/registry.h"

namespace stoker::python {

void BindTransformOps(nb::module_& m) {
  m.def(
      "transform_ops",
      [] {
        nb::list ops;
        for (const stoker::OpDescriptor* op : stoker::AllOps()) {
          nb::list required;
          nb::list optional;
          nb::dict singular;
          for (const stoker::OpParam& param : op->params) {
            (param.required ? required : optional).append(param.key);
            if (param.singular != nullptr) singular[param.singular] = param.key;
          }
          nb::dict d;
          d["name"] = op->name;
          d["required"] = nb::tuple(required);
          d["optional"] = nb::tuple(optional);
          d["singular"] = singular;
          ops.append(d);
        }
        return ops;
      },
      "Every transform op in order: {'name', 'required' and 'optional' keys of its spec dict, "
      "'singular': {key accepted instead of a list key: that list key}}.");
}

}  // namespace stoker::python
