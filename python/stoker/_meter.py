"""Measures a stream of batches as a training loop consumes it: rows, bytes, wall time, the wait
for the first batch and for each later one, and optionally a simulated training step.

The one measurement behind `stoker bench` (stoker/_bench.py) and `make bench`
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
    max_rows: int | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Consumes `batches` and returns what it took.

    `started` is the `time.perf_counter()` at which the clock started (the caller starts it
    before building the loader, so setup counts). `sizer` gives a batch's (rows, bytes)
    (default: `rows_and_bytes`) and may raise to reject a batch. With `step_rows_per_s` = R,
    a simulated training step sleeps batch_rows / R after every batch, leaving the CPU to the
    loader as an accelerator would, and the stall share (Mohan et al., VLDB 2021) is the time
    spent waiting for batches over the wall time from the first batch on. `max_rows` stops
    early; `on_batch(batches, rows)` is called after every batch (progress).
    """
    sizer = sizer or rows_and_bytes
    rows = delivered = count = 0
    first_batch_at = first_rows = None
    wait = step = 0.0  # After the first batch: seconds blocked on the loader, seconds "training".
    waits = []  # Each batch's wait after the first.
    while True:
        asked = time.perf_counter()
        batch = next(batches, None)
        got = time.perf_counter()
        if batch is None:
            wait += got - asked
            break
        batch_rows, batch_bytes = sizer(batch)
        if first_batch_at is None:
            first_batch_at, first_rows = got - started, batch_rows
        else:
            wait += got - asked
            waits.append(got - asked)
        rows += batch_rows
        delivered += batch_bytes
        count += 1
        if step_rows_per_s:
            step_started = time.perf_counter()
            time.sleep(batch_rows / step_rows_per_s)
            step += time.perf_counter() - step_started
        if on_batch is not None:
            on_batch(count, rows)
        if max_rows is not None and rows >= max_rows:
            break
    seconds = time.perf_counter() - started
    after_first = seconds - (first_batch_at or 0.0)
    return {
        "rows": rows,
        "batches": count,
        "bytes": delivered,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "mb_per_s": delivered / seconds / 1e6,
        "first_batch_seconds": first_batch_at,
        # Rate once the first batch is out, which discounts startup (and the filling of a
        # shuffle buffer, which a long epoch pays once too).
        "steady_rows_per_s": (rows - (first_rows or 0)) / after_first if after_first > 0 else None,
        "wait_seconds": wait,
        "step_seconds": step,
        "stall_share": wait / after_first if step_rows_per_s and after_first > 0 else None,
        # The typical wait tells a loader that falls behind (long waits) from one whose ready
        # batches cost time to hand over (short waits, every batch).
        "wait_median_ms": statistics.median(waits) * 1e3 if waits else None,
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
