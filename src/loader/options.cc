// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "stoker/options.h"

#include <algorithm>

#include "stoker/cpu_budget.h"
#include "util/sanitizers.h"

namespace stoker {

const char* CachePolicyName(CachePolicy policy) {
  return policy == CachePolicy::kFill ? "fill" : "lru";
}

arrow::Result<CachePolicy> ParseCachePolicy(const std::string& name) {
  for (CachePolicy policy : {CachePolicy::kLru, CachePolicy::kFill}) {
    if (name == CachePolicyName(policy)) return policy;
  }
  return arrow::Status::Invalid("cache_policy must be 'lru' or 'fill', got '", name, "'");
}

const char* LoaderModeName(LoaderMode mode) { return mode == LoaderMode::kEval ? "eval" : "train"; }

arrow::Result<LoaderMode> ParseLoaderMode(const std::string& name) {
  for (LoaderMode mode : {LoaderMode::kTrain, LoaderMode::kEval}) {
    if (name == LoaderModeName(mode)) return mode;
  }
  return arrow::Status::Invalid("mode must be 'train' or 'eval', got '", name, "'");
}

const char* OnErrorName(OnError on_error) { return on_error == OnError::kSkip ? "skip" : "raise"; }

arrow::Result<OnError> ParseOnError(const std::string& name) {
  for (OnError on_error : {OnError::kRaise, OnError::kSkip}) {
    if (name == OnErrorName(on_error)) return on_error;
  }
  return arrow::Status::Invalid("on_error must be 'raise' or 'skip', got '", name, "'");
}

const char* IndexPolicyName(IndexPolicy policy) {
  switch (policy) {
    case IndexPolicy::kFallback:
      return "fallback";
    case IndexPolicy::kIgnore:
      return "ignore";
    case IndexPolicy::kTrust:
      return "trust";
    case IndexPolicy::kUse:
      break;
  }
  return "use";
}

arrow::Result<IndexPolicy> ParseIndexPolicy(const std::string& name) {
  for (IndexPolicy policy :
       {IndexPolicy::kUse, IndexPolicy::kFallback, IndexPolicy::kIgnore, IndexPolicy::kTrust}) {
    if (name == IndexPolicyName(policy)) return policy;
  }
  return arrow::Status::Invalid("index must be 'use', 'fallback', 'ignore' or 'trust', got '", name,
                                "'");
}

arrow::Status ValidateRank(int rank, int world_size) {
  if (world_size < 1) {
    return arrow::Status::Invalid("world_size must be >= 1, got ", world_size);
  }
  if (rank < 0 || rank >= world_size) {
    return arrow::Status::Invalid("rank must satisfy 0 <= rank < world_size (", world_size,
                                  "), got ", rank);
  }
  return arrow::Status::OK();
}

namespace {

arrow::Status ValidateStorage(const StorageOptions& storage) {
  if (storage.scheme != "" && storage.scheme != "http" && storage.scheme != "https") {
    return arrow::Status::Invalid("storage scheme must be 'http' or 'https', got '", storage.scheme,
                                  "'");
  }
  if (storage.max_attempts < 1) {
    return arrow::Status::Invalid("storage max_attempts must be >= 1, got ", storage.max_attempts);
  }
  if (storage.connect_timeout < 0 || storage.request_timeout < 0) {
    return arrow::Status::Invalid("storage connect_timeout and request_timeout must be >= 0 ",
                                  "seconds (0: the SDK's default), got ", storage.connect_timeout,
                                  " and ", storage.request_timeout);
  }
  if (storage.io_threads < 0) {
    return arrow::Status::Invalid("storage io_threads must be >= 1, got ", storage.io_threads);
  }
  if (storage.metadata_threads < 0 ||
      storage.metadata_threads > StorageOptions::kMaxMetadataThreads) {
    return arrow::Status::Invalid("storage metadata_threads must be in [1, ",
                                  StorageOptions::kMaxMetadataThreads, "], got ",
                                  storage.metadata_threads);
  }
  return arrow::Status::OK();
}

// The options that go with evaluation, and those that would break exactly-once.
arrow::Status ValidateEval(const LoaderOptions& o) {
  if (o.mode == LoaderMode::kEval && o.drop_last) {
    return arrow::Status::Invalid(
        "drop_last cannot be set with mode='eval': it would drop rows evaluation must see "
        "(use pad_to_equal_steps for batches of equal size)");
  }
  if (o.pad_to_equal_steps && o.mode != LoaderMode::kEval) {
    return arrow::Status::Invalid(
        "pad_to_equal_steps needs mode='eval' (training ranks already have equal steps)");
  }
  if (o.with_row_origin && o.filter.has_value()) {
    return arrow::Status::Invalid(
        "with_row_origin cannot be used with a filter: a filtered row group no longer "
        "knows its rows' places in the file");
  }
  return arrow::Status::OK();
}

// The error budget: limits in range, and only with on_error='skip' (they mean nothing else).
arrow::Status ValidateErrorBudget(const LoaderOptions& o) {
  if (o.max_bad_units.has_value() && *o.max_bad_units < 0) {
    return arrow::Status::Invalid("max_bad_units must be >= 0, got ", *o.max_bad_units);
  }
  if (o.trace_events < 0) {
    return arrow::Status::Invalid("trace_events must be >= 0, got ", o.trace_events);
  }
  if (o.max_bad_fraction.has_value() &&
      !(*o.max_bad_fraction >= 0.0 && *o.max_bad_fraction <= 1.0)) {
    return arrow::Status::Invalid("max_bad_fraction must be between 0 and 1, got ",
                                  *o.max_bad_fraction);
  }
  if (o.on_error != OnError::kSkip &&
      (o.max_bad_units.has_value() || o.max_bad_fraction.has_value())) {
    return arrow::Status::Invalid(
        "max_bad_units and max_bad_fraction need on_error='skip' (with on_error='raise' the "
        "first bad unit is an error)");
  }
  return arrow::Status::OK();
}

}  // namespace

arrow::Status AutotuneOptions::Validate() const {
  if (!(target_stall > 0 && target_stall < 1)) {
    return arrow::Status::Invalid("autotune target_stall must be between 0 and 1 (a share of ",
                                  "the wall time), got ", target_stall);
  }
  if (window_batches < 1) {
    return arrow::Status::Invalid("autotune window_batches must be >= 1, got ", window_batches);
  }
  if (!(window_seconds >= 0)) {
    return arrow::Status::Invalid("autotune window_seconds must be >= 0, got ", window_seconds);
  }
  return arrow::Status::OK();
}

arrow::Status LoaderOptions::Validate() const {
  if (sources.empty()) {
    return arrow::Status::Invalid("source: no file, directory or glob was given");
  }
  if (batch_size < 1) {
    return arrow::Status::Invalid("batch_size must be >= 1, got ", batch_size);
  }
  ARROW_RETURN_NOT_OK(ValidateRank(rank, world_size));
  if (shuffle_window < 0) {
    return arrow::Status::Invalid("shuffle_window must be >= 1 row, got ", shuffle_window);
  }
  if (plan_version < kFirstPlanVersion || plan_version > kLatestPlanVersion) {
    return arrow::Status::Invalid("plan_version must be ", kFirstPlanVersion, " to ",
                                  kLatestPlanVersion, ", got ", plan_version);
  }
  if (num_threads < 0) {
    return arrow::Status::Invalid("num_threads must be >= 1 (or None for all cores), got ",
                                  num_threads);
  }
  for (size_t i = 0; i < engine_cpus.size(); ++i) {
    if (engine_cpus[i] < 0) {
      return arrow::Status::Invalid("engine_cpus: CPU ids are >= 0, got ", engine_cpus[i]);
    }
    for (size_t j = 0; j < i; ++j) {
      if (engine_cpus[i] == engine_cpus[j]) {
        return arrow::Status::Invalid("engine_cpus: CPU ", engine_cpus[i], " is listed twice");
      }
    }
  }
  if (prefetch < 0) {
    return arrow::Status::Invalid("prefetch must be >= 1 batch (or None for the default), got ",
                                  prefetch);
  }
  ARROW_RETURN_NOT_OK(autotune.Validate());
  if (cache_limit_bytes < 0) {
    return arrow::Status::Invalid("cache_limit_bytes must be >= 0 (0: no limit), got ",
                                  cache_limit_bytes);
  }
  ARROW_RETURN_NOT_OK(ValidateStorage(storage));
  ARROW_RETURN_NOT_OK(partitioning.Validate(sources.size()));
  ARROW_RETURN_NOT_OK(ValidateEval(*this));
  ARROW_RETURN_NOT_OK(ValidateErrorBudget(*this));
  for (size_t i = 0; i < columns.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (columns[i] == columns[j]) {
        return arrow::Status::Invalid("columns: '", columns[i], "' is listed twice");
      }
    }
  }
  return arrow::Status::OK();
}

int LoaderOptions::ResolvedThreads() const {
  if (num_threads > 0) return num_threads;
  return ReadCpuBudget(engine_cpus).threads;
}

int LoaderOptions::ResolvedPrefetch() const {
  if (prefetch > 0) return prefetch;
  return kDefaultPrefetchPerThread * ResolvedThreads();
}

int64_t LoaderOptions::ResolvedShuffleWindow() const {
  return shuffle_window > 0 ? shuffle_window : kDefaultShuffleWindowRows;
}

arrow::MemoryPool* LoaderOptions::ResolvedMemoryPool() const {
  if (memory_pool != nullptr) return memory_pool;
  // jemalloc hands out and takes back blocks without malloc and free, the only allocation
  // the sanitizers see: ASan would miss a use after free, TSan would take a block reused
  // by another thread for a race with its previous user. Their builds use malloc's.
  if constexpr (kAddressSanitizer || kThreadSanitizer) return arrow::system_memory_pool();
  arrow::MemoryPool* pool = nullptr;
  if (arrow::jemalloc_memory_pool(&pool).ok()) return pool;
  return arrow::default_memory_pool();
}

}  // namespace stoker
