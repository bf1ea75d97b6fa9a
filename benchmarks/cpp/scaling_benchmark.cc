// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// How Stoker's epoch rate grows with its threads: rows/s, GB/s and GB/s per thread of whole
// epochs of a dataset at 1, 2, 4, ... threads up to --max-threads (always included),
// unshuffled and shuffled, and beside them (--arrow) Arrow's own multi-threaded read of the
// same files and columns (an arrow::dataset scan, Arrow's CPU pool at the same thread count):
// the decode rate without Stoker's plan, shuffle and batch assembly. Each figure is the best
// and the median of --epochs timed epochs after one warm-up epoch (the page cache, the
// allocator's pools). GB are the delivered batches' buffer bytes (for Arrow's sliced batches, the
// bytes each slice references: arrow::util::ReferencedBufferSize).
//
//   scaling_benchmark DATASET [--max-threads N] [--epochs N] [--batch-size ROWS]
//                     [--columns A,B,...] [--arrow] [--shuffled-only] [--json PATH|-]
//
// --shuffled-only measures the shuffled epochs alone (what a profile of the shuffle reads).
//
// --json writes one JSON object per measurement (JSON Lines; "-": stdout, after the table).
#include <arrow/api.h>
#include <arrow/compute/initialize.h>
#include <arrow/dataset/api.h>
#include <arrow/filesystem/localfs.h>
#include <arrow/util/byte_size.h>
#include <arrow/util/thread_pool.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stoker/api.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string dataset;
  int max_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int epochs = 3;  // timed, after one warm-up epoch
  int64_t batch_size = 4096;
  std::vector<std::string> columns;  // empty: every column
  bool arrow = false;
  bool shuffled_only = false;
  std::string json;  // empty: no JSON; "-": stdout
};

// What one epoch delivered, and how long it took.
struct Epoch {
  int64_t rows = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

// One line of the table: a reader at a thread count, over the timed epochs.
struct Measurement {
  std::string reader;  // "stoker", "stoker-shuffled" or "arrow"
  int threads = 0;
  int64_t rows = 0;  // per epoch
  int64_t bytes = 0;
  double best_seconds = 0;
  double median_seconds = 0;
};

// 1, 2, 4, ... below max, then max.
std::vector<int> ThreadCounts(int max) {
  std::vector<int> counts;
  for (int n = 1; n < max; n *= 2) counts.push_back(n);
  counts.push_back(max);
  return counts;
}

arrow::Result<Epoch> StokerEpoch(stoker::Loader& loader, int64_t epoch) {
  const auto start = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto stream, loader.StartEpoch(epoch));
  Epoch out;
  for (;;) {
    ARROW_ASSIGN_OR_RAISE(auto batch, stream->Next());
    if (batch == nullptr) break;
    out.rows += batch->num_rows();
    out.bytes += arrow::util::TotalBufferSize(*batch);
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

arrow::Result<Epoch> ArrowEpoch(arrow::dataset::Scanner& scanner) {
  const auto start = Clock::now();
  ARROW_ASSIGN_OR_RAISE(auto batches, scanner.ScanBatches());
  Epoch out;
  for (;;) {
    ARROW_ASSIGN_OR_RAISE(auto tagged, batches.Next());
    if (arrow::IsIterationEnd(tagged)) break;
    out.rows += tagged.record_batch->num_rows();
    // The scanner's batches are slices of larger decoded arrays: count what each references.
    ARROW_ASSIGN_OR_RAISE(const int64_t bytes,
                          arrow::util::ReferencedBufferSize(*tagged.record_batch));
    out.bytes += bytes;
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

// A scan of every Parquet file under the dataset directory, Arrow's threads on.
arrow::Result<std::shared_ptr<arrow::dataset::Scanner>> MakeScanner(const Options& options) {
  arrow::fs::FileSelector selector;
  selector.base_dir = std::filesystem::absolute(options.dataset).string();
  selector.recursive = true;
  ARROW_ASSIGN_OR_RAISE(auto factory, arrow::dataset::FileSystemDatasetFactory::Make(
                                          std::make_shared<arrow::fs::LocalFileSystem>(), selector,
                                          std::make_shared<arrow::dataset::ParquetFileFormat>(),
                                          arrow::dataset::FileSystemFactoryOptions{}));
  ARROW_ASSIGN_OR_RAISE(auto dataset, factory->Finish());
  ARROW_ASSIGN_OR_RAISE(auto builder, dataset->NewScan());
  ARROW_RETURN_NOT_OK(builder->UseThreads(true));
  ARROW_RETURN_NOT_OK(builder->BatchSize(options.batch_size));
  if (!options.columns.empty()) ARROW_RETURN_NOT_OK(builder->Project(options.columns));
  return builder->Finish();
}

// One warm-up epoch, then options.epochs timed ones of `run_epoch(epoch)`.
template <typename RunEpoch>
arrow::Result<Measurement> Measure(const Options& options, std::string reader, int threads,
                                   RunEpoch&& run_epoch) {
  ARROW_RETURN_NOT_OK(run_epoch(0).status());
  Measurement m{std::move(reader), threads};
  std::vector<double> seconds;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    ARROW_ASSIGN_OR_RAISE(const Epoch e, run_epoch(epoch));
    m.rows = e.rows;
    m.bytes = e.bytes;
    seconds.push_back(e.seconds);
  }
  std::sort(seconds.begin(), seconds.end());
  m.best_seconds = seconds.front();
  m.median_seconds = seconds[seconds.size() / 2];
  return m;
}

arrow::Result<std::vector<Measurement>> Run(const Options& options) {
  std::vector<Measurement> out;
  for (const int threads : ThreadCounts(options.max_threads)) {
    // Arrow's own pool at the same count: the scan decodes on it, and Stoker's threads are
    // its own but any Arrow work they hand off is capped alike.
    ARROW_RETURN_NOT_OK(arrow::SetCpuThreadPoolCapacity(threads));
    for (const bool shuffle : {false, true}) {
      if (options.shuffled_only && !shuffle) continue;
      stoker::LoaderOptions loader_options;
      loader_options.sources = {options.dataset};
      loader_options.columns = options.columns;
      loader_options.batch_size = options.batch_size;
      loader_options.shuffle = shuffle;
      loader_options.num_threads = threads;
      ARROW_ASSIGN_OR_RAISE(auto loader, stoker::Loader::Make(loader_options));
      ARROW_ASSIGN_OR_RAISE(auto m,
                            Measure(options, shuffle ? "stoker-shuffled" : "stoker", threads,
                                    [&](int64_t epoch) { return StokerEpoch(*loader, epoch); }));
      out.push_back(std::move(m));
    }
    if (options.arrow) {
      ARROW_ASSIGN_OR_RAISE(auto scanner, MakeScanner(options));
      ARROW_ASSIGN_OR_RAISE(auto m, Measure(options, "arrow", threads,
                                            [&](int64_t) { return ArrowEpoch(*scanner); }));
      out.push_back(std::move(m));
    }
  }
  return out;
}

double Gbps(const Measurement& m, double seconds) { return m.bytes / seconds / 1e9; }

void PrintTable(const std::vector<Measurement>& measurements, const Options& options) {
  std::printf("%s: %lld rows per epoch, best | median of %d epochs after a warm-up\n",
              options.dataset.c_str(),
              static_cast<long long>(measurements.empty() ? 0 : measurements.front().rows),
              options.epochs);
  std::printf("%-16s %7s %14s %14s %9s %9s %13s\n", "reader", "threads", "best rows/s",
              "median rows/s", "best GB/s", "med GB/s", "GB/s/thread");
  for (const auto& m : measurements) {
    std::printf("%-16s %7d %14.0f %14.0f %9.3f %9.3f %13.3f\n", m.reader.c_str(), m.threads,
                m.rows / m.best_seconds, m.rows / m.median_seconds, Gbps(m, m.best_seconds),
                Gbps(m, m.median_seconds), Gbps(m, m.median_seconds) / m.threads);
  }
}

std::string JsonLine(const Measurement& m, const Options& options) {
  std::ostringstream line;
  line << "{\"benchmark\":\"scaling\",\"dataset\":\"" << options.dataset << "\",\"reader\":\""
       << m.reader << "\",\"threads\":" << m.threads << ",\"batch_size\":" << options.batch_size
       << ",\"epochs\":" << options.epochs << ",\"rows\":" << m.rows << ",\"bytes\":" << m.bytes
       << ",\"best_seconds\":" << m.best_seconds << ",\"median_seconds\":" << m.median_seconds
       << ",\"best_rows_per_s\":" << m.rows / m.best_seconds
       << ",\"median_rows_per_s\":" << m.rows / m.median_seconds
       << ",\"median_gbps\":" << Gbps(m, m.median_seconds)
       << ",\"median_gbps_per_thread\":" << Gbps(m, m.median_seconds) / m.threads << "}";
  return line.str();
}

void Usage() {
  std::cerr << "usage: scaling_benchmark DATASET [--max-threads N] [--epochs N] "
               "[--batch-size ROWS] [--columns A,B,...] [--arrow] [--shuffled-only] "
               "[--json PATH|-]\n";
  std::exit(2);
}

Options Parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (arg == "--max-threads") {
      options.max_threads = std::atoi(value().c_str());
    } else if (arg == "--epochs") {
      options.epochs = std::atoi(value().c_str());
    } else if (arg == "--batch-size") {
      options.batch_size = std::atoll(value().c_str());
    } else if (arg == "--columns") {
      std::stringstream names(value());
      for (std::string name; std::getline(names, name, ',');) options.columns.push_back(name);
    } else if (arg == "--arrow") {
      options.arrow = true;
    } else if (arg == "--shuffled-only") {
      options.shuffled_only = true;
    } else if (arg == "--json") {
      options.json = value();
    } else if (!arg.empty() && arg[0] != '-' && options.dataset.empty()) {
      options.dataset = arg;
    } else {
      Usage();
    }
  }
  if (options.dataset.empty() || options.max_threads < 1 || options.epochs < 1 ||
      options.batch_size < 1) {
    Usage();
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  if (auto status = arrow::compute::Initialize(); !status.ok()) {
    std::cerr << "error: " << status.ToString() << "\n";
    return 1;
  }
  auto measurements = Run(options);
  if (!measurements.ok()) {
    std::cerr << "error: " << measurements.status().ToString() << "\n";
    return 1;
  }
  PrintTable(*measurements, options);
  if (options.json.empty()) return 0;
  std::ofstream file;
  if (options.json != "-") file.open(options.json, std::ios::app);
  std::ostream& json = options.json == "-" ? std::cout : file;
  for (const auto& m : *measurements) json << JsonLine(m, options) << "\n";
  return json ? 0 : 1;
}
