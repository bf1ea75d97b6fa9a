"""`stoker serve` and RemoteLoader over real Flight servers on loopback (ephemeral ports):
bit-identical batches to a local Loader with one and two servers, a plain pyarrow.flight
client, bearer tokens, TLS with a certificate made here, and the faults: a server killed
mid-epoch and restarted, a client that goes away, bad tickets, unreachable servers."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import stoker
from conftest import assert_same_batches, damage_row_group
from pyarrow import flight
from stoker._remote.client import ticket
from stoker_devtools.serve import COLUMNS, OPTIONS, Server, spawn


def local(criteo: Path, **kw) -> list:
    return list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS, **kw))


@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("output", ["numpy", "arrow"])
def test_remote_batches_equal_local_batches(criteo: Path, servers, count: int,
                                            output: str) -> None:
    locations = [servers().location for _ in range(count)]
    remote = stoker.RemoteLoader(locations, output=output, columns=COLUMNS, **OPTIONS)
    expected = local(criteo, output=output)
    assert len(remote) == len(expected)
    assert_same_batches(list(remote), expected)
    # Ranks: every rank's stream equals that rank's local loader, second epoch too.
    for rank in range(2):
        remote = stoker.RemoteLoader(locations, rank=rank, world_size=2, **OPTIONS)
        reference = stoker.Loader(criteo, columns=COLUMNS, rank=rank, world_size=2, **OPTIONS)
        for _ in range(2):
            assert_same_batches(list(remote), list(reference))


def test_serve_takes_every_loader_option_a_command_line_can_spell(criteo: Path,
                                                                  servers) -> None:
    """Evaluation with padding and the error budget, from `stoker serve`'s own flags: each
    rank's remote batches equal that rank's local loader's."""
    server = servers("--mode", "eval", "--pad-to-equal-steps", "--on-error", "skip",
                     "--max-bad-units", "2", "--cache-policy", "fill")
    config = stoker.RemoteLoader([server.location], **OPTIONS)._servers.config
    assert (config["mode"], config["pad_to_equal_steps"]) == ("eval", True)
    for rank in range(3):
        remote = stoker.RemoteLoader([server.location], rank=rank, world_size=3, **OPTIONS)
        reference = stoker.Loader(criteo, columns=COLUMNS, rank=rank, world_size=3,
                                  mode="eval", pad_to_equal_steps=True, **OPTIONS)
        assert_same_batches(list(remote), list(reference))


def test_serve_pins_a_delta_table_version(criteo: Path, tmp_path: Path) -> None:
    """`stoker serve delta://PATH --delta-version 0` serves version 0 after the table grew:
    the local Loader's batches over the pinned version, not the latest's."""
    deltalake = pytest.importorskip("deltalake")
    import pyarrow.dataset as ds

    table = ds.dataset(criteo).to_table(columns=COLUMNS)
    path = tmp_path / "events"
    deltalake.write_deltalake(str(path), table.slice(0, 6000))
    deltalake.write_deltalake(str(path), table.slice(6000, 3000), mode="append")
    server = Server(f"delta://{path}", "--delta-version", "0")
    try:
        for rank in range(2):
            remote = stoker.RemoteLoader([server.location], rank=rank, world_size=2, **OPTIONS)
            local = stoker.Loader(stoker.delta_table(path, version=0), columns=COLUMNS,
                                  rank=rank, world_size=2, **OPTIONS)
            batches = list(remote)
            assert_same_batches(batches, list(local))
        assert remote._servers.config["rows"] == 6000
    finally:
        server.stop()
    with pytest.raises(subprocess.CalledProcessError) as error:
        subprocess.run([sys.executable, "-m", "stoker", "serve", str(criteo), "--batch-size",
                        "8", "--delta-version", "1"], check=True, capture_output=True,
                       text=True)
    assert "--delta-version needs a delta:// SOURCE" in error.value.stderr


def test_torch_output(criteo: Path, servers) -> None:
    torch = pytest.importorskip("torch")
    remote = stoker.RemoteLoader([servers().location], output="torch", **OPTIONS)
    batch = next(iter(remote))
    assert isinstance(batch["I1"], torch.Tensor)
    np.testing.assert_array_equal(batch["row_id"].numpy(), local(criteo)[0]["row_id"])


def test_a_plain_pyarrow_flight_client_can_read_it(criteo: Path, servers) -> None:
    client = flight.FlightClient(servers().location)
    [info] = list(client.list_flights())
    config = __import__("json").loads(info.descriptor.command)
    assert config["batch_size"] == OPTIONS["batch_size"] and config["columns"] == COLUMNS
    assert info.schema.names == COLUMNS
    text = (f"stoker1;config={config['config']};epoch=0;rank=0;world=1;rounds=;shards=1;"
            "shard=0;chunk=1;first=0")
    table = client.do_get(flight.Ticket(text.encode())).read_all()
    expected = pa.Table.from_batches(local(criteo, output="arrow"))
    assert table.equals(expected)


def test_flight_endpoints_serve_a_client_that_knows_nothing_of_stoker(criteo: Path,
                                                                      servers) -> None:
    """Only Flight's own calls: list_flights / get_flight_info, then do_get on each endpoint's
    ticket at its location (docs/serve.md, "The protocol")."""
    server = servers()
    client = flight.FlightClient(server.location)
    [info] = list(client.list_flights())
    [endpoint] = info.endpoints
    [location] = [loc.uri.decode() for loc in endpoint.locations]
    assert location == f"grpc+tcp://{server.host}:{server.port}"  # "grpc://" spelled in full
    table = flight.FlightClient(endpoint.locations[0]).do_get(endpoint.ticket).read_all()
    assert table.equals(pa.Table.from_batches(local(criteo, output="arrow")))
    assert info.total_records == table.num_rows

    # A path descriptor selects the epoch and world size: one endpoint per rank, each that
    # rank's batches of that epoch, as a local loader of that rank delivers them.
    info = client.get_flight_info(flight.FlightDescriptor.for_path("epoch=1", "world_size=2"))
    assert len(info.endpoints) == 2 and not info.ordered
    for rank, endpoint in enumerate(info.endpoints):
        reference = stoker.Loader(criteo, columns=COLUMNS, rank=rank, world_size=2,
                                  output="arrow", **OPTIONS)
        list(reference)  # epoch 0
        expected = pa.Table.from_batches(list(reference))
        assert client.do_get(endpoint.ticket).read_all().equals(expected), rank
    [one] = client.get_flight_info(
        flight.FlightDescriptor.for_path("rank=1", "world_size=2", "epoch=1")).endpoints
    assert one.ticket == info.endpoints[1].ticket

    for path, message in [(("world_size=2", "rank=2"), "rank 2 of a world size of 2"),
                          (("shard=1",), "unknown key 'shard'"),
                          (("epoch=-1",), "non-negative integer"),
                          (("world_size=5000",), "name one rank")]:
        with pytest.raises((flight.FlightError, pa.ArrowInvalid), match=message):
            client.get_flight_info(flight.FlightDescriptor.for_path(*path))


def test_bad_tickets_are_refused_clearly(servers) -> None:
    server = servers()
    client = flight.FlightClient(server.location)
    with pytest.raises((flight.FlightError, pa.ArrowInvalid), match="bad ticket: not a stoker1 ticket"):
        client.do_get(flight.Ticket(b"/etc/passwd")).read_all()
    with pytest.raises((flight.FlightError, pa.ArrowInvalid), match="another dataset"):
        client.do_get(flight.Ticket(ticket("0" * 32, epoch=0, rank=0, world_size=1,
                                           rounds=[]))).read_all()
    with pytest.raises((flight.FlightError, pa.ArrowInvalid), match="unknown field 'path'"):
        client.do_get(flight.Ticket(b"stoker1;path=/etc")).read_all()


def test_bearer_token(criteo: Path, servers, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cret\n")
    server = servers("--token-file", str(tmp_path / "token"))
    with pytest.raises(PermissionError, match="needs a bearer token"):
        stoker.RemoteLoader([server.location], **OPTIONS)
    with pytest.raises(PermissionError, match="wrong bearer token"):
        stoker.RemoteLoader([server.location], token="guess", **OPTIONS)
    remote = stoker.RemoteLoader([server.location], token="s3cret", **OPTIONS)
    assert_same_batches(list(remote), local(criteo))


def test_tls_with_a_certificate_made_here(criteo: Path, servers, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    server = servers("--tls-cert", str(cert), "--tls-key", str(key))
    assert server.location.startswith("grpc+tls://")
    remote = stoker.RemoteLoader([server.location], tls_root_certs=cert.read_bytes(), **OPTIONS)
    assert_same_batches(list(remote), local(criteo))


def test_server_killed_mid_epoch_and_restarted(criteo: Path, servers) -> None:
    first, second = servers(), servers()
    remote = stoker.RemoteLoader([first.location, second.location], reconnect_timeout=60,
                                 **OPTIONS)
    expected = local(criteo)
    it = iter(remote)
    got = [next(it) for _ in range(2)]  # from the first server (chunks of 3 batches)
    # Killed while the client is mid-epoch: the batches it still needs from this server
    # (the next chunk) must come from the restarted server, none lost or repeated.
    second.kill()

    def restart() -> None:
        time.sleep(1.0)
        second.start()

    threading.Thread(target=restart).start()
    got += list(it)
    assert_same_batches(got, expected)
    assert remote.stats()["reconnects"] > 0


def test_client_that_goes_away_frees_its_stream(criteo: Path, servers) -> None:
    server = servers("--max-streams", "1")
    for _ in range(3):  # each abandoned stream must free the only slot
        remote = stoker.RemoteLoader([server.location], **OPTIONS)
        it = iter(remote)
        next(it)
        it.close()
        del it, remote
    deadline = time.monotonic() + 10
    while True:
        try:
            assert_same_batches(list(stoker.RemoteLoader([server.location], **OPTIONS)), local(criteo))
            break
        except ConnectionError:
            assert time.monotonic() < deadline, "the server kept the abandoned stream"
            time.sleep(0.2)


def test_a_remote_resume_is_exact_across_a_unit_the_server_skipped(criteo: Path,
                                                                    tmp_path: Path) -> None:
    """A server with on_error="skip" over a dataset with a damaged row group sends shorter
    batches; the client counts each batch's planned rows, as a local loader does, so a state
    saved after a short batch resumes exactly where the local loader's would."""
    damaged = tmp_path / "criteo"
    shutil.copytree(criteo, damaged)
    first = min(damaged.glob("*.parquet"))
    damage_row_group(first, 1)
    expected = list(stoker.Loader(damaged, columns=COLUMNS, on_error="skip", **OPTIONS))
    short = [i for i, b in enumerate(expected[:-1]) if len(b["row_id"]) < OPTIONS["batch_size"]]
    assert short, "the damaged unit left no batch short"
    k = short[0] + 1
    server = Server(damaged, "--on-error", "skip")
    try:
        remote = stoker.RemoteLoader([server.location], **OPTIONS)
        it = iter(remote)
        head = [next(it) for _ in range(k)]
        state = remote.state_dict()
        local_loader = stoker.Loader(damaged, columns=COLUMNS, on_error="skip", **OPTIONS)
        local_it = iter(local_loader)
        for _ in range(k):
            next(local_it)
        assert state["rounds"] == local_loader.state_dict()["rounds"]
        resumed = stoker.RemoteLoader([server.location], **OPTIONS)
        resumed.load_state_dict(state)
        assert_same_batches(head + list(resumed), expected)
    finally:
        server.stop()


def test_resume_through_remote_loaders(criteo: Path, servers) -> None:
    location = servers().location
    expected = local(criteo)
    remote = stoker.RemoteLoader([location], **OPTIONS)
    it = iter(remote)
    head = [next(it) for _ in range(5)]
    state = remote.state_dict()
    again = stoker.RemoteLoader([location], **OPTIONS)
    again.load_state_dict(state)
    assert_same_batches(head + list(again), expected)
    # The state is the same as a local loader's: a local loader resumes from it too.
    loader = stoker.Loader(criteo, columns=COLUMNS, **OPTIONS)
    loader.load_state_dict(state)
    assert_same_batches(head + list(loader), expected)


def test_unreachable_server_and_mismatched_options(servers) -> None:
    with pytest.raises(ConnectionError, match="unreachable"):
        stoker.RemoteLoader(["grpc://127.0.0.1:1"], **OPTIONS)
    server = servers()
    with pytest.raises(ValueError, match="batch_size: asked 64, served 700"):
        stoker.RemoteLoader([server.location], batch_size=64)


@pytest.fixture(scope="module")
def criteo_large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300,000 criteo rows (80 MB of batches an epoch: more than a stream's socket buffers,
    flow-control window and read-ahead hold, so a client that stops reading holds its
    stream open)."""
    from stoker.cli import gen as _gen

    out = tmp_path_factory.mktemp("criteo-large")
    _gen.generate(out, _gen.GenOptions(preset="criteo", rows=300_000, files=1), progress=False)
    return out


@pytest.mark.parametrize("grace", [0, 2])
def test_sigterm_stops_a_server_whose_client_stopped_reading(criteo_large: Path,
                                                             grace: int) -> None:
    """A trainer that took one batch and then stopped reading keeps its stream open (gRPC's
    flow control holds the server's writes): SIGTERM still stops the server, its open stream
    given --shutdown-grace first, with exit status 0; the client's next reads fail by name.
    (Flight's own signal handling waited for the stream: up to --stream-idle-timeout.)"""
    process, location = spawn(str(criteo_large), "--batch-size", "4096", "--num-threads", "1",
                              "--shutdown-grace", str(grace))
    try:
        remote = stoker.RemoteLoader(location, batch_size=4096, reconnect_timeout=0)
        batches = iter(remote)
        next(batches)
        time.sleep(1.0)  # the stream fills what flow control lets it
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=grace + 20)
        took = time.monotonic() - started
        assert process.returncode == 0
        assert took >= grace * 0.9, took  # the open stream had its grace
        with pytest.raises((ConnectionError, flight.FlightError)):
            for _ in batches:
                pass
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
