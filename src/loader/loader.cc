// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The composition root: Loader::Make turns options into a CPU budget, the controller's
// bounds and a UnitSource (manifest, codecs, transforms, filter counts, cache), and the
// LoaderImpl it returns. Its plans and streams are loader_streams.cc.
#include <arrow/compute/initialize.h>
#include <arrow/util/parallel.h>
#include <arrow/util/thread_pool.h>

#include <algorithm>
#include <mutex>

#include "assemble/column_types.h"
#include "assemble/pinned_pool.h"
#include "assemble/recycling_pool.h"
#include "exec/autotune.h"
#include "exec/unit_reader.h"
#include "loader/loader_internal.h"
#include "stoker/error.h"
#include "util/cpu_affinity.h"
#include "util/digest.h"

namespace stoker {

namespace {

// Arrow's compute kernels (used to gather non-fixed-width columns) must be registered once
// per process; pyarrow does it on import, standalone programs rely on this.
arrow::Status EnsureComputeInitialized() {
  static std::once_flag once;
  static arrow::Status status;
  std::call_once(once, [] { status = arrow::compute::Initialize(); });
  return status;
}

// Whether a source is a URI of a store other than the local filesystem (s3://, gs://, ...).
bool AnyRemote(const std::vector<std::string>& sources) {
  return std::any_of(sources.begin(), sources.end(), [](const std::string& source) {
    const size_t scheme = source.find("://");
    return scheme != std::string::npos && source.compare(0, scheme, "file") != 0;
  });
}

// Checks that the output columns suit numpy/torch: types, and nulls that statistics prove.
arrow::Status CheckTensorOutput(const UnitSource& source) {
  const auto& ragged = source.ragged;
  const std::string where = "'" + source.manifest->files()[0].source.display + "'";
  for (const auto& field : source.output_schema->fields()) {
    if (std::find(ragged.begin(), ragged.end(), field->name()) != ragged.end()) continue;
    ARROW_RETURN_NOT_OK(WithContext(CheckTensorType(*field), where));
  }
  std::vector<std::string> as_read;
  for (const auto& name : source.transforms->UntouchedColumns()) {
    // A ragged column's statistics count its empty lists as nulls: its values are checked
    // unit by unit instead (exec/unit_reader.cc).
    if (std::find(ragged.begin(), ragged.end(), name) != ragged.end()) continue;
    if (source.output_schema->GetFieldIndex(name) >= 0) as_read.push_back(name);
  }
  return CheckNoNullsByStatistics(*source.manifest, as_read);
}

// Per output column, for Arrow output: read as it is (no transform or codec changed it), of
// a fixed-width or bool type, and free of nulls by the Parquet statistics of every row group.
std::vector<bool> ProvenNonNull(const UnitSource& source) {
  const auto& output = *source.output_schema;
  const auto& read = *source.manifest->schema();
  std::vector<std::string> candidates;
  for (const auto& name : source.transforms->UntouchedColumns()) {
    const auto field = output.GetFieldByName(name);
    const auto as_read = read.GetFieldByName(name);
    if (field == nullptr || as_read == nullptr || !field->type()->Equals(as_read->type())) continue;
    const auto id = field->type()->id();
    if (id == arrow::Type::BOOL || arrow::is_primitive(id) || arrow::is_decimal(id) ||
        id == arrow::Type::FIXED_SIZE_BINARY) {
      candidates.push_back(name);
    }
  }
  const auto proven = ColumnsWithoutNullsByStatistics(*source.manifest, candidates);
  std::vector<bool> non_null;
  for (const auto& field : output.fields()) {
    non_null.push_back(std::find(proven.begin(), proven.end(), field->name()) != proven.end());
  }
  return non_null;
}

// Skips the row groups whose statistics rule the filter out, then counts the matching rows
// of the others (reading only the filter's columns) so the plan knows every unit's size.
arrow::Result<std::vector<Unit>> CountMatchingRows(const UnitSource& source, Stats* stats) {
  const Manifest& manifest = *source.manifest;
  const auto& schema = manifest.schema();
  ARROW_ASSIGN_OR_RAISE(auto names, RowFilter::ColumnsOf(*source.filter_expression));
  std::vector<int> columns;
  for (const auto& name : names) columns.push_back(schema->GetFieldIndex(name));

  std::vector<Unit> candidates;
  int64_t pruned = 0;
  for (const auto& unit : manifest.units()) {
    const auto& file = manifest.files()[unit.file];
    std::vector<int> leaves;
    for (const auto& field_leaves : file.column_leaves) {
      leaves.push_back(field_leaves.size() == 1 ? field_leaves[0] : -1);
    }
    ARROW_ASSIGN_OR_RAISE(auto metadata, manifest.FileMetadata(unit.file));
    if (source.filter->MayMatch(*metadata->RowGroup(unit.row_group), leaves)) {
      candidates.push_back(unit);
    } else {
      ++pruned;
    }
  }
  stats->SetPruned(pruned);
  std::vector<arrow::Result<int64_t>> counts(candidates.size());
  ARROW_RETURN_NOT_OK(arrow::internal::ParallelFor(static_cast<int>(candidates.size()), [&](int i) {
    counts[i] = [&]() -> arrow::Result<int64_t> {
      ARROW_ASSIGN_OR_RAISE(auto batch, ReadRowGroup(source, candidates[i], columns, stats));
      return source.filter->Count(batch, source.pool);
    }();
    return arrow::Status::OK();
  }));
  std::vector<Unit> units;
  for (size_t i = 0; i < candidates.size(); ++i) {
    ARROW_ASSIGN_OR_RAISE(int64_t matching, counts[i]);
    if (matching == 0) continue;
    Unit unit = candidates[i];
    unit.num_rows = matching;
    units.push_back(unit);
  }
  return units;
}

// The columns to read: those asked for plus, when that is not every column, the ones only the
// filter needs (noted in source->filter_only_columns, dropped after filtering).
arrow::Result<std::vector<std::string>> ColumnsToRead(const LoaderOptions& options,
                                                      UnitSource* source) {
  std::vector<std::string> read = options.columns;
  if (!options.filter.has_value()) return read;
  ARROW_ASSIGN_OR_RAISE(auto filter_columns, RowFilter::ColumnsOf(*options.filter));
  for (const auto& name : filter_columns) {
    if (!read.empty() && std::find(read.begin(), read.end(), name) == read.end()) {
      read.push_back(name);
      source->filter_only_columns.push_back(name);
    }
  }
  return read;
}

// Validates the codecs against the columns read (less the filter's own), then the transforms
// against the columns the codecs decode, and records the output schema they make.
arrow::Status SetUpTransforms(const LoaderOptions& options, UnitSource* source) {
  arrow::FieldVector inputs;
  for (const auto& field : source->manifest->schema()->fields()) {
    const auto& skip = source->filter_only_columns;
    if (std::find(skip.begin(), skip.end(), field->name()) == skip.end()) inputs.push_back(field);
  }
  ARROW_ASSIGN_OR_RAISE(source->decoder,
                        ColumnDecoder::Make(options.codecs, *arrow::schema(inputs)));
  ARROW_ASSIGN_OR_RAISE(source->transforms,
                        TransformSpec::Make(options.transforms, source->decoder->output_schema()));
  source->output_schema = source->transforms->output_schema();
  source->ragged = source->transforms->ragged_columns();
  if (options.output == OutputKind::kJagged) {
    for (const auto& field : source->output_schema->fields()) {
      const auto& type = *field->type();
      const bool list = type.id() == arrow::Type::LIST || type.id() == arrow::Type::LARGE_LIST;
      if (!list || !GetFixedWidthLayout(*type.field(0)->type()).ok()) continue;
      auto& ragged = source->ragged;
      if (std::find(ragged.begin(), ragged.end(), field->name()) == ragged.end()) {
        ragged.push_back(field->name());
      }
    }
  }
  return arrow::Status::OK();
}

// The units the plan schedules: every non-empty row group, or with a filter those that may
// match, each counted by its matching rows.
arrow::Status SetUpUnits(const LoaderOptions& options, Stats* stats, UnitSource* source) {
  if (!options.filter.has_value()) {
    source->units = source->manifest->units();
    return arrow::Status::OK();
  }
  source->filter_expression = options.filter;
  ARROW_ASSIGN_OR_RAISE(source->filter,
                        RowFilter::Make(*options.filter, source->manifest->schema()));
  ARROW_ASSIGN_OR_RAISE(source->units, CatchAll([&] { return CountMatchingRows(*source, stats); }));
  return arrow::Status::OK();
}

// Opens the cache and digests what its entries depend on besides file and row group.
void SetUpCache(const LoaderOptions& options, const std::shared_ptr<Stats>& stats,
                UnitSource* source) {
  source->cache =
      DiskCache::Open(options.cache_dir, options.cache_limit_bytes, options.cache_policy, stats);
  Digest config;
  config.Add(static_cast<uint64_t>(DiskCache::kFormatVersion));
  for (const auto& field : source->manifest->schema()->fields()) {
    config.Add(field->name());
    config.Add(field->type()->ToString());
  }
  config.Add(source->filter == nullptr ? std::string() : source->filter->digest());
  config.Add(source->transforms->digest());
  // Only with codecs: a loader without them keeps the cache keys it had before.
  if (!source->decoder->empty()) config.Add(source->decoder->digest());
  source->cache_config_digest = config.Hex();
}

arrow::Result<std::shared_ptr<UnitSource>> MakeUnitSource(const LoaderOptions& options,
                                                          const std::shared_ptr<Stats>& stats) {
  auto source = std::make_shared<UnitSource>();
  source->output = options.output;
  source->pool = options.ResolvedMemoryPool();
  // A pool the user chose gets the batches, or pinned memory for a GPU; otherwise freed batch
  // buffers are recycled, so batch after batch the same pages are reused, not faulted in.
  if (options.memory_pool != nullptr) {
    source->output_pool = options.memory_pool;
  } else if (options.pinned_output) {
    ARROW_ASSIGN_OR_RAISE(source->output_pool, PinnedMemoryPool::Default());
  } else {
    source->output_pool = RecyclingPool::Default(source->pool);
  }
  ARROW_ASSIGN_OR_RAISE(auto io_executor,
                        arrow::internal::ThreadPool::Make(options.storage.ResolvedIoThreads()));
  // On engine_cpus this runs on a pinned thread (Loader::Make): the executor's threads are
  // started here so that they take its mask, not that of whichever thread first reads.
  if (!options.engine_cpus.empty()) {
    StartAllThreads(io_executor.get(), options.storage.ResolvedIoThreads());
  }
  source->io_executor = std::move(io_executor);
  ARROW_ASSIGN_OR_RAISE(const auto read, ColumnsToRead(options, source.get()));
  ARROW_ASSIGN_OR_RAISE(source->manifest, CatchAll([&] {
                          return Manifest::Make(options.sources, read, options.storage,
                                                stats->retry_counter(), options.index, stats.get(),
                                                options.partitioning, options.filter,
                                                options.on_error == OnError::kSkip);
                        }));
  ARROW_RETURN_NOT_OK(SetUpTransforms(options, source.get()));
  source->plan_columns.valid_mask = options.pad_to_equal_steps;
  source->plan_columns.row_origin = options.with_row_origin;
  ARROW_ASSIGN_OR_RAISE(source->batch_schema, source->plan_columns.Extend(*source->output_schema));
  if (options.output != OutputKind::kArrow) {
    ARROW_RETURN_NOT_OK(CheckTensorOutput(*source));
    source->non_null.assign(source->output_schema->num_fields(), true);
  } else {
    source->non_null = ProvenNonNull(*source);
  }
  ARROW_RETURN_NOT_OK(SetUpUnits(options, stats.get(), source.get()));
  if (options.on_error == OnError::kSkip) {
    const auto& unreadable = source->manifest->unreadable_files();
    source->error_budget = std::make_shared<ErrorBudget>(
        static_cast<int64_t>(source->units.size() + unreadable.size()), options.max_bad_units,
        options.max_bad_fraction);
    for (const UnreadableFile& file : unreadable) {
      ARROW_RETURN_NOT_OK(source->error_budget->SkipFile(file));
    }
  }
  if (!options.cache_dir.empty()) SetUpCache(options, stats, source.get());
  return source;
}

// Arrow's global CPU pool (pyarrow.compute, dataset scans in the same process) starts with a
// thread per core in every rank; it is cut to this rank's share so eight ranks on a node do
// not each own a pool of all its cores. Only cut, never grown: a smaller size the user chose
// (pyarrow.set_cpu_count, OMP_NUM_THREADS) stands. Arrow's I/O pool is left as it is: its
// threads wait on storage rather than compete for CPUs, and the loader's own range reads
// run on an executor of StorageOptions::io_threads.
void ShrinkArrowCpuPool(const CpuBudget& budget) {
  if (arrow::GetCpuThreadPoolCapacity() > budget.threads) {
    ARROW_UNUSED(arrow::SetCpuThreadPoolCapacity(budget.threads));
  }
}

}  // namespace

LoaderImpl::LoaderImpl(LoaderOptions options, std::shared_ptr<const UnitSource> source,
                       std::shared_ptr<Stats> stats, CpuBudget cpu_budget,
                       std::shared_ptr<TuneState> tune)
    : options_(std::move(options)),
      source_(std::move(source)),
      stats_(std::move(stats)),
      cpu_budget_(cpu_budget),
      tune_(std::move(tune)) {
  for (const auto& unit : source_->units) {
    unit_rows_.push_back(unit.num_rows);
    num_rows_ += unit.num_rows;
  }
}

arrow::Result<std::shared_ptr<LoaderImpl>> LoaderImpl::WithShuffleWindow(int64_t rows) const {
  LoaderOptions options = options_;
  options.shuffle_window = rows;
  ARROW_RETURN_NOT_OK(options.Validate());
  return std::make_shared<LoaderImpl>(std::move(options), source_, stats_, cpu_budget_);
}

arrow::Result<std::shared_ptr<Loader>> Loader::Make(LoaderOptions options) {
  ARROW_RETURN_NOT_OK(options.Validate());
  ARROW_RETURN_NOT_OK(EnsureComputeInitialized());
  auto stats = std::make_shared<Stats>();
  if (options.trace_events > 0) stats->EnableTrace(static_cast<size_t>(options.trace_events));
  ARROW_RETURN_NOT_OK(CheckEngineCpus(options.engine_cpus));
  const CpuBudget budget = ReadCpuBudget(options.engine_cpus);
  if (options.storage.io_threads == 0) {
    options.storage.io_threads = AnyRemote(options.sources)
                                     ? StorageOptions::kDefaultRemoteIoThreads
                                     : StorageOptions::kDefaultIoThreads;
  }
  // The knobs left unset are the controller's, up to today's defaults; the rest are fixed.
  TuneBounds bounds;
  bounds.tune_threads = options.num_threads == 0;
  bounds.tune_prefetch = options.prefetch == 0;
  if (options.num_threads == 0) options.num_threads = budget.threads;
  bounds.max_threads = options.num_threads;
  bounds.max_prefetch = options.ResolvedPrefetch();
  // Row groups read ahead beyond the workers: up to the reads the I/O executor runs at once.
  bounds.max_read_ahead = options.storage.ResolvedIoThreads();
  std::shared_ptr<TuneState> tune;
  if (options.autotune.enabled && (bounds.tune_threads || bounds.tune_prefetch)) {
    // Several ranks on the node: this one starts at its equal share and may grow into the
    // CPUs the others leave unused (a pool of the node's CPUs, most of them parked).
    std::shared_ptr<NodeShare> node;
    if (bounds.tune_threads && RandomMoves(options.autotune) == 0) {
      if (auto key = NodeShareKeyFromEnv(budget)) {
        node = NodeShare::Open(*key, budget.ranks_per_node, budget.cpus);
      }
    }
    bounds.tune_read_ahead = true;
    const TuneSetting start{bounds.max_threads, bounds.max_prefetch, 0};
    if (node != nullptr) bounds.max_threads = budget.cpus;
    tune = std::make_shared<TuneState>(options.autotune, bounds, start, std::move(node),
                                       budget.threads);
  }
  ShrinkArrowCpuPool(budget);
  // The threads the source starts (its I/O executor's, the footer readers') on engine_cpus.
  ARROW_ASSIGN_OR_RAISE(auto source, OnEngineCpus(options.engine_cpus,
                                                  [&] { return MakeUnitSource(options, stats); }));
  return std::make_shared<LoaderImpl>(std::move(options), std::move(source), std::move(stats),
                                      budget, std::move(tune));
}

const Manifest& LoaderImpl::manifest() const { return *source_->manifest; }

arrow::Status LoaderImpl::WriteTrace(const std::string& path) const {
  if (stats_->trace() == nullptr) {
    return arrow::Status::Invalid("this loader keeps no trace: set trace_events (or trace=)");
  }
  return stats_->trace()->WriteJson(path);
}

const std::shared_ptr<arrow::Schema>& LoaderImpl::schema() const { return source_->batch_schema; }

const TransformSpec& LoaderImpl::transforms() const { return *source_->transforms; }

const std::string& LoaderImpl::codecs_digest() const { return source_->decoder->digest(); }

std::string LoaderImpl::filter_digest() const {
  return source_->filter == nullptr ? "" : source_->filter->digest();
}

arrow::MemoryPool* LoaderImpl::output_pool() const {
  return source_->output_pool != nullptr ? source_->output_pool : source_->pool;
}

const std::vector<std::string>& LoaderImpl::ragged_columns() const { return source_->ragged; }

std::string LoaderImpl::TakeCacheWarning() const {
  return source_->cache == nullptr ? "" : source_->cache->TakeWarning();
}

StatsSnapshot LoaderImpl::stats() const {
  StatsSnapshot snapshot = stats_->Snapshot();
  if (source_->error_budget != nullptr) snapshot.skipped_units = source_->error_budget->skipped();
  return snapshot;
}

arrow::Status LoaderImpl::RestoreDeliveredDigest(const std::string& hex) {
  if (!stats_->RestoreDigest(hex)) {
    return arrow::Status::Invalid("delivered_digest must be 32 hex digits, got '", hex, "'");
  }
  return arrow::Status::OK();
}

}  // namespace stoker
