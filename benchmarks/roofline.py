"""The roofline a shuffled epoch is judged against: what one core of this machine moves (a
streaming copy, and a random gather of rows of each dataset's row size from a buffer the size
of a shuffle window), beside the rate of each stage of a shuffled epoch of each dataset, all in
GB/s per core (docs/benchmarks.md, "The roofline").

Medians over `--epochs` shuffled epochs after a warm one. The stages are the engine's own
counters (stats()): decode_seconds, transform_seconds and assemble_seconds are thread-seconds
summed over its workers, against the bytes of the batches delivered; read_seconds is the
fetches' summed latency (each from its start to its bytes' arrival, queueing in the I/O pool
included, several in flight at once), against the compressed bytes read. A stage at a fraction
of the gather ceiling has that much to gain from its own code; a stage at the ceiling only from
moving fewer bytes.

    python benchmarks/roofline.py [--data DIR] [--scale 1.0] [--epochs 3]
        [--out results/roofline.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import stoker
from stoker import _core
from stoker.cli import gen
from stoker_devtools.bench import write_json

COPY_BYTES = 256 << 20
# Dataset -> (GenOptions' keywords, the columns read: None for all, the transforms). Rows at
# --scale 1. multihot's bags come as ragged (values, offsets) pairs.
DATASETS: dict[str, tuple[dict[str, Any], list[str] | None, list[dict[str, Any]]]] = {
    "criteo": ({"preset": "criteo", "rows": 1_000_000, "files": 4}, None, []),
    "wide": ({"preset": "wide", "rows": 100_000, "files": 4}, None, []),
    "embeddings": ({"preset": "embeddings", "rows": 400_000, "files": 4}, None, []),
    "multihot": ({"preset": "multihot", "rows": 200_000, "files": 4}, None,
                 [{"op": "ragged", "column": f"C{i}"} for i in range(1, 27)]),
    "dlrm-parquet": ({"preset": "dlrm-parquet", "rows": 786_432, "files": 8,
                      "row_group_size": gen.DLRM_PARQUET_ROW_GROUP, "compression": "none"},
                     gen.dlrm_parquet_columns(), []),
}


def best_seconds(function: Any, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


def copy_ceiling() -> float:
    """GB/s of one thread's streaming copy of COPY_BYTES (numpy copyto)."""
    source = np.ones(COPY_BYTES, dtype=np.uint8)
    target = np.empty_like(source)
    return COPY_BYTES / best_seconds(lambda: np.copyto(target, source)) / 1e9


def gather_ceiling(row_bytes: int, window_rows: int) -> float:
    """GB/s of one thread gathering every row of a window-sized buffer in a random order
    (numpy fancy indexing of rows of `row_bytes`)."""
    rows = max(1, min(window_rows, (1 << 30) // max(1, row_bytes)))
    buffer = np.ones((rows, row_bytes), dtype=np.uint8)
    order = np.random.default_rng(0).permutation(rows)
    out = np.empty_like(buffer)
    return buffer.nbytes / best_seconds(lambda: np.take(buffer, order, axis=0, out=out)) / 1e9


def batch_bytes(batch: dict[str, Any]) -> int:
    total = 0
    for value in batch.values():
        total += sum(part.nbytes for part in value) if isinstance(value, tuple) else value.nbytes
    return total


STAGE_KEYS = ("read_seconds", "decode_seconds", "transform_seconds", "assemble_seconds")


def _rate(nbytes: float, seconds: float) -> float | None:
    """GB/s; None for a stage that did next to nothing (no transforms: microseconds in all)."""
    return nbytes / seconds / 1e9 if seconds > 1e-3 else None


def epoch_stages(data: Path, columns: list[str] | None, transforms: list[dict[str, Any]],
                 cores: int, epochs: int, plan_version: int) -> dict[str, Any]:
    """One warm epoch, then `epochs` shuffled epochs: each stage's rate (GB/s per core of its
    thread time) and the epoch's, the median over the epochs with the runs behind it."""
    loader = stoker.Loader(data, columns=columns, batch_size=16_384, seed=3, num_threads=cores,
                           transforms=transforms, output="numpy", plan_version=plan_version)
    for _ in loader:  # warm
        pass
    runs = []
    for epoch in range(1, epochs + 1):
        before = loader.stats()
        loader.set_epoch(epoch)
        started = time.perf_counter()
        delivered = rows = 0
        for batch in loader:
            delivered += batch_bytes(batch)
            rows += len(next(iter(batch.values())))
        wall = time.perf_counter() - started
        after = loader.stats()
        spent = {key: after[key] - before[key] for key in STAGE_KEYS + ("bytes_read",)}
        runs.append({
            "rows": rows, "row_bytes": delivered / rows, "delivered_bytes": delivered,
            "wall_seconds": wall, "epoch_gb_per_s_per_core": delivered / wall / 1e9 / cores,
            "fetch": _rate(spent["bytes_read"], spent["read_seconds"]),
            "decode": _rate(delivered, spent["decode_seconds"]),
            "transform": _rate(delivered, spent["transform_seconds"]),
            "assemble": _rate(delivered, spent["assemble_seconds"]),
            "seconds": {key: spent[key] for key in STAGE_KEYS},
        })
    out: dict[str, Any] = {"runs": runs}
    for key in ("row_bytes", "epoch_gb_per_s_per_core", "fetch", "decode", "transform",
                "assemble"):
        values = [run[key] for run in runs if run[key] is not None]
        out[key] = statistics.median(values) if values else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("build/bench-roofline"))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/roofline.json"))
    parser.add_argument("--plan-version", type=int, default=_core.LATEST_PLAN_VERSION)
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0))
    copy = copy_ceiling()
    results: dict[str, Any] = {"cores": cores, "copy_gb_per_s": copy,
                               "plan_version": args.plan_version, "datasets": {}}
    print(f"one core: streaming copy {copy:.2f} GB/s")
    print(f"{'dataset':13s} {'row B':>7s} {'gather':>7s} {'fetch':>7s} {'decode':>7s} "
          f"{'assemble':>8s} {'epoch/core':>10s}   (GB/s; stages per thread-second)")
    for name in args.datasets.split(","):
        keywords, columns, transforms = DATASETS[name]
        keywords = {**keywords, "rows": max(keywords["files"], int(keywords["rows"] * args.scale))}
        folder = args.data / f"{name}-{keywords['rows']}"
        if not (folder / ".complete").exists():
            gen.generate(folder, gen.GenOptions(**keywords), overwrite=True, progress=False)
            (folder / ".complete").touch()
        stages = epoch_stages(folder, columns, transforms, cores, args.epochs, args.plan_version)
        gather = gather_ceiling(round(stages["row_bytes"]), _core.DEFAULT_SHUFFLE_WINDOW)
        stages["gather_ceiling_gb_per_s"] = gather
        results["datasets"][name] = stages

        def shown(value: float | None) -> str:
            return f"{value:7.2f}" if value is not None else "      -"

        print(f"{name:13s} {stages['row_bytes']:7.0f} {gather:7.2f} {shown(stages['fetch'])} "
              f"{shown(stages['decode'])} {shown(stages['assemble']):>8s} "
              f"{stages['epoch_gb_per_s_per_core']:10.3f}")
    results["load_average"] = os.getloadavg()
    write_json(args.out, results)


if __name__ == "__main__":
    main()
