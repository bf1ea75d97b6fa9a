"""Object storage with latency: Stoker reading a dataset from a local S3-compatible server
(moto) behind a proxy that adds a fixed delay to every request, against reading the same
files from local disk with the same decode threads. Each figure is a median of --repeats
epochs; local and S3 epochs alternate.

    python benchmarks/s3_latency.py DATASET [--latency-ms 20] [--repeats 3] [--num-threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.fs as pafs
import stoker

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from s3_support import KEY, SECRET, FaultProxy, MotoServer


def epoch(source, threads: int, **kwargs) -> tuple[float, dict]:
    started = time.perf_counter()
    loader = stoker.Loader(source, batch_size=4096, seed=1, num_threads=threads, **kwargs)
    rows = sum(len(b["label"]) for b in loader)
    return rows / (time.perf_counter() - started), loader.stats()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--io-threads", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

    server = MotoServer()
    proxy = FaultProxy(server.endpoint, latency=args.latency_ms / 1000)
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, scheme="http",
                               endpoint_override=server.endpoint, region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("bench")
        files = sorted(args.source.glob("*.parquet"))
        for path in files:
            pafs.copy_files(str(path), f"bench/data/{path.name}", destination_filesystem=fs)
        options = {"endpoint_override": proxy.endpoint, "scheme": "http", "region": "us-east-1",
                   "access_key": KEY, "secret_key": SECRET, "io_threads": args.io_threads}
        # The store's own ceiling: the same objects fetched whole, 4 at a time, no decoding.
        through_proxy = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, scheme="http",
                                          endpoint_override=proxy.endpoint, region="us-east-1")
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            fetched = sum(pool.map(
                lambda p: len(through_proxy.open_input_file(f"bench/data/{p.name}").read()),
                files))
        store_mb_s = fetched / (time.perf_counter() - started) / 1e6
        local, remote, stats = [], [], None
        for _ in range(args.repeats):
            local.append(epoch(args.source, args.num_threads)[0])
            rate, stats = epoch("s3://bench/data/", args.num_threads, storage_options=options)
            remote.append(rate)
    finally:
        proxy.stop()
        server.stop()
    local_m, remote_m = statistics.median(local), statistics.median(remote)
    row_groups = stats["units_read"]
    print(f"{len(files)} files, {row_groups} row groups, {args.latency_ms:g} ms added per "
          f"request, {args.num_threads} decode threads, {args.io_threads} I/O threads")
    print(f"local disk: {', '.join(f'{r / 1e6:.2f}' for r in local)} M rows/s "
          f"(median {local_m / 1e6:.2f}M)")
    print(f"S3 + {args.latency_ms:g} ms: {', '.join(f'{r / 1e6:.2f}' for r in remote)} M rows/s "
          f"(median {remote_m / 1e6:.2f}M)")
    print(f"ratio S3 / local: {remote_m / local_m:.2f}")
    rows = stats["rows"] / args.repeats
    print(f"the store alone serves {store_mb_s:.0f} MB/s (whole objects, 4 at a time); Stoker "
          f"fetched {stats['bytes_fetched'] / args.repeats / rows * remote_m / 1e6:.0f} MB/s")
    print(f"per row group: {stats['requests'] / row_groups:.1f} requests, "
          f"{stats['bytes_fetched'] / row_groups / 1e6:.2f} MB fetched, "
          f"{stats['bytes_read'] / row_groups / 1e6:.2f} MB needed; retries {stats['retries']}")


if __name__ == "__main__":
    main()
