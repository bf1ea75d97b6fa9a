"""MLPerf Storage v3.0's DLRM-on-Parquet workload (`stoker gen --preset dlrm-parquet`): Stoker,
shuffled, against the reader DLIO uses, in samples/s, GB/s per core and the accelerator
utilisation (AU) at the workload's compute step (docs/benchmarks.md, "DLRM on Parquet").

The workload (mlcommons/storage configs/dlio/workload/dlrm_b200.yaml) reads 40 of 200 columns
(160 bytes a sample) from uncompressed files in row groups of 6,144 rows, in batches of 16,384,
with a 375 us step per batch, and asks AU >= 0.70. DLIO's reader is pyarrow reading one row
group at a time with the read columns, the files in a seeded shuffled order, the rows of a row
group in order: `dlio` here. Stoker reads the same columns fully shuffled (its default window).

Each case is timed over whole epochs, the cases interleaved (round robin, so a change in load
reaches each alike), medians of `--repeats`. AU: an epoch again with the step emulated as
DLIO does, a sleep of the step after every batch; AU is the steps' measured time over the
epoch's wall time. GB/s per core: the read columns' bytes delivered per second over the CPUs
this process may use.

    python benchmarks/dlrm_parquet.py [--data DIR] [--files 8] [--rows-per-file 98304]
        [--repeats 3] [--out benchmarks/results/dlrm_parquet.json]
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import stoker
from stoker.cli import gen
from stoker_devtools.bench import interleaved, listed, median_of, write_json

BYTES_PER_SAMPLE = 160  # the read columns' widths (tests/python/test_gen_presets.py checks it)


def ensure_data(folder: Path, files: int, rows_per_file: int) -> list[str]:
    """The workload's files in `folder`, written once (kept for later runs)."""
    options = gen.GenOptions(preset="dlrm-parquet", rows=files * rows_per_file, files=files,
                             row_group_size=gen.DLRM_PARQUET_ROW_GROUP, compression="none")
    marker = folder / f".complete-{files}x{rows_per_file}"
    if not marker.exists():
        gen.generate(folder, options, overwrite=True, progress=False)
        marker.touch()
    return sorted(str(p) for p in folder.glob("*.parquet"))


def dlio_batches(files: list[str], seed: int) -> Iterator[dict[str, np.ndarray]]:
    """DLIO's reader: the files in a seeded shuffled order, each read one row group at a time
    with the workload's columns, cut into batches of DLRM_PARQUET_BATCH rows in order."""
    columns, size = gen.dlrm_parquet_columns(), gen.DLRM_PARQUET_BATCH
    order = list(files)
    random.Random(seed).shuffle(order)
    pending: list[pa.Table] = []
    held = 0
    for path in order:
        parquet = pq.ParquetFile(path)
        for row_group in range(parquet.num_row_groups):
            table = parquet.read_row_group(row_group, columns=columns)
            pending.append(table)
            held += table.num_rows
            while held >= size:
                joined = pa.concat_tables(pending)
                yield _numpy(joined.slice(0, size))
                pending, held = [joined.slice(size)], held - size
    if held:
        yield _numpy(pa.concat_tables(pending))


def _numpy(table: pa.Table) -> dict[str, np.ndarray]:
    return {name: table.column(name).combine_chunks().to_numpy()
            for name in table.column_names}


def stoker_loader(data: Path, seed: int, plan_version: int | None = None) -> stoker.Loader:
    versioned = {} if plan_version is None else {"plan_version": plan_version}
    return stoker.Loader(data, columns=gen.dlrm_parquet_columns(),
                         batch_size=gen.DLRM_PARQUET_BATCH, seed=seed, **versioned)


def run_epoch(batches: Iterator[dict[str, Any]], step_s: float | None) -> dict[str, float]:
    """Drains `batches`; with `step_s`, sleeps that long after each batch (DLIO's emulated
    compute). Samples, wall seconds, and the steps' measured seconds."""
    samples, stepped = 0, 0.0
    started = time.perf_counter()
    for batch in batches:
        samples += len(next(iter(batch.values())))
        if step_s is not None:
            before = time.perf_counter()
            time.sleep(step_s)
            stepped += time.perf_counter() - before
    return {"samples": samples, "seconds": time.perf_counter() - started, "stepped": stepped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("build/bench-dlrm"))
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--rows-per-file", type=int, default=98_304)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/dlrm_parquet.json"))
    parser.add_argument("--also-plan-version", type=int, action="append", default=[],
                        help="also measure Stoker under this plan version (no step), "
                             "interleaved with the rest: e.g. 1 against the default")
    args = parser.parse_args()
    files = ensure_data(args.data, args.files, args.rows_per_file)
    cores = len(os.sched_getaffinity(0))
    total = args.files * args.rows_per_file
    loader = stoker_loader(args.data, seed=7)
    versioned = {f"stoker_plan{v}": stoker_loader(args.data, seed=7, plan_version=v)
                 for v in args.also_plan_version}

    def case(reader: str, step: float | None):
        def measure(repeat: int) -> dict[str, float]:
            if reader == "stoker" or reader in versioned:
                engine = loader if reader == "stoker" else versioned[reader]
                engine.set_epoch(repeat)
                result = run_epoch(iter(engine), step)
            else:
                result = run_epoch(dlio_batches(files, seed=repeat), step)
            if result["samples"] != total:
                raise RuntimeError(f"{reader}: {result['samples']} samples, expected {total}")
            return result
        return measure

    step = gen.DLRM_PARQUET_STEP_S
    run_epoch(iter(loader), None)  # warm: the page cache and the allocator's pools
    for engine in versioned.values():
        run_epoch(iter(engine), None)
    runs = interleaved({"stoker": case("stoker", None), "dlio": case("dlio", None),
                        "stoker_au": case("stoker", step), "dlio_au": case("dlio", step),
                        **{name: case(name, None) for name in versioned}},
                       args.repeats, rotate=True)
    results: dict[str, Any] = {
        "plan_version": loader.state_dict()["plan_version"],
        "workload": {"files": args.files, "rows_per_file": args.rows_per_file,
                     "columns_read": len(gen.dlrm_parquet_columns()),
                     "bytes_per_sample": BYTES_PER_SAMPLE, "batch": gen.DLRM_PARQUET_BATCH,
                     "row_group": gen.DLRM_PARQUET_ROW_GROUP, "step_s": step},
        "cores": cores, "load_average": os.getloadavg(), "runs": runs,
    }
    for reader in ("stoker", "dlio"):
        rates = [r["samples"] / r["seconds"] for r in runs[reader]]
        aus = [r["stepped"] / r["seconds"] for r in runs[f"{reader}_au"]]
        rate = median_of([{"v": v} for v in rates], "v")
        results[reader] = {
            "samples_per_s": rate, "samples_per_s_runs": rates,
            "gb_per_s_per_core": rate * BYTES_PER_SAMPLE / 1e9 / cores,
            "au": median_of([{"v": v} for v in aus], "v"), "au_runs": aus,
        }
        print(f"{reader:7s} {rate / 1e6:6.2f}M samples/s (runs {listed(rates, 1e-6)}), "
              f"{results[reader]['gb_per_s_per_core']:.3f} GB/s per core, "
              f"AU {results[reader]['au']:.3f} (runs {listed(aus, spec='.3f')})")
    for name in versioned:
        rates = [r["samples"] / r["seconds"] for r in runs[name]]
        results[name] = {"samples_per_s": median_of([{"v": v} for v in rates], "v"),
                         "samples_per_s_runs": rates}
        print(f"{name} {results[name]['samples_per_s'] / 1e6:6.2f}M samples/s (runs "
              f"{listed(rates, 1e-6)}); the default plan ÷ it: "
              f"{results['stoker']['samples_per_s'] / results[name]['samples_per_s']:.2f}")
    results["stoker_over_dlio"] = (results["stoker"]["samples_per_s"]
                                   / results["dlio"]["samples_per_s"])
    print(f"stoker / dlio: {results['stoker_over_dlio']:.2f}x on {cores} cores "
          f"(load average {os.getloadavg()[0]:.2f})")
    write_json(args.out, results)


if __name__ == "__main__":
    main()
