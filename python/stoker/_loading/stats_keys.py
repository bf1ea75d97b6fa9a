"""The keys of ``stats()``, documented once: the core every loader's stats() holds (Loader,
MixtureLoader, RemoteLoader), and the engine's counters and gauges a Loader adds (as do a
RemoteLoader's ``local`` and each mixture source's ``engine``). ``stoker.metrics`` exports
them under these names and help texts; docs/observability.md describes each field."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stat:
    """One key of stats(): its Prometheus metric, whether it only grows (a counter) or is a
    level (a gauge), and what it counts."""

    key: str
    metric: str
    kind: str  # "counter" or "gauge"
    help: str


# Every loader's stats() holds these.
CORE = [
    Stat("rows", "stoker_rows", "counter", "Rows delivered to the consumer."),
    Stat("batches", "stoker_batches", "counter", "Batches delivered to the consumer."),
    Stat("wait_seconds", "stoker_wait_seconds", "counter",
         "Wall seconds the consumer waited for its next batch (the data stall)."),
]

# A Loader's engine counts these too.
ENGINE = [
    Stat("units_read", "stoker_units_read", "counter", "Row groups read from the source."),
    Stat("bytes_read", "stoker_bytes_read", "counter",
         "Compressed bytes of the column chunks read."),
    Stat("requests", "stoker_requests", "counter", "Read requests made to the store."),
    Stat("retries", "stoker_retries", "counter", "Retries of failed store requests."),
    Stat("read_seconds", "stoker_read_seconds", "counter", "Thread-seconds fetching bytes."),
    Stat("decode_seconds", "stoker_decode_seconds", "counter",
         "Thread-seconds decoding row groups."),
    Stat("transform_seconds", "stoker_transform_seconds", "counter",
         "Thread-seconds filtering and transforming row groups."),
    Stat("assemble_seconds", "stoker_assemble_seconds", "counter",
         "Thread-seconds assembling batches."),
    Stat("cache_hits", "stoker_cache_hits", "counter",
         "Disk cache lookups that found a sound entry."),
    Stat("cache_misses", "stoker_cache_misses", "counter", "Disk cache lookups that found none."),
    Stat("cache_evictions", "stoker_cache_evictions", "counter", "Disk cache entries evicted."),
    Stat("cache_corrupt", "stoker_cache_corrupt", "counter",
         "Damaged disk cache entries found and rebuilt."),
    Stat("skipped_rows", "stoker_skipped_rows", "counter", "Rows left out under on_error='skip'."),
    Stat("recent_rows_per_second", "stoker_recent_rows_per_second", "gauge",
         "Rows per second over the last 10 s."),
    Stat("cache_hit_rate", "stoker_cache_hit_rate", "gauge", "Disk cache hits over lookups."),
    Stat("threads", "stoker_threads", "gauge", "The loader's worker threads."),
    Stat("io_threads", "stoker_io_threads", "gauge", "The loader's I/O threads."),
    Stat("units_in_flight_peak", "stoker_units_in_flight_peak", "gauge",
         "The most row groups in flight (fetching, queued or decoding) at once."),
    Stat("units_in_flight_mean", "stoker_units_in_flight_mean", "gauge",
         "Row groups in flight on average over the time any was."),
]
