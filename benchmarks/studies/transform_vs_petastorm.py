"""Stoker with the realistic criteo transform spec (benchmarks/studies/transform_cost.py) against
Petastorm's make_batch_reader with an equivalent TransformSpec (pandas: fill nulls, log1p,
standardize the 13 dense columns, hash the 26 categorical ones) and convert_early_to_numpy,
thread pool with 2/4/10 workers (best kept), delivering what Stoker delivers: shuffled torch
batches of 4096 rows, through Petastorm's BatchedDataLoader with a shuffling queue as large
as Stoker's shuffle window. Each run is a fresh process in the loader's own environment;
medians of --repeats.

    python benchmarks/studies/transform_vs_petastorm.py DATASET --petastorm-python .bench-petastorm-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from stoker_devtools.bench import emit, listed, run_json
from transform_cost import DENSE, SPARSE, SPEC  # this folder's

BUCKETS = 100_000


def run_stoker(source: str, threads: int) -> float:
    import stoker

    started = time.perf_counter()
    loader = stoker.Loader(source, columns=["label", *DENSE, *SPARSE], batch_size=4096,
                           seed=1, num_threads=threads, output="torch", transforms=SPEC)
    rows = sum(len(b["label"]) for b in loader)
    return rows / (time.perf_counter() - started)


def run_petastorm(source: str, workers: int) -> float:
    import numpy as np
    from petastorm import make_batch_reader
    from petastorm.pytorch import BatchedDataLoader
    from petastorm.transform import TransformSpec

    def mix64(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.uint64)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))

    def transform(frame):
        for c in DENSE:
            x = np.log1p(frame[c].fillna(0).to_numpy(np.float32))
            frame[c] = (x - np.float32(1.0)) / np.float32(2.0)
        for c in SPARSE:
            frame[c] = (mix64(frame[c].to_numpy()) % np.uint64(BUCKETS)).astype(np.int64)
        return frame

    started = time.perf_counter()
    rows = 0
    with make_batch_reader("file://" + os.path.abspath(source),
                           schema_fields=["label", *DENSE, *SPARSE], reader_pool_type="thread",
                           workers_count=workers, convert_early_to_numpy=True, num_epochs=1,
                           transform_spec=TransformSpec(transform), shuffle_row_groups=True,
                           seed=1) as reader:
        for batch in BatchedDataLoader(reader, batch_size=4096,
                                       shuffling_queue_capacity=262_144):
            rows += len(batch["label"])
    return rows / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--petastorm-python", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--setting", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "stoker":
        emit(run_stoker(args.source, args.setting))
        return
    if args.child == "petastorm":
        emit(run_petastorm(args.source, args.setting))
        return

    def child(python: str, kind: str, setting: int) -> float:
        return run_json([python, __file__, args.source, "--petastorm-python",
                         args.petastorm_python, "--child", kind, "--setting", str(setting)])

    stoker_runs = [child(sys.executable, "stoker", args.num_threads) for _ in range(args.repeats)]
    petastorm = {}
    for workers in (2, 4, 10):
        petastorm[workers] = [child(args.petastorm_python, "petastorm", workers)
                              for _ in range(args.repeats)]
    best = max(petastorm, key=lambda w: statistics.median(petastorm[w]))
    s = statistics.median(stoker_runs)
    p = statistics.median(petastorm[best])
    print(f"stoker ({args.num_threads} threads): "
          f"{listed(stoker_runs, 1e-3, '.0f')} k rows/s (median {s / 1e3:.0f}k)")
    for workers, runs in petastorm.items():
        print(f"petastorm {workers:>2} workers: {listed(runs, 1e-3, '.0f')} "
              f"k rows/s (median {statistics.median(runs) / 1e3:.0f}k)")
    print(f"stoker / petastorm (best: {best} workers): {s / p:.1f}x")


if __name__ == "__main__":
    main()
