"""Streaming over Arrow Flight on loopback: a RemoteLoader reading from one and from two
`stoker serve` servers, against a local Loader with the same threads, same data and options.
Reports batches/s, MB/s and the client's CPU seconds per million rows (the trainer host's
cost). Epochs alternate; medians of --repeats.

    python benchmarks/serve_throughput.py DATASET [--repeats 3] [--num-threads 2]
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import time

import stoker

BATCH = 4096


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def epoch(make) -> dict:
    loader = make()
    started, cpu_started = time.perf_counter(), cpu()
    rows = batches = size = 0
    for batch in loader:
        rows += len(batch["label"])
        batches += 1
        size += sum(a.nbytes for a in batch.values())
    seconds = time.perf_counter() - started
    return {"rows_per_s": rows / seconds, "batches_per_s": batches / seconds,
            "mb_per_s": size / seconds / 1e6, "cpu_per_m_rows": (cpu() - cpu_started) / rows * 1e6}


def start_server(source: str, threads: int) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "stoker", "serve", source, "--port", "0", "--batch-size",
         str(BATCH), "--num-threads", str(threads), "--chunk-batches", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"listening on (\S+)", process.stdout.readline())
    assert match, "server did not start"
    return process, match.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    args = parser.parse_args()
    servers = [start_server(args.source, args.num_threads) for _ in range(2)]
    try:
        locations = [location for _, location in servers]
        runs: dict[str, list[dict]] = {"local": [], "1 server": [], "2 servers": []}
        makers = {
            "local": lambda: stoker.Loader(args.source, batch_size=BATCH,
                                           num_threads=args.num_threads),
            "1 server": lambda: stoker.RemoteLoader(locations[:1], batch_size=BATCH),
            "2 servers": lambda: stoker.RemoteLoader(locations, batch_size=BATCH),
        }
        for _ in range(args.repeats):
            for name, results in runs.items():
                results.append(epoch(makers[name]))
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait()
    local = statistics.median(r["rows_per_s"] for r in runs["local"])
    print(f"{'':>10} {'M rows/s':>9} {'batches/s':>10} {'MB/s':>8} {'client CPU s/M rows':>20}"
          f" {'vs local':>9}")
    for name, results in runs.items():
        med = {k: statistics.median(r[k] for r in results) for k in results[0]}
        print(f"{name:>10} {med['rows_per_s'] / 1e6:>9.2f} {med['batches_per_s']:>10.0f} "
              f"{med['mb_per_s']:>8.0f} {med['cpu_per_m_rows']:>20.3f} "
              f"{med['rows_per_s'] / local:>9.2f}")
    print(f"({args.num_threads} threads per server and locally; loopback; the servers and the "
          "client share this machine's cores)")


if __name__ == "__main__":
    main()
