// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// Header only; filled by src/telemetry/stats.cc (Stats::Snapshot).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "stoker/fields.h"

namespace stoker {

/// A unit (row group) skipped under on_error="skip", and why.
struct SkippedUnit {
  /// The file's path as the loader resolved it, and the row group's index in that file; -1
  /// for a file whose footer could not be read, left out whole when the loader was made.
  std::string file;
  int32_t row_group = 0;
  /// Rows the unit holds (after the filter): rows absent from every epoch's batches (0 for a
  /// file left out: its rows were never counted).
  int64_t rows = 0;
  /// The first error the unit met.
  std::string error;
};

/// SkippedUnit's fields by name (stoker/fields.h).
constexpr auto FieldsOf(const SkippedUnit&) {
  return std::tuple{Field{"file", &SkippedUnit::file}, Field{"row_group", &SkippedUnit::row_group},
                    Field{"rows", &SkippedUnit::rows}, Field{"error", &SkippedUnit::error}};
}

/// The consumer's wait for each batch (the data stall, batch by batch): bucket counts with
/// their upper bounds in seconds (log-spaced, 4 per doubling from 1 µs; the last unbounded),
/// and quantiles read from them (each a bucket's upper bound: within 19% of the truth,
/// never above max_seconds).
struct WaitSummary {
  std::vector<int64_t> counts;
  std::vector<double> bounds;
  int64_t count = 0;
  double sum_seconds = 0;
  double p50_seconds = 0;
  double p90_seconds = 0;
  double p99_seconds = 0;
  double max_seconds = 0;
};

/// WaitSummary's fields by the names stats()["wait_per_batch"] gives them (stoker/fields.h).
constexpr auto FieldsOf(const WaitSummary&) {
  using W = WaitSummary;
  return std::tuple{Field{"count", &W::count},          Field{"sum", &W::sum_seconds},
                    Field{"p50", &W::p50_seconds},      Field{"p90", &W::p90_seconds},
                    Field{"p99", &W::p99_seconds},      Field{"max", &W::max_seconds},
                    Field{"bucket_bounds", &W::bounds}, Field{"bucket_counts", &W::counts}};
}

/// A point-in-time copy of a loader's counters, cumulative over its life.
struct StatsSnapshot {
  /// Rows and batches delivered to the consumer.
  int64_t rows = 0;
  int64_t batches = 0;
  /// Row groups read, and the compressed bytes of the column chunks they needed.
  int64_t units_read = 0;
  int64_t bytes_read = 0;
  /// Read requests made to the store (after coalescing adjacent ranges), the bytes they
  /// fetched (holes between coalesced ranges included), and the retries of failed requests.
  int64_t requests = 0;
  int64_t bytes_fetched = 0;
  int64_t retries = 0;
  /// Requests for metadata before the first epoch (footers, or the summary file `_metadata`;
  /// listing pages not included) and the bytes they fetched; wall seconds spent listing the
  /// sources and reading their metadata.
  int64_t metadata_requests = 0;
  int64_t metadata_bytes = 0;
  double metadata_seconds = 0;
  /// Sources whose manifest came from their summary file (`_metadata`), and summary files
  /// found stale and set aside for the footers (index="fallback").
  int64_t index_used = 0;
  int64_t index_stale = 0;
  /// Files the filter's conditions on partition columns ruled out before their footers were
  /// read (never opened), and files whose footers were read from the file itself (one
  /// request or two each; files described by a summary file are not counted).
  int64_t files_pruned = 0;
  int64_t files_opened = 0;
  /// Seconds fetching bytes, summed over the fetches: each from its start to its bytes'
  /// arrival, queueing for an I/O thread included, several in flight at once (so it can
  /// exceed the wall time); then thread-seconds (summed over workers) decoding them and
  /// assembling batches.
  double read_seconds = 0;
  double decode_seconds = 0;
  double assemble_seconds = 0;
  /// Thread-seconds filtering and transforming decoded row groups.
  double transform_seconds = 0;
  /// Units (row groups) in flight: scheduled and not yet finished (fetching, waiting for a
  /// worker, or being decoded, filtered, transformed and staged). The most at once, and the
  /// mean over the wall time at least one was: how much of `num_threads` the read-ahead kept
  /// busy (a mean well below num_threads while the consumer waits means too few units ahead).
  int64_t units_in_flight_peak = 0;
  double units_in_flight_mean = 0;
  /// Row groups skipped unread because their statistics prove no row matches the filter.
  int64_t row_groups_pruned = 0;
  /// Rows decoded and then dropped by the row filter: the decoding a more selective layout
  /// (sorted or partitioned on the filter's columns) would save. Units served from the disk
  /// cache were filtered when they were stored and are not counted again.
  int64_t rows_filtered = 0;
  /// Wall seconds the consumer spent blocked waiting for its next batch (the data stall).
  double wait_seconds = 0;
  /// The same wait, batch by batch.
  WaitSummary wait_per_batch;
  /// Rows per second delivered over the last 10 seconds (at most the last 256 batches);
  /// 0 until two batches have been delivered in that time.
  double recent_rows_per_second = 0;
  /// The disk cache: lookups that found a sound entry or not, bytes read from and written
  /// to it, entries evicted, and damaged entries found (deleted and rebuilt).
  int64_t cache_hits = 0;
  int64_t cache_misses = 0;
  int64_t cache_bytes_read = 0;
  int64_t cache_bytes_written = 0;
  int64_t cache_evictions = 0;
  int64_t cache_corrupt = 0;
  /// Units skipped under on_error="skip" (each listed once, in the order met), and the
  /// planned rows left out of delivered batches because of them (summed over epochs).
  std::vector<SkippedUnit> skipped_units;
  int64_t skipped_rows = 0;
  /// Running digest of the rows delivered, in order (each row named by its index in dataset
  /// order): two runs that delivered the same rows in the same order have the same digest.
  std::string delivered_digest;
};

/// StatsSnapshot's fields by name, in its order: the keys of Loader.stats() in Python
/// (stoker/fields.h). A counter is added to the struct, with its doc, and here.
constexpr auto FieldsOf(const StatsSnapshot&) {
  using S = StatsSnapshot;
  return std::tuple{Field{"rows", &S::rows},
                    Field{"batches", &S::batches},
                    Field{"units_read", &S::units_read},
                    Field{"bytes_read", &S::bytes_read},
                    Field{"requests", &S::requests},
                    Field{"bytes_fetched", &S::bytes_fetched},
                    Field{"retries", &S::retries},
                    Field{"metadata_requests", &S::metadata_requests},
                    Field{"metadata_bytes", &S::metadata_bytes},
                    Field{"metadata_seconds", &S::metadata_seconds},
                    Field{"index_used", &S::index_used},
                    Field{"index_stale", &S::index_stale},
                    Field{"files_pruned", &S::files_pruned},
                    Field{"files_opened", &S::files_opened},
                    Field{"read_seconds", &S::read_seconds},
                    Field{"decode_seconds", &S::decode_seconds},
                    Field{"assemble_seconds", &S::assemble_seconds},
                    Field{"transform_seconds", &S::transform_seconds},
                    Field{"units_in_flight_peak", &S::units_in_flight_peak},
                    Field{"units_in_flight_mean", &S::units_in_flight_mean},
                    Field{"row_groups_pruned", &S::row_groups_pruned},
                    Field{"rows_filtered", &S::rows_filtered},
                    Field{"wait_seconds", &S::wait_seconds},
                    Field{"wait_per_batch", &S::wait_per_batch},
                    Field{"recent_rows_per_second", &S::recent_rows_per_second},
                    Field{"cache_hits", &S::cache_hits},
                    Field{"cache_misses", &S::cache_misses},
                    Field{"cache_bytes_read", &S::cache_bytes_read},
                    Field{"cache_bytes_written", &S::cache_bytes_written},
                    Field{"cache_evictions", &S::cache_evictions},
                    Field{"cache_corrupt", &S::cache_corrupt},
                    Field{"skipped_units", &S::skipped_units},
                    Field{"skipped_rows", &S::skipped_rows},
                    Field{"delivered_digest", &S::delivered_digest}};
}

}  // namespace stoker
