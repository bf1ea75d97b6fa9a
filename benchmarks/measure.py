"""One measurement, in a process of its own: `python benchmarks/measure.py SPEC_JSON` runs the
loader the spec names (see loaders.Spec) and prints its result as one JSON line.

The harness starts a fresh process for every measurement, in the environment that has the
loader, so that CPU time and memory belong to that loader alone. The clock starts when the
loader is built (after imports and once-per-process setup such as starting Ray) and stops
after the last batch. A run with `step_rows_per_s` = R simulates a training step after every
batch, sleeping batch_rows / R seconds as an accelerator consuming R rows/s would, and measures
the data stall (Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training", VLDB
2021): the share of wall time the step waits for its next batch.

Needs only the standard library, torch and the loader's own packages, so it runs in each of
the benchmark's environments.
"""

from __future__ import annotations

import json
import resource
import statistics
import sys
import time
import warnings
from typing import Any

from loaders import LOADERS, NotAvailable, Spec
from proctree import tree_cpu_seconds


def measure(spec: Spec, report: Any) -> None:
    """Runs `spec` in this process and hands its result to `report` before the loader is torn
    down (a teardown that fails must not lose a finished measurement). Raises NotAvailable
    when the loader cannot run it."""
    import torch

    # Petastorm, PyArrow and NumPy hand torch read-only arrays; torch warns once per process.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    loader = LOADERS[spec.loader]
    prepare_started = time.perf_counter()
    if loader.prepare is not None:
        loader.prepare(spec)
    prepare_seconds = time.perf_counter() - prepare_started
    try:
        result = _drain(spec, loader.batches, torch.Tensor)
        report({**result, "prepare_seconds": prepare_seconds})
    finally:
        if loader.close is not None:
            loader.close(spec)


def _drain(spec: Spec, make_batches: Any, tensor_type: type) -> dict[str, Any]:
    cpu_before = tree_cpu_seconds()
    started = time.perf_counter()
    batches = make_batches(spec)
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
        batch_rows, batch_bytes = _rows_and_bytes(spec, batch, tensor_type)
        if first_batch_at is None:
            first_batch_at, first_rows = got - started, batch_rows
        else:
            wait += got - asked
            waits.append(got - asked)
        rows += batch_rows
        delivered += batch_bytes
        count += 1
        if spec.step_rows_per_s:
            step_started = time.perf_counter()
            time.sleep(batch_rows / spec.step_rows_per_s)
            step += time.perf_counter() - step_started
        if spec.max_rows is not None and rows >= spec.max_rows:
            break
    seconds = time.perf_counter() - started
    cpu_seconds = tree_cpu_seconds() - cpu_before
    if hasattr(batches, "close"):
        batches.close()
    del batches
    after_first = seconds - (first_batch_at or 0.0)
    return {
        "rows": rows,
        "batches": count,
        "bytes": delivered,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "mb_per_s": delivered / seconds / 1e6,
        # Rate once the first batch is out, which discounts startup (and the filling of a
        # shuffle buffer, which a long epoch pays once too).
        "steady_rows_per_s": (rows - (first_rows or 0)) / after_first if after_first > 0 else None,
        "first_batch_seconds": first_batch_at,
        "cpu_seconds": cpu_seconds,
        "cpu_seconds_per_m_rows": cpu_seconds / rows * 1e6 if rows else None,
        "main_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "wait_seconds": wait,
        "step_seconds": step,
        "stall_share": wait / after_first if spec.step_rows_per_s and after_first > 0 else None,
        # The typical wait tells a loader that falls behind (long waits) from one whose ready
        # batches cost time to hand over (short waits, every batch).
        "wait_median_ms": statistics.median(waits) * 1e3 if waits else None,
    }


def _rows_and_bytes(spec: Spec, batch: Any, tensor_type: type) -> tuple[int, int]:
    """(rows, bytes) of a batch, after checking it holds exactly the spec's columns as tensors:
    a loader that drops or renames columns would otherwise look fast for the wrong reason."""
    if set(batch) != set(spec.columns):
        missing = sorted(set(spec.columns) - set(batch))
        extra = sorted(set(batch) - set(spec.columns))
        raise NotAvailable(f"delivers other columns than asked: missing {missing}, extra {extra}")
    values = list(batch.values())
    for name, value in batch.items():
        if not isinstance(value, tensor_type):
            raise NotAvailable(f"column {name} arrives as {type(value).__name__}, not a tensor")
    return len(values[0]), sum(value.nbytes for value in values)


def main(argv: list[str]) -> int:
    (spec_json,) = argv
    spec = Spec(**json.loads(spec_json))
    def report(result: dict[str, Any]) -> None:
        print(json.dumps(result), flush=True)

    try:
        measure(spec, lambda result: report({"status": "ok", **result}))
    except NotAvailable as exc:
        report({"status": "not-available", "reason": str(exc)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
