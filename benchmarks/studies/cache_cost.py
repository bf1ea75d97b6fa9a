"""The disk cache's worth: a cold epoch (reading the source, decoding, transforming, writing
the cache) against warm epochs (served from the cache), on a criteo-preset dataset with the
realistic transform spec of benchmarks/studies/transform_cost.py; warm throughput in GB/s next to a
plain memory-copy bandwidth measured in the same run; the cache's size against the
dataset's. Each epoch runs in a fresh process; medians of --repeats.

    python benchmarks/studies/cache_cost.py DATASET [--repeats 3] [--num-threads 2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from stoker_devtools.bench import emit, listed, median_of, run_json
from transform_cost import DENSE, SPARSE, SPEC  # this folder's


def epoch(source: str, cache: str, threads: int) -> dict:
    import stoker

    started = time.perf_counter()
    loader = stoker.Loader(source, columns=["label", *DENSE, *SPARSE], batch_size=4096, seed=1,
                           num_threads=threads, transforms=SPEC, cache_dir=cache)
    rows = delivered = 0
    for batch in loader:
        rows += len(batch["label"])
        delivered += sum(a.nbytes for a in batch.values())
    seconds = time.perf_counter() - started
    stats = loader.stats()
    return {"seconds": seconds, "rows_per_s": rows / seconds, "gb_per_s": delivered / seconds / 1e9,
            "hits": stats["cache_hits"], "misses": stats["cache_misses"]}


def memcpy_gb_per_s() -> float:
    source = np.ones(256 * 2**20 // 8)  # 256 MiB, far beyond the caches
    target = np.empty_like(source)
    times = []
    for _ in range(5):
        started = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - started)
    return source.nbytes / min(times) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        emit(epoch(args.source, args.child, args.num_threads))
        return

    def child(cache: str) -> dict:
        return run_json([sys.executable, __file__, args.source, "--child", cache,
                         "--num-threads", str(args.num_threads)])

    cold, warm, size = [], [], 0
    for _ in range(args.repeats):
        cache = tempfile.mkdtemp(prefix="stoker-cache-bench-")
        try:
            cold.append(child(cache))
            warm.append(child(cache))
            size = sum(p.stat().st_size for p in Path(cache).rglob("*.stkc"))
        finally:
            shutil.rmtree(cache)
    assert all(w["misses"] == 0 for w in warm), "a warm epoch missed"
    copy = memcpy_gb_per_s()
    dataset = sum(p.stat().st_size for p in Path(args.source).glob("*.parquet"))
    cold_m = median_of(cold, "rows_per_s")
    warm_m = median_of(warm, "rows_per_s")
    warm_gb = median_of(warm, "gb_per_s")

    def rates(runs: list[dict]) -> str:
        return listed((r["rows_per_s"] for r in runs), 1e-6)

    print(f"cold: {rates(cold)} M rows/s "
          f"(median {cold_m / 1e6:.2f}M)")
    print(f"warm: {rates(warm)} M rows/s "
          f"(median {warm_m / 1e6:.2f}M, {warm_gb:.2f} GB/s delivered)")
    print(f"warm / cold: {warm_m / cold_m:.2f}x; memory copy: {copy:.2f} GB/s "
          f"(warm delivers {warm_gb / copy:.0%} of it)")
    print(f"cache on disk: {size / 1e6:.0f} MB for a {dataset / 1e6:.0f} MB dataset "
          f"({size / dataset:.1f}x: entries are uncompressed, for zero-copy reads)")


if __name__ == "__main__":
    main()
