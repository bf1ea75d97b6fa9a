"""One measurement, in a process of its own: `python benchmarks/measure.py SPEC_JSON` runs the
loader the spec names (see loaders.Spec) and prints its result as one JSON line.

The harness starts a fresh process for every measurement, in the environment that has the
loader, so that CPU time and memory belong to that loader alone. The clock starts when the
loader is built (after imports and once-per-process setup such as starting Ray) and stops
after the last batch. A run with `step_rows_per_s` = R simulates a training step after every
batch, sleeping batch_rows / R seconds as an accelerator consuming R rows/s would, and measures
the data stall (Mohan et al., "Analyzing and Mitigating Data Stalls in DNN Training", VLDB
2021): the share of wall time the step waits for its next batch.

`measure.py --convert SPEC_JSON` instead writes the loader's own copy of the dataset (Mosaic
Streaming's MDS), outside any measurement.

Needs only the standard library, torch and the loader's own packages, so it runs in each of
the benchmark's environments; the measurement itself is stoker/cli/meter.py, the one `stoker
bench` uses, loaded by path.
"""

from __future__ import annotations

import importlib.util
import json
import resource
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from loaders import LOADERS, NotAvailable, Spec
from proctree import tree_cpu_seconds

# Stoker's own measurement (`stoker bench` uses it too), loaded by path: this process may run
# in a peer's environment, which has no Stoker to import.
_METER_PATH = Path(__file__).resolve().parent.parent / "python" / "stoker" / "cli" / "meter.py"


def _load_meter() -> Any:
    module_spec = importlib.util.spec_from_file_location("stoker_meter", _METER_PATH)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


meter = _load_meter()


def measure(spec: Spec, report: Any) -> None:
    """Runs `spec` in this process and hands its result to `report` before the loader is torn
    down (a teardown that fails must not lose a finished measurement). Raises NotAvailable
    when the loader cannot run it."""
    # Petastorm, PyArrow and NumPy hand torch read-only arrays; torch warns once per process.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    loader = LOADERS[spec.loader]
    prepare_started = time.perf_counter()
    if loader.prepare is not None:
        loader.prepare(spec)
    prepare_seconds = time.perf_counter() - prepare_started
    try:
        result = _timed(spec, loader.batches)
        report({**result, "prepare_seconds": prepare_seconds})
    finally:
        if loader.close is not None:
            loader.close(spec)


def _timed(spec: Spec, make_batches: Any) -> dict[str, Any]:
    """The clock runs from building the loader to its last batch; CPU time is the whole
    process tree's over the same span."""
    sizer = _sizer(spec)
    cpu_before = tree_cpu_seconds()
    started = time.perf_counter()
    batches = make_batches(spec)
    result = meter.drain(
        batches,
        started=started,
        sizer=sizer,
        step_rows_per_s=spec.step_rows_per_s,
        max_rows=spec.max_rows,
    )
    cpu_seconds = tree_cpu_seconds() - cpu_before
    if hasattr(batches, "close"):
        batches.close()
    del batches
    return result | {
        "cpu_seconds": cpu_seconds,
        "cpu_seconds_per_m_rows": cpu_seconds / result["rows"] * 1e6 if result["rows"] else None,
        "main_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def _sizer(spec: Spec) -> Any:
    """meter.rows_and_bytes, after checking that a batch holds exactly the spec's columns in
    the promised form (torch tensors; for `output="arrow"`, Arrow or any arrays): a loader that
    drops or renames columns would otherwise look fast for the wrong reason."""
    import torch

    def checked(batch: Any) -> tuple[int, int]:
        names = batch.schema.names if hasattr(batch, "schema") else list(batch)
        if set(names) != set(spec.columns):
            missing = sorted(set(spec.columns) - set(names))
            extra = sorted(set(names) - set(spec.columns))
            raise NotAvailable(
                f"delivers other columns than asked: missing {missing}, extra {extra}"
            )
        if spec.output == "torch":
            for name, value in batch.items():
                if not isinstance(value, torch.Tensor):
                    raise NotAvailable(
                        f"column {name} arrives as {type(value).__name__}, not a tensor"
                    )
        return meter.rows_and_bytes(batch)

    return checked


def convert(spec: Spec) -> dict[str, Any]:
    """Writes the loader's own copy of the dataset (loaders.Loader.convert), not timed."""
    started = time.perf_counter()
    LOADERS[spec.loader].convert(spec)
    return {"convert_seconds": time.perf_counter() - started}


def main(argv: list[str]) -> int:
    """`measure.py SPEC_JSON` measures; `measure.py --convert SPEC_JSON` converts the data."""
    *flags, spec_json = argv
    spec = Spec(**json.loads(spec_json))

    def report(result: dict[str, Any]) -> None:
        print(json.dumps(result), flush=True)

    try:
        if flags == ["--convert"]:
            report({"status": "ok", **convert(spec)})
        else:
            measure(spec, lambda result: report({"status": "ok", **result}))
    except NotAvailable as exc:
        report({"status": "not-available", "reason": str(exc)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
