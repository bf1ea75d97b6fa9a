// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/loader/ (loader.cc, loader_streams.cc).
#pragma once

#include <arrow/result.h>
#include <arrow/type.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/batch_stream.h"
#include "stoker/cpu_budget.h"
#include "stoker/options.h"
#include "stoker/resume.h"
#include "stoker/stats.h"

namespace stoker {

/// Turns a Parquet dataset into exact, deterministic, shuffled batches, one epoch at a time.
///
///   ARROW_ASSIGN_OR_RAISE(auto loader, stoker::Loader::Make(options));
///   ARROW_ASSIGN_OR_RAISE(auto stream, loader->StartEpoch(epoch));
///   while (true) {
///     ARROW_ASSIGN_OR_RAISE(auto batch, stream->Next());
///     if (batch == nullptr) break;
///     ...
///   }
///
/// An interface: Make returns the engine's implementation (src/loader/loader_internal.h, with
/// the hooks mixtures, the server and the bindings use), which an embedder never needs to see.
class Loader {
 public:
  /// Validates the options, resolves the source and reads every footer. All errors about the
  /// dataset and the options surface here, not mid-epoch.
  static arrow::Result<std::shared_ptr<Loader>> Make(LoaderOptions options);
  virtual ~Loader() = default;

  /// The options as resolved by Make: num_threads 0 becomes cpu_budget().threads.
  virtual const LoaderOptions& options() const = 0;
  /// The CPU budget read at Make (affinity, cgroup quota, ranks per node).
  virtual const CpuBudget& cpu_budget() const = 0;
  /// Columns of every batch (after the transforms, then the plan columns: kValidColumn,
  /// kFileIndexColumn, kRowInFileColumn when asked for).
  virtual const std::shared_ptr<arrow::Schema>& schema() const = 0;
  /// Digest of the filter's serialized expression ("" without a filter).
  virtual std::string filter_digest() const = 0;
  /// Output columns delivered to tensors as values + offsets.
  virtual const std::vector<std::string>& ragged_columns() const = 0;
  /// Rows of an epoch (all ranks): those matching the filter.
  virtual int64_t num_rows() const = 0;
  /// Batches per epoch for this rank (the same for every epoch; the same for every rank
  /// except with LoaderMode::kEval without pad_to_equal_steps, where they may differ by one).
  virtual int64_t num_batches() const = 0;
  /// Starts reading `epoch` (the rest of it after `resumed`); the stream yields its batches in
  /// plan order.
  virtual arrow::Result<std::unique_ptr<BatchStream>> StartEpoch(
      int64_t epoch, const std::vector<ResumeRound>& resumed = {}) const = 0;
  /// Counters summed over every epoch so far.
  virtual StatsSnapshot stats() const = 0;
  /// Writes the kept spans of work as Chrome trace JSON (ui.perfetto.dev opens it); an
  /// error when options().trace_events is 0.
  virtual arrow::Status WriteTrace(const std::string& path) const = 0;

 protected:
  Loader() = default;
};

}  // namespace stoker
