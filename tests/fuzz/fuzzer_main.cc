// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The libFuzzer entry points of one fuzz target, named at compile time by STOKER_FUZZ_TARGET
// (tests/fuzz/CMakeLists.txt builds one binary per target from this file).
#include <arrow/compute/initialize.h>

#include <cstdio>
#include <cstdlib>

#include "fuzz_targets.h"
#include "memory_filesystem.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Standalone programs initialize Arrow's compute functions themselves (docs/design.md,
  // "Building on the pyarrow wheel").
  const arrow::Status status =
      arrow::compute::Initialize() & stoker::fuzz::RegisterMemoryFileSystem();
  if (!status.ok()) {
    std::fprintf(stderr, "fuzz setup failed: %s\n", status.ToString().c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return STOKER_FUZZ_TARGET(data, size);
}
