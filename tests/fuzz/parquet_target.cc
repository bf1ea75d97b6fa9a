// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Parquet bytes, as a dataset's only file, through the loader: source resolution, the
// footer (manifest), the plan, the unit reader's fetch and decode, staging and assembly.
#include "fuzz_support.h"
#include "fuzz_targets.h"
#include "memory_filesystem.h"

namespace stoker::fuzz {

namespace {

// Footers may claim any number of rows; an epoch is read in full only when it is small.
constexpr int64_t kMaxBatches = 64;

void ReadAs(const std::string& source, OutputKind output, bool shuffle) {
  LoaderOptions options = SmallLoaderOptions(source);
  options.output = output;
  options.shuffle = shuffle;
  auto loader = Loader::Make(options);
  if (!loader.ok()) return;
  ReadEpoch(**loader, kMaxBatches);
}

}  // namespace

int ParquetInput(const uint8_t* data, size_t size) {
  auto source = PutMemoryFile("input.parquet", data, size);
  if (!source.ok()) Violation("the in-memory filesystem: " + source.status().ToString());
  // Arrow output takes every type (nulls, strings, nesting); tensors take the staged path.
  ReadAs(*source, OutputKind::kArrow, /*shuffle=*/true);
  ReadAs(*source, OutputKind::kTensor, /*shuffle=*/true);
  ReadAs(*source, OutputKind::kArrow, /*shuffle=*/false);
  return 0;
}

}  // namespace stoker::fuzz
