// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The timeline for loaders whose work runs in Python (RemoteLoader): the same TraceRing and
// Chrome trace JSON as the engine's (src/telemetry/trace.h), fed spans timed on its clock.

#include "telemetry/trace.h"

#include <nanobind/stl/string.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "python/binding.h"

namespace stoker::python {

namespace {

TraceRing::Clock::time_point At(int64_t ns) {
  return TraceRing::Clock::time_point(
      std::chrono::duration_cast<TraceRing::Clock::duration>(std::chrono::nanoseconds(ns)));
}

}  // namespace

void BindTrace(nb::module_& m) {
  nb::class_<TraceRing>(m, "TraceRing")
      .def(nb::init<size_t>(), nb::arg("capacity"), "Keeps the last `capacity` spans.")
      .def_static(
          "now",
          [] {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(
                       TraceRing::Clock::now().time_since_epoch())
                .count();
          },
          "The ring's clock in ns: time spans with it.")
      .def(
          "record",
          [](TraceRing& ring, const std::string& stage, int64_t start_ns, int64_t end_ns,
             int64_t batch, int64_t server) {
            TraceStage parsed;
            if (!ParseTraceStage(stage, &parsed)) {
              ThrowIfError(arrow::Status::Invalid("unknown trace stage '", stage, "'"));
            }
            ring.Record(parsed, At(start_ns), At(end_ns), batch, server);
          },
          nb::arg("stage"), nb::arg("start_ns"), nb::arg("end_ns"), nb::arg("batch"),
          nb::arg("server") = -1,
          "Records a batch's span (\"receive\" with the server's index, \"convert\", "
          "\"wait\") on the calling thread's row.")
      .def(
          "write",
          [](const TraceRing& ring, const std::string& path) {
            ThrowIfError(ring.WriteJson(path));
          },
          nb::arg("path"), ReleaseGil(), "Writes the spans kept as Chrome trace JSON.")
      .def_prop_ro("recorded", &TraceRing::recorded);
}

}  // namespace stoker::python
