// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
//
// The C++ API in a few lines: read a Parquet dataset as shuffled batches for two epochs and
// print what arrived.
//
//   stoker_example DATASET [BATCH_SIZE]

#include <arrow/compute/initialize.h>

#include <cstdlib>
#include <iostream>

#include "stoker/api.h"

namespace {

arrow::Status Run(const std::string& source, int64_t batch_size) {
  stoker::LoaderOptions options;
  options.sources = {source};
  options.batch_size = batch_size;
  options.seed = 7;
  ARROW_ASSIGN_OR_RAISE(auto loader, stoker::Loader::Make(options));
  std::cout << "schema: " << loader->schema()->ToString(false) << "\n"
            << "rows: " << loader->num_rows() << ", batches per epoch: " << loader->num_batches()
            << "\n";
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    ARROW_ASSIGN_OR_RAISE(auto stream, loader->StartEpoch(epoch));
    int64_t rows = 0;
    int64_t batches = 0;
    for (;;) {
      ARROW_ASSIGN_OR_RAISE(auto batch, stream->Next());
      if (batch == nullptr) break;
      rows += batch->num_rows();
      ++batches;
    }
    std::cout << "epoch " << epoch << ": " << batches << " batches, " << rows << " rows\n";
  }
  const auto stats = loader->stats();
  std::cout << "read " << stats.bytes_read << " bytes in " << stats.units_read
            << " row groups; consumer waited " << stats.wait_seconds << " s\n";
  return arrow::Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: stoker_example DATASET [BATCH_SIZE]\n";
    return 2;
  }
  const int64_t batch_size = argc > 2 ? std::atoll(argv[2]) : 4096;
  auto status = arrow::compute::Initialize();
  if (status.ok()) status = Run(argv[1], batch_size);
  if (!status.ok()) {
    std::cerr << "error: " << status.ToString() << "\n";
    return 1;
  }
  return 0;
}
