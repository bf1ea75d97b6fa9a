"""What the transforms cost: Stoker on a criteo-preset dataset with a realistic spec (fill
nulls, log1p and standardize the 13 dense columns and stack them, hash the 26 categorical
columns) against the same read without transforms, same threads, each run in a fresh
process, alternating, medians of --repeats runs.

    python benchmarks/studies/transform_cost.py DATASET [--repeats 3] [--num-threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time

from stoker_devtools.bench import emit, interleaved, listed, median_of, run_json

DENSE = [f"I{i}" for i in range(1, 14)]
SPARSE = [f"C{i}" for i in range(1, 27)]
SPEC = [
    *({"op": "fill_null", "column": c, "value": 0} for c in DENSE),
    *({"op": "log1p", "column": c} for c in DENSE),
    *({"op": "standardize", "column": c, "mean": 1.0, "std": 2.0} for c in DENSE),
    {"op": "stack", "columns": DENSE, "output": "dense"},
    *({"op": "hash", "column": c, "num_buckets": 100_000} for c in SPARSE),
]


def measure(source: str, transforms: bool, threads: int) -> dict:
    import stoker

    started = time.perf_counter()
    loader = stoker.Loader(source, columns=["label", *DENSE, *SPARSE], batch_size=4096, seed=1,
                           num_threads=threads, output="torch",
                           transforms=SPEC if transforms else None)
    rows = sum(len(batch["label"]) for batch in loader)
    seconds = time.perf_counter() - started
    stats = loader.stats()
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds,
            "transform_seconds": stats["transform_seconds"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--child", choices=["plain", "transforms"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(measure(args.source, args.child == "transforms", args.num_threads))
        return

    def child(kind: str) -> dict:
        return run_json([sys.executable, __file__, args.source, "--child", kind,
                         "--num-threads", str(args.num_threads)])

    runs = interleaved({kind: lambda _, kind=kind: child(kind)
                        for kind in ("plain", "transforms")}, args.repeats)
    medians = {kind: median_of(rs, "rows_per_s") for kind, rs in runs.items()}
    for kind, rs in runs.items():
        print(f"{kind:>10}: {listed((r['rows_per_s'] for r in rs), 1e-6)} M rows/s "
              f"(median {medians[kind] / 1e6:.2f}M)")
    cost = 1 - medians["transforms"] / medians["plain"]
    print(f"transforms cost {cost:.1%} of the no-transform throughput "
          f"({args.num_threads} threads, spec of {len(SPEC)} ops)")


if __name__ == "__main__":
    main()
