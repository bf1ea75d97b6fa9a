// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// stoker._core: the thin nanobind layer between the C++ engine and Python. Each concern has
// its file (binding.h lists them); this one makes the module and maps engine errors to the
// natural Python exceptions.

#include <nanobind/nanobind.h>

#include <exception>

#include "python/binding.h"
#include "stoker/error.h"

namespace stoker::python {

namespace {

// The built-in exception a Status becomes (docs/design.md, "Errors").
PyObject* ExceptionType(const arrow::Status& status) {
  if (IsNotFound(status)) return PyExc_FileNotFoundError;
  if (status.IsInvalid() || status.IsIndexError()) return PyExc_ValueError;
  if (status.IsKeyError()) return PyExc_KeyError;
  if (status.IsTypeError()) return PyExc_TypeError;
  if (status.IsIOError()) return PyExc_OSError;
  if (status.IsOutOfMemory()) return PyExc_MemoryError;
  if (status.IsNotImplemented()) return PyExc_NotImplementedError;
  return PyExc_RuntimeError;
}

void TranslateStatusErrors(const std::exception_ptr& error, void*) {
  try {
    std::rethrow_exception(error);
  } catch (const StatusError& e) {
    PyErr_SetString(ExceptionType(e.status()), e.status().message().c_str());
  }
}

}  // namespace

}  // namespace stoker::python

NB_MODULE(_core, m) {
  namespace py = stoker::python;
  m.doc() = "Stoker's C++ engine (use the stoker package, not this module)";
  nanobind::register_exception_translator(&py::TranslateStatusErrors);
  py::BindTensors(m);
  py::BindOptions(m);
  py::BindLoader(m);
  py::BindServe(m);
  py::BindReceive(m);
  py::BindTransformOps(m);
  py::BindFaultProbe(m);
  py::BindTrace(m);
  py::BindIndex(m);
  py::BindMixture(m);
  py::BindPlan(m);
  py::BindTransformSpec(m);
  py::BindKjt(m);
}
