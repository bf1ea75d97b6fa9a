"""Startup at scale: seconds to the first batch and requests per rank for datasets of many
small files on an S3-compatible server (moto, on loopback) behind a proxy that adds a fixed
delay to every request, with and without the dataset index (`_metadata`, written by `stoker
index`), from a cold start and from a resume. Every measurement runs in a fresh process (a
new S3 client, as a restarted rank has); the proxy counts every request that process makes
(listing, HEAD, GET) until its first batch. --index picks the modes: "trust" (the index
defines the files: no listing, each file checked at its first read), "checksums" (trust, the
index written by `stoker index --checksums`: each column chunk read is checked against its
checksum instead, no per-file request), "use" (listing, compared with the index), "ignore"
(listing, every footer read).

    python benchmarks/studies/startup.py [--files 2000 20000] [--index checksums trust use ignore]
                                 [--latency-ms 20] [--workdir /tmp/...]
    python benchmarks/studies/startup.py --sweep [--latency-ms 20]

Datasets are generated under --workdir once (files of --row-groups row groups of
--rows-per-group rows: row_id int64, x float32, label int32) and uploaded to the server.
--sweep measures the first batch against the shuffle window and the row-group size instead:
2M rows in row groups of 250, 1,000 and 4,000 rows (4 per file), windows of 16k, 64k and
256k rows, with the index, cold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from stoker_devtools.bench import emit, run_json
from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer

BATCH_SIZE = 4096
RESUME_AFTER = 25  # batches consumed before the checkpoint a resumed rank starts from


def storage(endpoint: str, **extra) -> dict:
    return {"endpoint_override": endpoint, "scheme": "http", "region": "us-east-1",
            "access_key": KEY, "secret_key": SECRET, **extra}


def generate(out: Path, files: int, row_groups: int, rows_per_group: int) -> None:
    if (out / "done").exists():
        return
    out.mkdir(parents=True, exist_ok=True)
    rows = row_groups * rows_per_group

    def write(i: int) -> None:
        ids = np.arange(i * rows, (i + 1) * rows, dtype=np.int64)
        table = pa.table({"row_id": ids, "x": (ids % 1000).astype(np.float32),
                          "label": (ids % 2).astype(np.int32)})
        pq.write_table(table, out / f"part-{i:06d}.parquet", row_group_size=rows_per_group)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(files)))
    (out / "done").write_text("")


def upload(local: Path, fs: pafs.S3FileSystem, prefix: str) -> None:
    def put(path: Path) -> None:
        with fs.open_output_stream(f"{prefix}/{path.name}") as out:
            out.write(path.read_bytes())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, sorted(local.glob("*.parquet"))))


def child(spec: dict) -> None:
    """One rank's startup: Loader(), optionally a resume, the first batch; JSON on stdout."""
    import stoker

    started = time.perf_counter()
    loader = stoker.Loader(spec["source"], batch_size=BATCH_SIZE, seed=1, index=spec["index"],
                           shuffle_window=spec.get("shuffle_window"),
                           storage_options=spec["storage"])
    built = time.perf_counter()
    if spec.get("state") is not None:
        loader.load_state_dict(spec["state"])
    it = iter(loader)
    next(it)
    first = time.perf_counter()
    stats = loader.stats()
    state = None
    if spec.get("save_state"):
        for _ in range(RESUME_AFTER - 1):
            next(it)
        state = loader.state_dict()
    del it
    emit({"loader_s": built - started, "first_batch_s": first - started,
          "metadata_s": stats["metadata_seconds"], "metadata_requests": stats["metadata_requests"],
          "data_requests": stats["requests"], "index_used": stats["index_used"],
          "row_groups": loader.dataset_info()["row_groups"], "state": state})


def run_child(spec: dict) -> dict:
    return run_json([sys.executable, __file__, "--child", json.dumps(spec)])


def sweep(fs: pafs.S3FileSystem, server: MotoServer, proxy: FaultProxy, workdir: Path,
          latency_ms: float) -> None:
    from stoker.cli import index as _index_cli

    total_rows, row_groups = 2_000_000, 4
    print(f"\n{latency_ms:g} ms added per request; {total_rows:,} rows, {row_groups} row "
          f"groups per file; with the index, cold; batch_size {BATCH_SIZE}\n")
    print("| rows per row group | files | shuffle_window | first batch s | data requests |")
    print("|---:|---:|---:|---:|---:|")
    for rows_per_group in (250, 1000, 4000):
        files = total_rows // (row_groups * rows_per_group)
        local = workdir / f"files-{files}-{row_groups}x{rows_per_group}"
        generate(local, files, row_groups, rows_per_group)
        prefix = f"bench/sweep{rows_per_group}"
        upload(local, fs, prefix)
        _index_cli.write(f"s3://{prefix}/", storage_options=storage(server.endpoint))
        for window in (16_384, 65_536, 262_144):
            result = run_child({"source": f"s3://{prefix}/", "index": "use",
                                "shuffle_window": window, "storage": storage(proxy.endpoint)})
            print(f"| {rows_per_group:,} | {files:,} | {window:,} | "
                  f"{result['first_batch_s']:.2f} | {result['data_requests']:,} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--row-groups", type=int, default=4)
    parser.add_argument("--rows-per-group", type=int, default=250)
    parser.add_argument("--index", nargs="+", default=["checksums", "trust", "use", "ignore"],
                        choices=["checksums", "trust", "use", "ignore"])
    parser.add_argument("--latency-ms", type=float, default=20)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/stoker-startup"))
    parser.add_argument("--sweep", action="store_true",
                        help="first batch against shuffle window and row-group size")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    import stoker
    from stoker.cli import index as _index_cli

    server = MotoServer()
    proxy = FaultProxy(server.endpoint, latency=args.latency_ms / 1000)
    rows = []
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, scheme="http",
                               endpoint_override=server.endpoint, region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("bench")
        if args.sweep:
            sweep(fs, server, proxy, args.workdir, args.latency_ms)
            return
        for files in args.files:
            local = args.workdir / f"files-{files}-{args.row_groups}x{args.rows_per_group}"
            generate(local, files, args.row_groups, args.rows_per_group)
            prefix = f"bench/n{files}"
            started = time.perf_counter()
            upload(local, fs, prefix)
            print(f"{files} files uploaded in {time.perf_counter() - started:.0f} s",
                  file=sys.stderr)
            source = f"s3://{prefix}/"
            # `stoker index` through the proxy: what writing the index costs once. Its
            # upload goes to the server itself (the proxy does not relay multipart uploads).
            started = time.perf_counter()
            stoker.Loader(source, batch_size=BATCH_SIZE, index="ignore",
                          storage_options=storage(proxy.endpoint))  # reads every footer
            footers_s = time.perf_counter() - started
            report = _index_cli.write(source, storage_options=storage(server.endpoint))
            print(f"index: {report['bytes'] / 1e6:.1f} MB; footers through the proxy "
                  f"{footers_s:.1f} s", file=sys.stderr)
            state = run_child({"source": source, "index": "use", "save_state": True,
                               "storage": storage(server.endpoint)})["state"]
            # The modes on the plain index first; then the index again, with checksums.
            for index in sorted(args.index, key=lambda mode: mode == "checksums"):
                if index == "checksums":
                    started = time.perf_counter()
                    report = _index_cli.write(source, storage_options=storage(server.endpoint),
                                              overwrite=True, checksums=True)
                    print(f"index with checksums: {report['bytes'] / 1e6:.1f} MB, "
                          f"{report['bytes_checksummed'] / 1e6:.0f} MB of column chunks read "
                          f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)
                for start in ("cold", "resume"):
                    before = proxy.requests
                    result = run_child({"source": source,
                                        "index": "trust" if index == "checksums" else index,
                                        "storage": storage(proxy.endpoint),
                                        "state": state if start == "resume" else None})
                    result.update(files=files, index=index, start=start,
                                  requests=proxy.requests - before, load=os.getloadavg()[0])
                    result.pop("state")
                    rows.append(result)
                    print(json.dumps(result), file=sys.stderr)
    finally:
        proxy.stop()
        server.stop()
    print(f"\n{args.latency_ms:g} ms added per request; batch_size {BATCH_SIZE}; "
          f"{args.row_groups} row groups of {args.rows_per_group} rows per file; default "
          f"shuffle window, io_threads and metadata_threads\n")
    print("| files | index | start | Loader() s | of it, metadata s | first batch s | requests "
          "| metadata | data | load |")
    print("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['files']:,} | {r['index']} | {r['start']} | {r['loader_s']:.2f} | "
              f"{r['metadata_s']:.2f} | {r['first_batch_s']:.2f} | {r['requests']:,} | "
              f"{r['metadata_requests']:,} | {r['data_requests']:,} | {r['load']:.1f} |")


if __name__ == "__main__":
    main()
