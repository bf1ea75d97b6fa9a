"""What receiving costs the trainer host: one `stoker serve` server pinned to --server-cpus,
each trainer epoch a fresh process pinned to --client-cpus, reading the same stream (epoch 0,
rank 0 of 1) four ways, alternated:

  doget          a plain pyarrow.flight DoGet of the stream's ticket, read_chunk() to the end
                 (no conversion): the bytes Flight itself moves per CPU-second
  remote-arrow   RemoteLoader(output="arrow")
  remote-numpy   RemoteLoader(output="numpy")
  remote-torch   RemoteLoader(output="torch")

Reported per case (medians of --repeats): rows/s, GB/s received, the trainer process's
CPU-seconds (user + system, its getrusage: the kernel's receive path included) per million
rows and per GB, GB/s per trainer core (bytes over CPU-seconds) and that over DoGet's.

    python benchmarks/receive_cost.py DATASET [--repeats 5] [--server-cpus 1]
        [--client-cpus 0] [--rows 2000000] [--out results.json]

A DATASET directory with no Parquet files in it is first filled with --rows rows of the
criteo preset in 4 files (what `make bench` does).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

from stoker_devtools.bench import emit, interleaved, medians, run_json, write_json
from stoker_devtools.serve import spawn

BATCH = 4096
CASES = ("doget", "remote-arrow", "remote-numpy", "remote-torch")


def cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def doget_batches(location: str):
    """The stream's batches as a plain pyarrow.flight client reads them."""
    from pyarrow import flight
    from stoker._remote import client as _client

    servers = _client.Servers([location], token=None, tls_root_certs=None,
                              reconnect_timeout=10.0)
    ticket = servers.ticket({"epoch": 0, "rank": 0, "world_size": 1, "rounds": []})
    reader = flight.FlightClient(location).do_get(flight.Ticket(ticket))
    while True:
        try:
            yield reader.read_chunk().data
        except StopIteration:
            return


def one_epoch(kind: str, location: str) -> dict[str, Any]:
    import stoker

    loader = None
    if kind == "doget":
        batches = doget_batches(location)
    else:
        loader = stoker.RemoteLoader([location], batch_size=BATCH,
                                     output=kind.removeprefix("remote-"))
        batches = iter(loader)
    started, (user0, sys0) = time.perf_counter(), cpu()
    rows = size = 0
    for batch in batches:
        rows += batch.num_rows if kind in ("doget", "remote-arrow") else len(batch["label"])
        if kind == "doget":
            size += batch.get_total_buffer_size()
    seconds = time.perf_counter() - started
    user, system = cpu()
    if loader is not None:
        size = loader.stats()["bytes_received"]
    columns = unaligned_64 = unaligned_8 = 0
    if kind == "doget":  # untimed, a second read: where TensorFlow's output copies (tensors.cc)
        for batch in doget_batches(location):
            for column in batch.columns:
                values = column.buffers()[-1]
                columns += 1
                unaligned_64 += values is not None and values.address % 64 != 0
                unaligned_8 += values is not None and values.address % 8 != 0
    seconds_cpu = (user - user0) + (system - sys0)
    return {"rows": rows, "bytes": size, "seconds": seconds, "rows_per_s": rows / seconds,
            "gb_per_s": size / seconds / 1e9, "user_seconds": user - user0,
            "system_seconds": system - sys0, "cpu_per_m_rows": seconds_cpu / rows * 1e6,
            "cpu_per_gb": seconds_cpu / (size / 1e9) if size else 0.0,
            "gb_per_core_s": size / seconds_cpu / 1e9 if seconds_cpu else 0.0,
            **({"columns": columns, "unaligned_64": unaligned_64, "unaligned_8": unaligned_8}
               if kind == "doget" else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--server-cpus", default="1")
    parser.add_argument("--client-cpus", default="0")
    parser.add_argument("--server-threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--out", help="also write the runs and medians here as JSON")
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--location", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        emit(one_epoch(args.one, args.location))
        return
    if not any(Path(args.source).glob("*.parquet")):
        from stoker.cli import gen as _gen

        _gen.generate(Path(args.source), _gen.GenOptions(preset="criteo", rows=args.rows,
                                                         files=4), progress=False)
    server, location = spawn(args.source, "--batch-size", str(BATCH), "--num-threads",
                             str(args.server_threads), prefix=["taskset", "-c", args.server_cpus])
    load_before = os.getloadavg()
    try:
        cases = {kind: lambda _, kind=kind: run_json(
            ["taskset", "-c", args.client_cpus, sys.executable, __file__, args.source,
             "--one", kind, f"--location={location}"]) for kind in args.cases.split(",")}
        runs = interleaved(cases, args.repeats)
    finally:
        server.terminate()
        server.wait()
    load_after = os.getloadavg()
    summary = {kind: medians(results) for kind, results in runs.items()}
    floor = summary.get("doget", {}).get("gb_per_core_s")
    print(f"{'':>14} {'M rows/s':>9} {'GB/s':>6} {'CPU s/M rows':>13} {'CPU s/GB':>9} "
          f"{'user/sys s':>11} {'GB/s/core':>10} {'÷ DoGet':>8}")
    for kind, med in summary.items():
        ratio = f"{med['gb_per_core_s'] / floor:.2f}" if floor else "-"
        print(f"{kind:>14} {med['rows_per_s'] / 1e6:>9.2f} {med['gb_per_s']:>6.2f} "
              f"{med['cpu_per_m_rows']:>13.3f} {med['cpu_per_gb']:>9.3f} "
              f"{med['user_seconds']:>5.2f}/{med['system_seconds']:<5.2f} "
              f"{med['gb_per_core_s']:>10.2f} {ratio:>8}")
    if "doget" in summary:
        doget = summary["doget"]
        print(f"received column values not 64-byte aligned (TensorFlow output copies them): "
              f"{doget['unaligned_64']:.0f} of {doget['columns']:.0f}; not 8-byte aligned: "
              f"{doget['unaligned_8']:.0f}")
    print(f"(server on CPU {args.server_cpus} with {args.server_threads} threads, each trainer "
          f"epoch a fresh process on CPU {args.client_cpus}; loopback; medians of {args.repeats};"
          f" load average {load_before[0]:.2f} before, {load_after[0]:.2f} after)")
    if args.out:
        write_json(args.out, {"medians": summary, "runs": runs,
                              "load_average": [load_before[0], load_after[0]]}, indent=1)


if __name__ == "__main__":
    main()
