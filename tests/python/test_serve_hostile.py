"""`stoker serve` against clients that mean harm or misbehave, all on loopback with loops
bounded in count and time: malformed, oversized and foreign tickets; thousands of concurrent
DoGets; clients that stop reading; connection floods; descriptors and actions that name other
files. After each, the server is up, its memory and threads are bounded, and a well-behaved
client still gets exactly the batches a local Loader gives."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from pyarrow import flight
from stoker.cli import gen as _gen
from stoker_devtools.serve import COLUMNS, OPTIONS, Server, process_usage

MiB = 1 << 20
REFUSED = (flight.FlightError, pa.ArrowException, OSError)


def local(source: Path) -> list:
    return list(stoker.Loader(source, columns=COLUMNS, **OPTIONS))


def config_of(server: Server) -> dict:
    [info] = list(flight.FlightClient(server.location).list_flights())
    return json.loads(info.descriptor.command)


def good_ticket(config: dict) -> bytes:
    return f"stoker1;config={config['config']};epoch=0;rank=0;world=1".encode()


def assert_serves_correctly(server: Server, source: Path) -> None:
    assert server.process.poll() is None, "the server died"
    assert_same_batches(list(stoker.RemoteLoader([server.location], **OPTIONS)), local(source))


def settle(server: Server, baseline: dict[str, int], key: str, slack: int,
           seconds: float = 20) -> int:
    """Waits until the server's `key` usage is back within `slack` of its baseline; returns
    the last reading (the caller asserts on it)."""
    deadline = time.monotonic() + seconds
    while True:
        value = process_usage(server.process.pid)[key]
        if value <= baseline[key] + slack or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def hostile_tickets(config: dict) -> list[bytes]:
    rng = random.Random(17)
    head = f"stoker1;config={config['config']}"
    return [
        b"",
        bytes(rng.randrange(256) for _ in range(200)),
        b"\xff" * 1000,
        b"stoker1;" + b";" * 5000,
        (head + ";config=" + "a" * MiB).encode(),          # oversized: refused unparsed
        b"stoker1;config=" + b"7" * (6 * MiB),               # above gRPC's message limit
        f"stoker1;config={'0' * 32};epoch=0".encode(),     # another configuration
        f"{head};world={(1 << 20) + 1}".encode(),          # world size above the limit
        f"{head};world=2147483647;rank=2147483646".encode(),
        f"{head};rounds={','.join(['1048576:0'] * 5)}".encode(),   # 5M ranks of rounds
        f"{head};rounds={','.join(['2:1', '3:1'] * 600)}".encode(),  # 1,200 rounds
        f"{head};epoch=-1".encode(),
        f"{head};shards=0".encode(),
        f"{head};shard=5;shards=2".encode(),
        f"{head};chunk=0".encode(),
        f"{head};first=-3".encode(),
        f"{head};rank=-1".encode(),
        f"{head};epoch=99999999999999999999".encode(),
        f"{head};../../etc/passwd=1".encode(),
    ]


def test_malformed_oversized_and_foreign_tickets_are_refused(criteo: Path, servers) -> None:
    server = servers()
    config = config_of(server)
    client = flight.FlightClient(server.location)
    baseline = process_usage(server.process.pid)
    options = flight.FlightCallOptions(timeout=30)
    for bad in hostile_tickets(config):
        with pytest.raises(REFUSED):
            client.do_get(flight.Ticket(bad), options).read_all()
        with pytest.raises(REFUSED):
            list(client.do_action(flight.Action("plan", bad), options))
    assert settle(server, baseline, "rss", 64 * MiB) <= baseline["rss"] + 64 * MiB
    assert_serves_correctly(server, criteo)


def test_descriptors_and_actions_cannot_reach_other_files(criteo: Path, servers,
                                                          tmp_path: Path) -> None:
    server = servers()
    client = flight.FlightClient(server.location)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"secret": list(range(7))}), other)
    served = config_of(server)
    # A path descriptor selects only epoch, world size and rank: a path is refused.
    for descriptor in (flight.FlightDescriptor.for_path("/etc/passwd"),
                       flight.FlightDescriptor.for_path(str(other)),
                       flight.FlightDescriptor.for_path("..", "..", "etc", "shadow"),
                       flight.FlightDescriptor.for_path("epoch=../../etc")):
        with pytest.raises((flight.FlightError, pa.ArrowInvalid),
                           match="is not key=value|non-negative integer"):
            client.get_flight_info(descriptor)
    # A command's bytes are never read as a request: the answer is the served dataset's.
    info = client.get_flight_info(
        flight.FlightDescriptor.for_command(json.dumps({"sources": [str(other)]})))
    assert info.schema.names == COLUMNS
    assert info.total_records == served["rows"]
    assert json.loads(info.descriptor.command) == served
    for action in ("../../etc/passwd", "read", "config;rm -rf /", "plan\x00"):
        with pytest.raises(REFUSED):
            list(client.do_action(flight.Action(action, str(other).encode())))
    assert {a.type for a in client.list_actions()} == {"config", "plan", "stats"}
    assert_serves_correctly(server, criteo)


@pytest.mark.not_under_asan  # bounds the server's resident memory
def test_thousands_of_concurrent_dogets(criteo: Path, servers) -> None:
    server = servers("--max-streams", "4")
    ticket = good_ticket(config_of(server))
    baseline = process_usage(server.process.pid)
    outcomes = {"read": 0, "busy": 0}
    lock = threading.Lock()

    def one_call(_: int) -> None:
        client = flight.FlightClient(server.location)
        try:
            reader = client.do_get(flight.Ticket(ticket), flight.FlightCallOptions(timeout=60))
            reader.read_chunk()
            reader.cancel()
            kind = "read"
        except flight.FlightUnavailableError as error:
            assert "server busy" in str(error)
            kind = "busy"
        finally:
            client.close()
        with lock:
            outcomes[kind] += 1

    def storm() -> dict[str, int]:
        with ThreadPoolExecutor(max_workers=64) as pool:
            done, pending = wait([pool.submit(one_call, i) for i in range(1000)], timeout=240)
            assert not pending, f"{len(pending)} DoGets still running after 240 s"
            for future in done:
                future.result()
        # Streams the clients cancelled free their workers, and their memory comes back.
        settle(server, baseline, "workers", 0)
        time.sleep(1)
        return process_usage(server.process.pid)

    first, second = storm(), storm()
    assert outcomes["read"] + outcomes["busy"] == 2000
    assert outcomes["read"] >= 4 and outcomes["busy"] > 0, outcomes
    assert first["workers"] == second["workers"] == 0, (first, second)
    # gRPC's server threads and the allocator's background threads grow to their pools'
    # sizes in the first storm and stay about there: a second storm adds next to nothing.
    assert second["threads"] <= first["threads"] + 4, (baseline, first, second)
    assert second["rss"] <= first["rss"] + 32 * MiB, (baseline, first, second)
    assert first["rss"] <= baseline["rss"] + 128 * MiB, (baseline, first)
    assert_serves_correctly(server, criteo)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Criteo rows enough that a stream buffering its epoch would hold ~70 MB of columns."""
    out = tmp_path_factory.mktemp("criteo-large")
    _gen.generate(out, _gen.GenOptions(preset="criteo", rows=600_000, files=2,
                                       row_group_size=20_000), progress=False)
    return out


@pytest.mark.not_under_asan  # bounds the server's resident memory
def test_clients_that_stop_reading_hold_bounded_memory(large: Path) -> None:
    server = Server(large, "--max-streams", "16")
    try:
        ticket = good_ticket(config_of(server))
        baseline = process_usage(server.process.pid)
        stalled = []
        for _ in range(8):  # each reads one batch, then never again
            client = flight.FlightClient(server.location)
            reader = client.do_get(flight.Ticket(ticket))
            reader.read_chunk()
            stalled.append((client, reader))
        time.sleep(2)  # their pipelines run until their bounds stop them
        during = process_usage(server.process.pid)
        assert during["workers"] >= 8, during  # each stalled stream still has its pipeline
        # Eight streams that buffered their epochs would hold 8 x ~70 MB of these columns;
        # each stream holds at most two windows (4,000 rows) and its prefetched batches.
        assert during["rss"] - baseline["rss"] < 160 * MiB, (baseline, during)
        assert_serves_correctly(server, large)
        for client, reader in stalled:
            reader.cancel()
            client.close()
        assert settle(server, baseline, "workers", 0) == 0
    finally:
        server.stop()


def test_connection_flood(criteo: Path, servers) -> None:
    server = servers()
    baseline = process_usage(server.process.pid)
    rng = random.Random(5)
    sockets = []
    try:
        for i in range(300):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            if i % 3 == 1:
                conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            elif i % 3 == 2:
                conn.sendall(bytes(rng.randrange(256) for _ in range(4096)))
            sockets.append(conn)
        assert_serves_correctly(server, criteo)  # while the connections are held open
    finally:
        for conn in sockets:
            conn.close()
    assert settle(server, baseline, "fds", 16) <= baseline["fds"] + 16
    assert_serves_correctly(server, criteo)


def test_idle_streams_are_released_and_remote_loaders_continue(large: Path) -> None:
    server = Server(large, "--max-streams", "1", "--stream-idle-timeout", "1")
    try:
        baseline = process_usage(server.process.pid)
        client = flight.FlightClient(server.location)
        reader = client.do_get(flight.Ticket(good_ticket(config_of(server))))
        reader.read_chunk()
        assert process_usage(server.process.pid)["workers"] > 0
        # The client stops reading: within the timeout and the watcher's second, the
        # stream's pipeline is gone and its only slot is free for another client.
        assert settle(server, baseline, "workers", 0, seconds=10) == 0
        assert_serves_correctly(server, large)
        # Coming back, the idle client reads what gRPC had buffered, then the error.
        with pytest.raises(REFUSED, match="stream_idle_timeout_s"):
            reader.read_all()
        client.close()
        # A RemoteLoader whose consumer pauses longer than the timeout reopens the stream
        # from the batch it needs: the epoch is exact.
        remote = stoker.RemoteLoader([server.location], **OPTIONS)
        it = iter(remote)
        got = [next(it) for _ in range(3)]
        time.sleep(3)
        got += list(it)
        assert_same_batches(got, local(large))
        assert remote.stats()["reconnects"] >= 1
    finally:
        server.stop()
