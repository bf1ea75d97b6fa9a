"""Streaming over Arrow Flight on loopback: a RemoteLoader reading from one and from two
`stoker serve` servers, against a local Loader with the same threads, same data and options.
Reports batches/s, MB/s and the client's CPU seconds per million rows (the trainer host's
cost). Epochs alternate; medians of --repeats.

    python benchmarks/serve_throughput.py DATASET [--repeats 3] [--num-threads 2]
    python benchmarks/serve_throughput.py DATASET --pin [--server-cpus 1] [--client-cpus 0]
        [--rows 2000000] [--out results.json]

A DATASET directory with no Parquet files in it is first filled with --rows rows of the
criteo preset in 4 files (what `make bench` does).

--pin measures the protocol rather than two processes sharing cores: the server runs on
--server-cpus (taskset), the client on --client-cpus, each epoch in a fresh client process.
The local Loader is measured twice: on the server's cores (the same cores make the batches,
and the consumer shares them), and on the server's and the client's cores together (all the
cores the remote setup uses).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import stoker
from stoker.cli import gen as _gen
from stoker_devtools.bench import emit, interleaved, median_of, medians, run_json, write_json
from stoker_devtools.serve import spawn

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


def start_server(source: str, threads: int, cpus: str | None = None) -> tuple[subprocess.Popen, str]:
    return spawn(source, "--batch-size", str(BATCH), "--num-threads", str(threads),
                 "--chunk-batches", "16", prefix=["taskset", "-c", cpus] if cpus else [])


def maker(args: argparse.Namespace, kind: str, locations: list[str]):
    if kind == "local":
        return lambda: stoker.Loader(args.source, batch_size=BATCH, num_threads=args.num_threads)
    return lambda: stoker.RemoteLoader(locations, batch_size=BATCH)


def one_epoch_in(cpus: str, args: argparse.Namespace, kind: str, locations: list[str]) -> dict:
    """One epoch in a fresh process pinned to `cpus`."""
    return run_json(
        ["taskset", "-c", cpus, sys.executable, __file__, args.source, "--one", kind,
         "--num-threads", str(args.num_threads), *[f"--location={x}" for x in locations]])


def report(runs: dict[str, list[dict]], baseline: str) -> None:
    local = median_of(runs[baseline], "rows_per_s")
    print(f"{'':>24} {'M rows/s':>9} {'batches/s':>10} {'MB/s':>8} {'client CPU s/M rows':>20}"
          f" {'vs ' + baseline:>24}")
    for name, results in runs.items():
        med = medians(results)
        print(f"{name:>24} {med['rows_per_s'] / 1e6:>9.2f} {med['batches_per_s']:>10.0f} "
              f"{med['mb_per_s']:>8.0f} {med['cpu_per_m_rows']:>20.3f} "
              f"{med['rows_per_s'] / local:>24.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--pin", action="store_true")
    parser.add_argument("--server-cpus", default="1")
    parser.add_argument("--client-cpus", default="0")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--out", help="also write the medians here as JSON")
    parser.add_argument("--one", choices=["local", "remote"], help=argparse.SUPPRESS)
    parser.add_argument("--location", action="append", default=[], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        emit(epoch(maker(args, args.one, args.location)))
        return
    if not any(Path(args.source).glob("*.parquet")):
        _gen.generate(Path(args.source), _gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                      progress=False)
    if args.pin:
        both = ",".join(sorted({*args.server_cpus.split(","), *args.client_cpus.split(",")}))
        servers = [start_server(args.source, args.num_threads, args.server_cpus)]
        location = [servers[0][1]]
        plan = {
            f"local on cpus {args.server_cpus}": (args.server_cpus, "local"),
            f"local on cpus {both}": (both, "local"),
            f"server {args.server_cpus}, client {args.client_cpus}": (args.client_cpus, "remote"),
        }
        cases = {name: lambda _, cpus=cpus, kind=kind: one_epoch_in(cpus, args, kind, location)
                 for name, (cpus, kind) in plan.items()}
    else:
        servers = [start_server(args.source, args.num_threads) for _ in range(2)]
        locations = [location for _, location in servers]
        makers = {"local": maker(args, "local", []), "1 server": maker(args, "remote", locations[:1]),
                  "2 servers": maker(args, "remote", locations)}
        cases = {name: lambda _, make=make: epoch(make) for name, make in makers.items()}
    try:
        runs = interleaved(cases, args.repeats)
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait()
    report(runs, next(iter(runs)))
    if args.out:
        write_json(args.out, {name: medians(results) for name, results in runs.items()}, indent=1)
    print(f"({args.num_threads} threads per server and locally; loopback; medians of "
          f"{args.repeats}; " + ("each process pinned as named)" if args.pin else
                                 "the servers and the client share this machine's cores)"))


if __name__ == "__main__":
    main()
