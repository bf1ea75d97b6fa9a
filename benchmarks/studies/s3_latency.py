"""Object storage with latency: Stoker reading a dataset from a local S3-compatible server
(moto) behind a proxy that adds a fixed delay to every request, against reading the same
files from local disk with the same decode threads. Each figure is a median of --repeats
epochs; local and S3 epochs alternate.

    python benchmarks/studies/s3_latency.py DATASET [--latency-ms 20] [--repeats 3] [--num-threads 2]

With --controller E: instead, one loader reads E epochs from the store with the controller
off (autotune=False: the fixed read-ahead of one row group per worker) and one with it on
(the read-ahead it moves when the workers idle while the consumer waits), alternating
--repeats times: the median rows/s of epochs 2..E and the setting the controller ended at
(docs/autotune.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.fs as pafs
import stoker
from stoker_devtools.bench import epoch_rate, listed, timed
from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer


def epoch(source, threads: int, **kwargs) -> tuple[float, dict]:
    """Rows/s of one epoch, the Loader's construction included, and its stats."""
    def read() -> tuple[int, dict]:
        loader = stoker.Loader(source, batch_size=4096, seed=1, num_threads=threads, **kwargs)
        return sum(len(b["label"]) for b in loader), loader.stats()

    (rows, stats), seconds = timed(read)
    return rows / seconds, stats


def controlled(source: str, threads: int, epochs: int, step_s: float,
               **kwargs) -> tuple[float, dict]:
    """One loader, `epochs` epochs with a training step of `step_s` per batch: the median
    rows/s after the first epoch, and its stats."""
    loader = stoker.Loader(source, batch_size=4096, seed=1, num_threads=threads, **kwargs)
    def stepped() -> Iterator[dict]:  # the training step after each batch, on the clock
        for batch in loader:
            yield batch
            if step_s:
                time.sleep(step_s)

    rates = [epoch_rate(stepped(), lambda batch: len(batch["label"])) for _ in range(epochs)]
    return statistics.median(rates[1:] or rates), loader.stats()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--io-threads", type=int, default=16)
    parser.add_argument("--controller", type=int, default=0, metavar="EPOCHS")
    parser.add_argument("--step-ms", type=float, default=0.0,
                        help="with --controller: a training step per batch (the controller "
                             "judges a move by the consumer's waits; with none it always waits)")
    parser.add_argument("--unshuffled", action="store_true",
                        help="read in file order (a window is one row group)")
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
        def fetch_all() -> int:
            with ThreadPoolExecutor(4) as pool:
                return sum(pool.map(
                    lambda p: len(through_proxy.open_input_file(f"bench/data/{p.name}").read()),
                    files))

        fetched, seconds = timed(fetch_all)
        store_mb_s = fetched / seconds / 1e6
        if args.controller:
            compare_controller(args, options)
            return
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
    print(f"local disk: {listed(local, 1e-6)} M rows/s (median {local_m / 1e6:.2f}M)")
    print(f"S3 + {args.latency_ms:g} ms: {listed(remote, 1e-6)} M rows/s "
          f"(median {remote_m / 1e6:.2f}M)")
    print(f"ratio S3 / local: {remote_m / local_m:.2f}")
    rows = stats["rows"] / args.repeats
    print(f"the store alone serves {store_mb_s:.0f} MB/s (whole objects, 4 at a time); Stoker "
          f"fetched {stats['bytes_fetched'] / args.repeats / rows * remote_m / 1e6:.0f} MB/s")
    print(f"per row group: {stats['requests'] / row_groups:.1f} requests, "
          f"{stats['bytes_fetched'] / row_groups / 1e6:.2f} MB fetched, "
          f"{stats['bytes_read'] / row_groups / 1e6:.2f} MB needed; retries {stats['retries']}")


def compare_controller(args: argparse.Namespace, options: dict) -> None:
    off, on, tune = [], [], {}
    order = {"shuffle": False} if args.unshuffled else {}
    for _ in range(args.repeats):
        off.append(controlled("s3://bench/data/", args.num_threads, args.controller,
                              args.step_ms / 1e3, storage_options=options, autotune=False,
                              **order)[0])
        rate, stats = controlled("s3://bench/data/", args.num_threads, args.controller,
                                 args.step_ms / 1e3, storage_options=options, **order)
        on.append(rate)
        tune = stats["autotune"]
    print(f"S3 + {args.latency_ms:g} ms, {args.num_threads} decode threads, {args.io_threads} "
          f"I/O threads, {args.controller} epochs per loader, "
          f"{'unshuffled' if args.unshuffled else 'shuffled'}, a {args.step_ms:g} ms step "
          f"(rows/s: median of epochs 2..)")
    print(f"controller off: {listed(off, 1e-6, '.3f')} M rows/s")
    print(f"controller on:  {listed(on, 1e-6, '.3f')} M rows/s")
    print(f"ratio on / off: {statistics.median(on) / statistics.median(off):.2f}; the last "
          f"run ended at prefetch {tune['prefetch']}, read-ahead {tune['read_ahead']} "
          f"(max {tune['max_read_ahead']}), {tune['decisions']} decisions:")
    for decision in tune["recent"][-8:]:
        print(f"  {decision['action']}: {decision['reason']}")


if __name__ == "__main__":
    main()
