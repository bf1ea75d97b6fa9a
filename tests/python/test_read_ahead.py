"""Decode concurrency does not depend on the shuffle window: past the window the next batch
needs, the pipeline reads ahead until `num_threads` units are scheduled, so on any machine
(this 2-core one included) 8 threads have 8 units to work on although a default window holds
only four 65,536-row row groups. The counts are logical, not timings: the first scheduling
happens under the pipeline's lock, before any unit can finish."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker

ROW_GROUP = 65_536  # the default window (262,144 rows) holds four of them
UNITS = 16


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("read_ahead")
    rows = ROW_GROUP * UNITS
    table = pa.table({"row_id": np.arange(rows, dtype=np.int64),
                      "x": np.arange(rows, dtype=np.float32)})
    pq.write_table(table, out / "part-0.parquet", row_group_size=ROW_GROUP)
    return out


def epoch_stats(path: Path, threads: int, **kw) -> tuple[dict, list[np.ndarray]]:
    loader = stoker.Loader(path, batch_size=8192, seed=3, num_threads=threads, **kw)
    ids = [b["row_id"].copy() for b in loader]
    return loader.stats(), ids


def test_eight_threads_keep_more_than_a_window_in_flight(narrow: Path) -> None:
    stats, ids = epoch_stats(narrow, 8)
    # The first batch's window (4 units) and, past it, windows until 8 units are scheduled.
    assert stats["units_in_flight_peak"] >= 4 + 8
    assert stats["units_in_flight_peak"] <= UNITS
    assert 0 < stats["units_in_flight_mean"] <= stats["units_in_flight_peak"]
    # One thread reads one window ahead, as before: the same batches either way.
    one, one_ids = epoch_stats(narrow, 1)
    assert one["units_in_flight_peak"] == 4 + 4
    assert one["delivered_digest"] == stats["delivered_digest"]
    assert all(np.array_equal(a, b) for a, b in zip(one_ids, ids, strict=True))


def test_unshuffled_reads_num_threads_units_ahead(narrow: Path) -> None:
    stats, ids = epoch_stats(narrow, 4, shuffle=False)
    # Unshuffled windows are single units: the first and four more.
    assert stats["units_in_flight_peak"] >= 1 + 4
    assert np.array_equal(np.concatenate(ids), np.arange(ROW_GROUP * UNITS))


def test_the_trace_has_a_units_in_flight_track(narrow: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    loader = stoker.Loader(narrow, batch_size=8192, num_threads=8, trace=trace)
    list(loader)
    events = json.loads(trace.read_text())["traceEvents"]
    counters = [e for e in events if e["ph"] == "C"]
    # The other counter track is the controller's setting (prefetch is left to it here).
    assert {e["name"] for e in counters} <= {"units in flight", "autotune"}
    counts = [e["args"]["units"] for e in counters if e["name"] == "units in flight"]
    # Every unit steps the track up once (a window at a time) and down once.
    assert max(counts) == loader.stats()["units_in_flight_peak"]
    assert counts[-1] == 0
    assert min(counts) >= 0
