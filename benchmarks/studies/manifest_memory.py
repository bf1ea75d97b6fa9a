"""Memory that grows with the dataset: the bytes a Loader holds per row group (its manifest:
every file's footer, the units) and an epoch's plan, at 10k, 100k and 1M row groups.
Synthetic datasets of tiny row groups (one row each, three columns: int64, float32, int32),
so the footers are all there is. Each size is measured in a fresh process: the bytes the
manifest and plan hold (their own accounting, exact), and the process's resident memory
after Loader() and at its peak (what the allocators kept and the footers decoded on the way).

    python benchmarks/studies/manifest_memory.py [--row-groups 10000 100000 1000000] [--workdir /tmp/..]
"""

from __future__ import annotations

import argparse
import resource
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from stoker_devtools.bench import emit, run_json, timed

GROUPS_PER_FILE = 1000


def generate(out: Path, row_groups: int) -> None:
    if (out / "done").exists():
        return
    out.mkdir(parents=True, exist_ok=True)

    def write(i: int) -> None:
        ids = np.arange(i * GROUPS_PER_FILE, (i + 1) * GROUPS_PER_FILE, dtype=np.int64)
        table = pa.table({"row_id": ids, "x": ids.astype(np.float32),
                          "label": (ids % 2).astype(np.int32)})
        pq.write_table(table, out / f"part-{i:05d}.parquet", row_group_size=1)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(row_groups // GROUPS_PER_FILE)))
    (out / "done").write_text("")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def peak_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def child(source: str, index: str) -> None:
    import stoker

    # The peak since exec starts at the parent's (fork copies its resident pages): reset it.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = rss_bytes()
    loader, seconds = timed(stoker.Loader, source, batch_size=4096, index=index, num_threads=1)
    after = rss_bytes()
    len(loader)  # plans an epoch: the unit order, the windows
    info = loader.dataset_info()
    emit({"rss_bytes": after - before, "loader_s": seconds, "peak_bytes": peak_bytes() - before,
          "manifest_bytes": info["manifest_bytes"], "plan_bytes": info["plan_bytes"],
          "row_groups": info["row_groups"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row-groups", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/stoker-manifest-memory"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    from stoker.cli import index as _index_cli

    print("| row groups | files | manifest B/rg | plan B/rg | RSS B/rg (footers / index) | "
          "peak B/rg (footers / index) | manifest + plan at this size | Loader() s "
          "(footers / index) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row_groups in args.row_groups:
        out = args.workdir / f"rg-{row_groups}"
        generate(out, row_groups)
        if not (out / "_metadata").exists():
            _index_cli.write(str(out))
        results = {}
        for index in ("ignore", "use"):
            results[index] = run_json([sys.executable, __file__, "--child", str(out), index])
        f, i = results["ignore"], results["use"]
        n = f["row_groups"]
        print(f"| {n:,} | {n // GROUPS_PER_FILE:,} | {f['manifest_bytes'] / n:,.0f} | "
              f"{f['plan_bytes'] / n:,.1f} | {f['rss_bytes'] / n:,.0f} / {i['rss_bytes'] / n:,.0f} | "
              f"{f['peak_bytes'] / n:,.0f} / {i['peak_bytes'] / n:,.0f} | "
              f"{(f['manifest_bytes'] + f['plan_bytes']) / 1e6:,.0f} MB | "
              f"{f['loader_s']:.2f} / {i['loader_s']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
