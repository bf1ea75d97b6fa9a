// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The page-fault probe `stoker doctor` runs (src/telemetry/fault_probe.h): in C++ so that its
// timings never include a wait for the GIL.

#include "telemetry/fault_probe.h"

#include <chrono>
#include <memory>
#include <new>

#include "python/binding.h"

namespace stoker::python {

namespace {

struct ProbeHandle {
  std::unique_ptr<FaultProbe> probe;
};

}  // namespace

void BindFaultProbe(nb::module_& m) {
  // The probe owns a thread and cannot move: Python holds it through a unique_ptr.
  nb::class_<ProbeHandle>(m, "FaultProbe")
      .def(
          "__init__",
          [](ProbeHandle* self, int pages_per_round, int64_t interval_us) {
            FaultProbeOptions options;
            options.pages_per_round = pages_per_round;
            options.interval = std::chrono::microseconds(interval_us);
            new (self) ProbeHandle{ValueOrThrow(FaultProbe::Start(options))};
          },
          nb::kw_only(), nb::arg("pages_per_round") = FaultProbeOptions{}.pages_per_round,
          nb::arg("interval_us") = FaultProbeOptions{}.interval.count(),
          "Starts a thread that maps fresh pages and times each first touch and each "
          "mmap/munmap.")
      .def(
          "stop",
          [](ProbeHandle& handle) {
            FaultProbeSummary summary;
            {
              nb::gil_scoped_release release;
              summary = handle.probe->Stop();
            }
            return ToDict(summary);
          },
          "Stops the probe (once) and returns its timings: seconds, and for touches and "
          "maps each count, p50_us, p99_us, max_us, over_1ms and over_1ms_blocked.");
}

}  // namespace stoker::python
