// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Implemented in src/loader/options.cc.
#pragma once

#include <arrow/compute/expression.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/codec_options.h"
#include "stoker/fields.h"
#include "stoker/partition_options.h"
#include "stoker/plan_version.h"
#include "stoker/storage_options.h"
#include "stoker/transform_options.h"

namespace stoker {

/// What the cache does when it is full.
enum class CachePolicy {
  /// Evict the least recently used entries to stay under the limit.
  kLru,
  /// Store until the limit is reached, then keep what is there (a fixed part of every epoch
  /// is served locally when the dataset is larger than the disk).
  kFill,
};

/// The name options spell a cache policy with: "lru" or "fill".
const char* CachePolicyName(CachePolicy policy);
/// The policy called `name`; otherwise an error naming the option and the allowed values.
arrow::Result<CachePolicy> ParseCachePolicy(const std::string& name);

/// What kind of batch the consumer receives; decides which column types are allowed.
enum class OutputKind {
  /// Fixed-width numbers, bool and fixed-size lists of numbers, no nulls (numpy, torch).
  kTensor,
  /// Any Arrow type, nulls allowed (pyarrow.RecordBatch).
  kArrow,
  /// As kTensor, and every list-of-numbers column is ragged (values + offsets) whether or not
  /// a ragged op names it: TorchRec's KeyedJaggedTensor (python/kjt.cc).
  kJagged,
};

/// What the epochs are for: how ranks share the rows (docs/evaluation.md).
enum class LoaderMode {
  /// Training: equal slices, so every rank has the same number of batches; at most
  /// world_size - 1 rows of an epoch are left out.
  kTrain,
  /// Evaluation and batch inference: every row exactly once. Ranks take contiguous shares
  /// that differ by at most one row (so their batch counts may differ by one, unless
  /// pad_to_equal_steps).
  kEval,
};

/// The name options spell a mode with: "train" or "eval".
const char* LoaderModeName(LoaderMode mode);
/// The mode called `name`; otherwise an error naming the option and the allowed values.
arrow::Result<LoaderMode> ParseLoaderMode(const std::string& name);

/// What a unit (row group) that cannot be fetched, decoded or checked does to an epoch.
enum class OnError {
  /// The epoch fails with the unit's error (naming file and row group).
  kRaise,
  /// The unit is skipped: its rows are absent from the batches that held them (which are
  /// shorter; the plan does not change), it is listed in stats, and the epoch goes on while
  /// the skipped units stay within max_bad_units and max_bad_fraction (docs/bad-data.md).
  kSkip,
};

/// The name options spell an error policy with: "raise" or "skip".
const char* OnErrorName(OnError on_error);
/// The policy called `name`; otherwise an error naming the option and the allowed values.
arrow::Result<OnError> ParseOnError(const std::string& name);

/// What a loader does with a directory's summary file `_metadata` (docs/large-datasets.md).
enum class IndexPolicy {
  /// Build the manifest from the summary file when the directory has one (one listing and
  /// one read instead of a footer per file); a summary that no longer matches the listing
  /// (a file added, removed or rewritten) is an error naming the file.
  kUse,
  /// The same, but a stale summary is set aside and every footer read instead.
  kFallback,
  /// Never read a summary file: read every footer.
  kIgnore,
  /// The summary file `stoker index` wrote defines the directory's files: no listing, one
  /// metadata request and one read before the plan. Each file's size and modification time
  /// are checked against the index at its first read (one metadata request, issued beside
  /// its data reads): a file rewritten or removed since is an error naming it before any of
  /// its rows are delivered. A file added since is not seen.
  kTrust,
};

/// The name options spell an index policy with: "use", "fallback", "ignore" or "trust".
const char* IndexPolicyName(IndexPolicy policy);
/// The policy called `name`; otherwise an error naming the option and the allowed values.
arrow::Result<IndexPolicy> ParseIndexPolicy(const std::string& name);

/// Name of the boolean column pad_to_equal_steps adds: true for real rows, false for padding.
inline constexpr char kValidColumn[] = "_valid";
/// Names of the columns with_row_origin adds: the row's file (an index into the loader's
/// files, in dataset order) and its row within that file (0-based, as stored).
inline constexpr char kFileIndexColumn[] = "_file_index";
inline constexpr char kRowInFileColumn[] = "_row_in_file";

/// Default for LoaderOptions::shuffle_window: rows mixed together by the shuffle.
inline constexpr int64_t kDefaultShuffleWindowRows = 262144;
/// Default for LoaderOptions::prefetch when it is 0: finished batches per worker thread.
inline constexpr int kDefaultPrefetchPerThread = 2;

/// What only tests set on the controller; defined in src/exec/autotune.h.
struct AutotuneTestHooks;

/// How the loader sizes itself from its own stall telemetry (docs/autotune.md): which of the
/// worker count and prefetch depth it moves is decided by LoaderOptions (a knob given a value
/// is fixed; one left at 0 is tuned). The batches never depend on any of it.
struct AutotuneOptions {
  /// false: no controller; an unset num_threads is the rank's CPU share and an unset
  /// prefetch kDefaultPrefetchPerThread per thread, for the whole run.
  bool enabled = true;
  /// The consumer's wait for batches as a share of the wall time the controller keeps
  /// below (0 < target < 1).
  double target_stall = 0.01;
  /// A decision window: at least this many delivered batches (>= 1) and ...
  int64_t window_batches = 32;
  /// ... at least this many seconds (>= 0).
  double window_seconds = 0.25;
  /// What only tests set (src/exec/autotune.h); null: nothing.
  std::shared_ptr<const AutotuneTestHooks> test_hooks;

  /// Checks the ranges; the message names the option.
  arrow::Status Validate() const;
};

/// Checks that `rank` is one of `world_size` (>= 1) ranks; the message names the option.
arrow::Status ValidateRank(int rank, int world_size);

/// Everything that configures a Loader. Plain data; Validate() checks it.
/// trace_events when a timeline is asked for without a size: about 10 MB of spans.
inline constexpr int64_t kDefaultTraceEvents = 262144;

struct LoaderOptions {
  /// Files, directories (searched recursively for *.parquet), globs or a mix; resolved to
  /// files in sorted path order. Required.
  std::vector<std::string> sources;
  /// Columns to read, in output order. Empty means every column of the dataset.
  std::vector<std::string> columns;
  /// Rows per batch (>= 1). Every batch has exactly this many rows except possibly the last
  /// one of an epoch, which is dropped when drop_last is set. Required.
  int64_t batch_size = 0;
  /// false: file order, row-group order, row order.
  bool shuffle = true;
  /// Key of every random choice the plan makes. Same seed and epoch: same batches.
  uint64_t seed = 0;
  /// Rows whose decoded data is mixed together by the shuffle (rounded up to whole row
  /// groups). Larger mixes better and uses more memory: about this many decoded rows
  /// (up to twice as many at window boundaries) stay resident. 0 means
  /// kDefaultShuffleWindowRows. Ignored when shuffle is false.
  int64_t shuffle_window = 0;
  /// Which plan the epochs follow (stoker/plan_version.h): kFirstPlanVersion reproduces the
  /// batches of releases before kLatestPlanVersion existed, which shuffles as well in about
  /// half the steps on most window sizes (docs/shuffle.md, "Plan versions"). A saved state
  /// resumes only under the version it was saved with.
  int plan_version = kLatestPlanVersion;
  /// This process's place among world_size data-parallel ranks; 0 <= rank < world_size.
  int rank = 0;
  /// Number of data-parallel ranks sharing the epoch (>= 1). Ranks see disjoint rows and
  /// the same number of batches; at most world_size - 1 rows of an epoch are left out.
  int world_size = 1;
  /// Drop the last batch of an epoch when it is shorter than batch_size. Not with kEval.
  bool drop_last = false;
  /// Training (equal slices) or evaluation (every row exactly once); see LoaderMode.
  LoaderMode mode = LoaderMode::kTrain;
  /// With kEval: every rank delivers the same number of batches, all of batch_size rows; the
  /// rows after a rank's share are padding (its last real row repeated) and a bool column
  /// kValidColumn says which rows are real. Needs kEval.
  bool pad_to_equal_steps = false;
  /// Adds each row's origin: kFileIndexColumn (int32, index into the dataset's files) and
  /// kRowInFileColumn (int64), so output can be joined back to its input. Not with a filter
  /// (a filtered unit no longer knows its rows' places in the file).
  bool with_row_origin = false;
  /// Worker threads that read, decode and assemble. 0 means a pool of this rank's share of
  /// the CPUs the process may use (CpuBudget::threads: affinity and cgroup quota over the
  /// ranks on the node, stoker/cpu_budget.h), of which the controller (autotune) keeps as
  /// many at work as the consumer needs; all of them when autotune is off.
  int num_threads = 0;
  /// CPUs (0-based ids) the engine's own threads run on: the worker pool and the I/O
  /// executor's threads are pinned to them (pthread_setaffinity_np), never the caller's
  /// thread, so a trainer's thread kept on the other CPUs is not preempted by them
  /// (docs/benchmarks.md, "The trainer's own cores"). Each must be in the affinity mask of
  /// the thread that makes the loader, and the CPU budget counts these alone, so an unset
  /// num_threads follows them. Empty (the default): the threads run wherever the mask lets.
  std::vector<int> engine_cpus;
  /// Finished batches kept ready ahead of the consumer (>= 1). 0 means at most
  /// kDefaultPrefetchPerThread * num_threads, as many as the controller finds needed (all
  /// of them when autotune is off).
  int prefetch = 0;
  /// The controller that sizes the unset num_threads and prefetch (AutotuneOptions).
  AutotuneOptions autotune;
  /// Which column types are allowed (see OutputKind).
  OutputKind output = OutputKind::kTensor;
  /// Local directory caching finished units (src/cache/disk_cache.h); empty: no cache. The cache
  /// never changes what is delivered.
  std::string cache_dir;
  /// Bytes the cache may hold (0: no limit).
  int64_t cache_limit_bytes = 0;
  /// What a full cache does (CachePolicy).
  CachePolicy cache_policy = CachePolicy::kLru;
  /// What a unit that cannot be fetched (after the storage retries), decoded or checked does:
  /// raise (the default) or skip it within the budget below (OnError).
  OnError on_error = OnError::kRaise;
  /// With kSkip: the most distinct units this loader may skip (>= 0); one more is an error
  /// listing them. Unset: no limit by count.
  std::optional<int64_t> max_bad_units;
  /// With kSkip: the largest fraction (0..1) of the dataset's units this loader may skip.
  /// Unset: no limit by fraction.
  std::optional<double> max_bad_fraction;
  /// How to reach object storage for s3:// sources (storage_options.h).
  StorageOptions storage;
  /// Partition columns: per-file constants from `key=value` directory names or a table
  /// format's log (partition_options.h).
  PartitionOptions partitioning;
  /// Whether a directory's summary file `_metadata` builds the manifest (IndexPolicy). The
  /// manifest, hence the plan and the batches, is the same either way.
  IndexPolicy index = IndexPolicy::kUse;
  /// Encoded binary columns (Petastorm's codecs) decoded to tensors in the workers, per row
  /// group, after the filter and before the transforms, which see the decoded columns; the
  /// disk cache stores them decoded (codec_options.h). Empty: none.
  std::vector<ColumnCodec> codecs;
  /// Feature transforms applied to each row group in the workers, in order (transform_options.h).
  std::vector<TransformOp> transforms;
  /// Rows kept: those for which this boolean expression is true (null counts as false).
  /// May name columns outside `columns`; they are read for the filter only. Unset: all rows.
  std::optional<arrow::compute::Expression> filter;
  /// Spans of work (unit fetch, decode, transform, staging; batch assembly; the consumer's
  /// wait) kept for a timeline (Loader::WriteTrace, docs/observability.md): the last this
  /// many, about 40 bytes each. 0: no tracing.
  int64_t trace_events = 0;
  /// Where decoded row groups and output batches are allocated (the allocator hook: a GPU
  /// build can pass a pinned-memory pool). nullptr means ResolvedMemoryPool()'s choice.
  arrow::MemoryPool* memory_pool = nullptr;
  /// Output batches in page-locked host memory from the CUDA runtime (loaded at run time),
  /// so copying them to a GPU is one DMA that can overlap compute. Row groups are still
  /// decoded into ordinary memory; memory_pool, when set, takes precedence. Make fails with
  /// NotImplemented when no CUDA runtime can be loaded.
  bool pinned_output = false;

  /// Checks ranges, required fields and the storage options: the one place they are checked
  /// (the Python binding only converts types). The message names the option.
  arrow::Status Validate() const;

  /// num_threads with 0 resolved.
  int ResolvedThreads() const;
  /// prefetch with 0 resolved.
  int ResolvedPrefetch() const;
  /// shuffle_window with 0 resolved.
  int64_t ResolvedShuffleWindow() const;
  /// memory_pool, or when it is null Arrow's jemalloc pool where the build has it (freed
  /// row groups are reused without page faults; several times faster to decode into than
  /// the wheel's default mimalloc pool here), else Arrow's default pool. An AddressSanitizer
  /// or ThreadSanitizer build takes the system pool instead, so that it sees every buffer.
  arrow::MemoryPool* ResolvedMemoryPool() const;
};

/// The options a binding sets by name as they are (Python's LoaderOptions walks this list:
/// src/python/options.cc), in struct order. Those that need a conversion (an enum by its
/// name, 0 read as None, the filter, the codecs, the cache directory) are bound there one by
/// one instead; memory_pool is C++'s alone.
constexpr auto FieldsOf(const LoaderOptions&) {
  using O = LoaderOptions;
  return std::tuple{Field{"sources", &O::sources},
                    Field{"columns", &O::columns},
                    Field{"batch_size", &O::batch_size},
                    Field{"shuffle", &O::shuffle},
                    Field{"plan_version", &O::plan_version},
                    Field{"rank", &O::rank},
                    Field{"world_size", &O::world_size},
                    Field{"drop_last", &O::drop_last},
                    Field{"pad_to_equal_steps", &O::pad_to_equal_steps},
                    Field{"with_row_origin", &O::with_row_origin},
                    Field{"engine_cpus", &O::engine_cpus},
                    Field{"autotune", &O::autotune},
                    Field{"cache_limit_bytes", &O::cache_limit_bytes},
                    Field{"max_bad_units", &O::max_bad_units},
                    Field{"max_bad_fraction", &O::max_bad_fraction},
                    Field{"storage", &O::storage},
                    Field{"partitioning", &O::partitioning},
                    Field{"transforms", &O::transforms},
                    Field{"trace_events", &O::trace_events},
                    Field{"pinned_output", &O::pinned_output}};
}

}  // namespace stoker
