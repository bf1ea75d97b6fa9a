"""Read rate through the disk cache while it is at its limit against below it: the same epoch
(every row group a miss, read from the source and written to the cache) into a cache with
room (no eviction) and into a cache already full of other entries (every write evicts), in
one process and in two processes sharing the directory. Also the warm cache (all hits) and
no cache, for scale. Rows per second of one epoch, median of --repeats fresh runs.

    python benchmarks/studies/cache_sharing.py [DATASET] [--rows 400000] [--repeats 3]

Without DATASET a criteo-preset dataset of --rows rows (4 files, row groups of 20,000) is
written to a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import stoker
from stoker.cli import gen as _gen
from stoker_devtools.bench import emit, median_of, run_json_at_once

COLUMNS = ["label", *(f"I{i}" for i in range(1, 14)), *(f"C{i}" for i in range(1, 27))]
# Entries of another column set, which fill the cache before an at-the-limit epoch.
OTHER_COLUMNS = ["row_id", *(f"C{i}" for i in range(1, 27)), *(f"I{i}" for i in range(1, 14))]


def epoch(source: str, options: dict, seed: int, columns: list[str] = COLUMNS) -> dict:
    """One epoch: rows per second and the cache counters it moved."""
    loader = stoker.Loader(source, columns=columns, seed=seed, **options)
    started = time.perf_counter()
    rows = sum(len(next(iter(batch.values()))) for batch in loader)
    seconds = time.perf_counter() - started
    stats = loader.stats()
    return {"rows_per_s": rows / seconds, "hits": stats["cache_hits"],
            "misses": stats["cache_misses"], "evictions": stats["cache_evictions"]}


def together(source: str, options: dict, seeds: tuple[int, ...]) -> list[dict]:
    """One epoch in each of len(seeds) processes started at once."""
    return run_json_at_once([[sys.executable, __file__, "--child", json.dumps(
        {"source": source, "options": options, "seed": seed})] for seed in seeds])


def cache_bytes(cache: Path) -> int:
    return sum(f.stat().st_size for f in cache.glob("??/??/*.stkc"))


def measure(source: str, root: Path, base: dict) -> dict[str, list[dict]]:
    """One fresh run of every phase."""
    shutil.rmtree(root, ignore_errors=True)
    out: dict[str, list[dict]] = {}
    out["no cache"] = [epoch(source, base, 1)]
    room = {**base, "cache_dir": str(root / "room")}
    out["cold, below the limit (no eviction)"] = [epoch(source, room, 1)]
    out["warm, below the limit (all hits)"] = [epoch(source, room, 2)]
    full = {**base, "cache_dir": str(root / "full")}
    epoch(source, full, 1, OTHER_COLUMNS)  # fills the cache with other entries
    limit = cache_bytes(root / "full")
    out["cold, at the limit (every write evicts)"] = [
        epoch(source, {**full, "cache_limit_bytes": limit}, 1)]
    out["2 processes: cold, below the limit"] = together(
        source, {**base, "cache_dir": str(root / "room2")}, (1, 2))
    epoch(source, {**base, "cache_dir": str(root / "full2")}, 1, OTHER_COLUMNS)
    out["2 processes: cold, at the limit"] = together(
        source, {**base, "cache_dir": str(root / "full2"), "cache_limit_bytes": limit}, (1, 2))
    out["2 processes: warm (all hits)"] = together(source, room, (3, 4))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?")
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # one of the processes sharing a directory
        job = json.loads(args.child)
        emit(epoch(job["source"], job["options"], job["seed"]))
        return

    with tempfile.TemporaryDirectory() as scratch:
        source = args.source
        if source is None:
            source = str(Path(scratch) / "criteo")
            _gen.generate(Path(source), _gen.GenOptions(preset="criteo", rows=args.rows, files=4,
                                                        row_group_size=20_000), progress=False)
        base = {"batch_size": args.batch_size, "shuffle_window": 60_000, "num_threads": 2}
        runs = [measure(source, Path(scratch) / "caches", base) for _ in range(args.repeats)]
        print(f"{'phase':<42} {'M rows/s (per process)':>24}  hits misses evictions (last run)")
        for phase, last in runs[-1].items():
            rates = [median_of((run[phase][p] for run in runs), "rows_per_s") / 1e6
                     for p in range(len(last))]
            counts = "; ".join(f"{r['hits']} {r['misses']} {r['evictions']}" for r in last)
            print(f"{phase:<42} {' / '.join(f'{r:.3f}' for r in rates):>24}  {counts}")


if __name__ == "__main__":
    main()
