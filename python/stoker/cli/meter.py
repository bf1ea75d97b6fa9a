"""Measures a stream of batches as a training loop consumes it: rows, bytes, wall time, the wait
for the first batch and for each later one, and optionally a simulated training step.

The one measurement behind `stoker bench` (cli/bench.py) and `make bench`
(benchmarks/measure.py). It uses the standard library only and imports nothing from the stoker
package, because the benchmark harness loads this file by path in its peers' environments
(Petastorm's, Mosaic Streaming's, Grain's), which have no Stoker.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["drain", "rows_and_bytes"]

Sizer = Callable[[Any], tuple[int, int]]  # batch -> (rows, bytes)


def drain(
    batches: Iterator[Any],
    *,
    started: float,
    sizer: Sizer | None = None,
    step_rows_per_s: float | None = None,
    step: Callable[[int], None] | None = None,
    max_rows: int | None = None,
    max_batches: int | None = None,
    max_seconds: float | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Consumes `batches` and returns what it took (see `_Tally.figures`).

    `started` is the `time.perf_counter()` at which the clock started (the caller starts it
    before building the loader, so setup counts). `sizer` gives a batch's (rows, bytes)
    (default: `rows_and_bytes`) and may raise to reject a batch. With `step_rows_per_s` = R,
    a simulated training step sleeps batch_rows / R after every batch, leaving the CPU to the
    loader as an accelerator would, and the stall share (Mohan et al., VLDB 2021) is the time
    spent waiting for batches over the wall time from the first batch on. `step(rows)` is any
    other simulated step, called with each batch's rows (it replaces `step_rows_per_s`).
    `max_rows`, `max_batches` and `max_seconds` (since `started`) stop early; "stopped_by"
    in the figures says which did ("end": the batches ran out). `on_batch(batches, rows)` is
    called after every batch (progress).
    """
    sizer = sizer or rows_and_bytes
    if step is None and step_rows_per_s:
        step = lambda rows: time.sleep(rows / step_rows_per_s)
    tally = _Tally(started)
    stopped_by = "end"
    while True:
        asked = time.perf_counter()
        batch = next(batches, None)
        got = time.perf_counter()
        if batch is None:
            tally.wait += got - asked
            break
        tally.add(*sizer(batch), asked=asked, got=got)
        if step is not None:
            step_started = time.perf_counter()
            step(tally.last_rows)
            tally.step += time.perf_counter() - step_started
        if on_batch is not None:
            on_batch(tally.batches, tally.rows)
        stopped_by = _bound_reached(tally, max_rows=max_rows, max_batches=max_batches,
                                    max_seconds=max_seconds)
        if stopped_by != "end":
            break
    figures = tally.figures(time.perf_counter() - started, stalled=step is not None)
    figures["stopped_by"] = stopped_by
    return figures


def _bound_reached(tally: _Tally, *, max_rows: int | None, max_batches: int | None,
                   max_seconds: float | None) -> str:
    """The first bound `tally` has reached ("max_rows", "max_batches", "max_seconds"), or
    "end" for none."""
    if max_rows is not None and tally.rows >= max_rows:
        return "max_rows"
    if max_batches is not None and tally.batches >= max_batches:
        return "max_batches"
    if max_seconds is not None and time.perf_counter() - tally.started >= max_seconds:
        return "max_seconds"
    return "end"


class _Tally:
    """What `drain` counts. Waits are counted from the second batch on: the first one's is
    setup, reported apart as first_batch_seconds."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.rows = self.bytes = self.batches = self.last_rows = 0
        self.first_batch_at: float | None = None
        self.first_rows = 0
        self.wait = 0.0  # Seconds blocked on the loader after the first batch.
        self.step = 0.0  # Seconds in the simulated training step.
        self.waits: list[float] = []  # Each batch's wait after the first.

    def add(self, rows: int, size: int, *, asked: float, got: float) -> None:
        if self.first_batch_at is None:
            self.first_batch_at, self.first_rows = got - self.started, rows
        else:
            self.wait += got - asked
            self.waits.append(got - asked)
        self.rows += rows
        self.bytes += size
        self.batches += 1
        self.last_rows = rows

    def figures(self, seconds: float, *, stalled: bool) -> dict[str, Any]:
        after_first = seconds - (self.first_batch_at or 0.0)
        return {
            "rows": self.rows,
            "batches": self.batches,
            "bytes": self.bytes,
            "seconds": seconds,
            "rows_per_s": self.rows / seconds,
            "mb_per_s": self.bytes / seconds / 1e6,
            "first_batch_seconds": self.first_batch_at,
            # Rate once the first batch is out, which discounts startup (and the filling of a
            # shuffle buffer, which a long epoch pays once too).
            "steady_rows_per_s": (self.rows - self.first_rows) / after_first
            if after_first > 0
            else None,
            "wait_seconds": self.wait,
            "step_seconds": self.step,
            "stall_share": self.wait / after_first if stalled and after_first > 0 else None,
            # The typical wait tells a loader that falls behind (long waits) from one whose
            # ready batches cost time to hand over (short waits, every batch).
            "wait_median_ms": statistics.median(self.waits) * 1e3 if self.waits else None,
        }


def rows_and_bytes(batch: Any) -> tuple[int, int]:
    """(rows, bytes) of a delivered batch: an Arrow record batch or table, or a dict of arrays
    or tensors (values may nest in dicts, tuples and lists: padded lists with their lengths).
    Bytes are as delivered: an array's `nbytes` (a NumPy object array counts its pointers)."""
    if hasattr(batch, "num_rows"):
        return batch.num_rows, batch.nbytes
    values = list(batch.values())
    if not values:
        return 0, 0
    return _rows(values[0]), sum(_nbytes(value) for value in values)


def _rows(value: Any) -> int:
    if isinstance(value, dict):
        return _rows(next(iter(value.values())))
    if isinstance(value, tuple):
        return _rows(value[0])
    return len(value)


def _nbytes(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return int(value.nbytes)
