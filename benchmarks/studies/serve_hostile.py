"""A well-behaved client's throughput from `stoker serve` while other clients misbehave
(docs/reliability.md): alone; beside 8 clients that read one batch and stop; during a
flood of 300 held connections sending garbage; during a storm of DoGets refused as busy or
as bad tickets. All on loopback; medians of --repeats epochs per condition.

    python benchmarks/studies/serve_hostile.py --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from statistics import median

import pyarrow as pa
from pyarrow import flight
from stoker_devtools.bench import epoch_rate, listed
from stoker_devtools.serve import process_usage

OPTIONS = {"batch_size": 4096, "seed": 1}


def start_server(source: Path, max_streams: int) -> tuple[subprocess.Popen, str, int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "stoker", "serve", str(source), "--port", "0",
         "--batch-size", str(OPTIONS["batch_size"]), "--seed", str(OPTIONS["seed"]),
         "--max-streams", str(max_streams)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"listening on (\S+://([\d.]+):(\d+))", server.stdout.readline())
    if not match:
        server.kill()
        raise RuntimeError("stoker serve did not start")
    return server, match.group(1), int(match.group(3))


def good_ticket(location: str) -> bytes:
    [info] = list(flight.FlightClient(location).list_flights())
    config = json.loads(info.descriptor.command)["config"]
    return f"stoker1;config={config};epoch=0;rank=0;world=1".encode()


@contextmanager
def stalled_clients(location: str, count: int = 8) -> Iterator[None]:
    ticket = good_ticket(location)
    held = []
    for _ in range(count):
        client = flight.FlightClient(location)
        reader = client.do_get(flight.Ticket(ticket))
        reader.read_chunk()
        held.append((client, reader))
    try:
        yield
    finally:
        for client, reader in held:
            reader.cancel()
            client.close()


@contextmanager
def connection_flood(port: int, count: int = 300) -> Iterator[None]:
    rng = random.Random(3)
    held = []
    for i in range(count):
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        if i % 2:
            conn.sendall(bytes(rng.randrange(256) for _ in range(4096)))
        held.append(conn)
    try:
        yield
    finally:
        for conn in held:
            conn.close()


@contextmanager
def refused_storm(location: str, threads: int = 4) -> Iterator[dict[str, int]]:
    """Clients calling DoGet in a loop with tickets the server refuses (bad, foreign)."""
    stop = threading.Event()
    counts = {"calls": 0}
    bad = [b"not a ticket", b"stoker1;config=" + b"0" * 32, b"stoker1;world=0"]

    def storm() -> None:
        client = flight.FlightClient(location)
        i = 0
        while not stop.is_set():
            with suppress(pa.ArrowException, OSError):  # every one of these is refused
                client.do_get(flight.Ticket(bad[i % len(bad)])).read_all()
            counts["calls"] += 1
            i += 1
        client.close()

    workers = [threading.Thread(target=storm) for _ in range(threads)]
    for worker in workers:
        worker.start()
    try:
        yield counts
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def remote_rate(location: str) -> float:
    import stoker

    return epoch_rate(stoker.RemoteLoader([location], **OPTIONS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from stoker.cli import gen as _gen

    source = Path(tempfile.mkdtemp(prefix="stoker-hostile-")) / "criteo"
    _gen.generate(source, _gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                  progress=False)
    server, location, port = start_server(source, max_streams=16)
    conditions = {
        "alone": lambda: _null(),
        "beside 8 stalled clients": lambda: stalled_clients(location),
        "during a 300-connection flood": lambda: connection_flood(port),
        "during a storm of refused DoGets": lambda: refused_storm(location),
    }
    results = {}
    try:
        remote_rate(location)  # warm-up: page cache, first-touch pages
        for name, condition in conditions.items():
            rates, peak = [], 0
            with condition():
                for _ in range(args.repeats):
                    rates.append(remote_rate(location))
                    peak = max(peak, process_usage(server.pid)["rss"])
            results[name] = {"rows_per_s": median(rates), "runs": rates,
                             "server_rss_mb": round(peak / 1e6)}
            print(f"{name:34s} {median(rates) / 1e6:6.2f}M rows/s  (runs "
                  f"{listed(rates, 1e-6, suffix='M')}; server RSS {peak / 1e6:.0f} MB)",
                  flush=True)
        assert server.poll() is None, "the server died"
    finally:
        server.terminate()
        server.wait(timeout=30)
    alone = results["alone"]["rows_per_s"]
    for name, result in results.items():
        print(f"{name:34s} {result['rows_per_s'] / alone:5.2f}x alone")
    return 0


@contextmanager
def _null() -> Iterator[None]:
    yield


if __name__ == "__main__":
    sys.exit(main())
