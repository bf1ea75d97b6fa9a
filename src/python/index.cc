// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// `stoker index`: write a dataset's summary file `_metadata` (manifest/dataset_index.h).

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "binding.h"
#include "manifest/dataset_index.h"

namespace stoker::python {

void BindIndex(nb::module_& m) {
  m.def(
      "write_index",
      [](const std::string& source, const StorageOptions& storage, bool overwrite, bool checksums) {
        IndexReport report;
        {
          // Reads every footer (with checksums, every column chunk): seconds to minutes on
          // a remote store.
          nb::gil_scoped_release release;
          report = ValueOrThrow(WriteDatasetIndex(source, storage, overwrite, checksums));
        }
        nb::dict out = ToDict(report);
        out["checksums"] = checksums;
        return out;
      },
      nb::arg("source"), nb::arg("storage"), nb::arg("overwrite") = false,
      nb::arg("checksums") = false,
      "Writes <source>/_metadata (every data file's footer, and each file's size and mtime "
      "for the stale check; with checksums, each column chunk's); returns {'path', 'files', "
      "'row_groups', 'bytes', 'checksums', 'bytes_checksummed'}.");
}

}  // namespace stoker::python
