"""Partition pruning: a filter on the partition column of a 365-partition dataset
(`date=2025-01-01/` … `date=2025-12-31/`, written by pyarrow's write_dataset) against the
equivalent filter on a plain column holding the same date in every row (`day`): files opened
(footers read), metadata requests, files pruned, and seconds from `stoker.Loader(...)` to the
first batch. Every measurement runs in a fresh process; medians of --repeats. Local disk (the
page cache warm after the first run), and with --s3 an S3-compatible server (moto, on loopback)
behind a proxy adding --latency-ms to every request, as a remote store would.

    python benchmarks/studies/partition_pruning.py [--rows-per-day 20000] [--repeats 5] [--s3]
        [--latency-ms 20] [--workdir /tmp/stoker-partition-pruning]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
from stoker_devtools.bench import emit, median_of, run_json, timed
from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer

DAYS = [(datetime.date(2025, 1, 1) + datetime.timedelta(days=d)).isoformat() for d in range(365)]
TARGET = "2025-06-01"
FILTERS = {"partition column": "date", "plain column": "day"}


def generate(out: Path, rows_per_day: int) -> None:
    """365 partitions of one file each; `day` repeats the partition's date as a file column."""
    if (out / "_SUCCESS").exists():
        return
    rows = rows_per_day * len(DAYS)
    ids = np.arange(rows, dtype=np.int64)
    days = np.repeat(np.array(DAYS), rows_per_day)
    table = pa.table({"row_id": ids, "x": (ids % 1000).astype(np.float32),
                      "label": (ids % 2).astype(np.int32), "day": days, "date": days})
    ds.write_dataset(table, out, format="parquet", partitioning=["date"],
                     partitioning_flavor="hive", max_rows_per_group=rows_per_day // 4,
                     existing_data_behavior="overwrite_or_ignore")
    (out / "_SUCCESS").write_text("")  # as Spark leaves it: skipped


def child(spec: dict) -> None:
    """Loader() and its first batch, in this fresh process; JSON on stdout."""
    import pyarrow.compute as pc
    import stoker

    def first_batch() -> stoker.Loader:
        loader = stoker.Loader(spec["source"], partitioning="hive",
                               columns=["row_id", "x", "label"], batch_size=4096, seed=1,
                               filter=pc.field(spec["column"]) == TARGET,
                               storage_options=spec.get("storage"))
        next(iter(loader))
        return loader

    loader, seconds = timed(first_batch)
    stats = loader.stats()
    emit({"seconds": seconds, "batches": len(loader),
          **{k: stats[k] for k in ("files_opened", "files_pruned", "metadata_requests",
                                   "row_groups_pruned")}})


def measure(source: str, column: str, repeats: int, storage: dict | None) -> dict:
    spec = {"source": source, "column": column, "storage": storage}
    runs = [run_json([sys.executable, __file__, "--child", json.dumps(spec)])
            for _ in range(repeats)]
    summary = {k: runs[-1][k] for k in ("files_opened", "files_pruned", "metadata_requests",
                                        "row_groups_pruned")}
    summary["batches"] = runs[-1]["batches"]
    summary["seconds_median"] = median_of(runs, "seconds")
    summary["seconds_all"] = [round(r["seconds"], 4) for r in runs]
    return summary


def upload(local: Path, endpoint: str) -> None:
    fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, endpoint_override=endpoint,
                           scheme="http", region="us-east-1", allow_bucket_creation=True)
    fs.create_dir("bench")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        pafs.copy_files(str(path), f"bench/days/{path.relative_to(local)}",
                        destination_filesystem=fs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows-per-day", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--s3", action="store_true")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--workdir", default="/tmp/stoker-partition-pruning")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    data = Path(args.workdir) / f"days-{args.rows_per_day}"
    generate(data, args.rows_per_day)
    print(f"dataset: {data} ({len(DAYS)} partitions, {args.rows_per_day} rows each); "
          f"load average {os.getloadavg()[0]:.2f}")
    results = {"local": {}}
    for name, column in FILTERS.items():
        results["local"][name] = measure(str(data), column, args.repeats, None)
        print(f"local, filter on the {name}: {json.dumps(results['local'][name])}")
    if args.s3:
        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        server = MotoServer()
        proxy = FaultProxy(server.endpoint, latency=args.latency_ms / 1000)
        try:
            upload(data, server.endpoint)
            storage = {"endpoint_override": proxy.endpoint, "scheme": "http",
                       "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
            key = f"s3 +{args.latency_ms:g} ms"
            results[key] = {}
            for name, column in FILTERS.items():
                results[key][name] = measure("s3://bench/days/", column, args.repeats, storage)
                print(f"{key}, filter on the {name}: {json.dumps(results[key][name])}")
        finally:
            proxy.stop()
            server.stop()
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
