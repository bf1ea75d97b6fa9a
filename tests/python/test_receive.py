"""RemoteLoader's receiving (src/serve/read_ahead_stream.h, the client's Stream): a server's
stream read ahead on a C++ thread and handed over as a _core.Batch, which the tensor
conversion reads without a round trip through pyarrow, and whose errors are the
pyarrow.flight exceptions a plain client would see. Real servers on loopback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import stoker
from pyarrow import flight
from stoker import _core
from stoker._remote import client as _client
from stoker_devtools.serve import COLUMNS, OPTIONS

STREAM = {"epoch": 0, "rank": 0, "world_size": 1, "rounds": []}


def servers_of(location: str, **connection) -> _client.Servers:
    return _client.Servers([location], token=connection.get("token"), tls_root_certs=None,
                           reconnect_timeout=5.0)


def plain_batches(location: str, ticket: bytes) -> list[pa.RecordBatch]:
    return list(flight.FlightClient(location).do_get(flight.Ticket(ticket)).to_reader())


def read_all(stream: _client.Stream) -> list:
    out = []
    while True:
        try:
            out.append(stream.next())
        except StopIteration:
            return out


def test_a_read_ahead_stream_is_the_plain_clients_stream(servers) -> None:
    location = servers().location
    fleet = servers_of(location)
    ticket = fleet.ticket(STREAM)
    plain = plain_batches(location, ticket)
    assert len(plain) > 2
    for depth in (1, 4):
        received = read_all(fleet.servers[0].read(ticket, depth=depth))
        assert [type(b) for b in received] == [_core.Batch] * len(plain)
        assert [b.num_rows for b in received] == [b.num_rows for b in plain]
        # What stats()["bytes_received"] adds up: the buffers' bytes, as pyarrow counts them.
        assert [b.nbytes for b in received] == [b.get_total_buffer_size() for b in plain]
        for held, expected in zip(received, plain):
            assert pa.record_batch(held).equals(expected)


def test_to_tensors_reads_a_received_batch_as_it_reads_a_pyarrow_one(servers) -> None:
    location = servers().location
    fleet = servers_of(location)
    ticket = fleet.ticket(STREAM)
    held = fleet.servers[0].read(ticket).next()
    plain = plain_batches(location, ticket)[0]
    for output in ("numpy", "torch"):
        if output == "torch":
            pytest.importorskip("torch")
        got, want = _core.to_tensors(held, output), _core.to_tensors(plain, output)
        assert list(got) == list(want) == COLUMNS
        for name in COLUMNS:
            np.testing.assert_array_equal(np.asarray(got[name]), np.asarray(want[name]))


def test_arrow_batches_import_each_schema_once_and_give_the_plain_clients_batches(
        servers, monkeypatch: pytest.MonkeyPatch) -> None:
    """ArrowBatches: every batch of two streams (two schema objects, equal) as the plain
    client's, the schema imported from the first and reused; a stream of other columns gets
    its own schema; the batches outlive their stream."""
    location = servers().location
    fleet = servers_of(location)
    ticket = fleet.ticket(STREAM)
    plain = plain_batches(location, ticket)
    full_imports = []  # the round trips that import a schema too
    record_batch = pa.record_batch
    monkeypatch.setattr(pa, "record_batch", lambda b: full_imports.append(b) or record_batch(b))
    arrow = _client.ArrowBatches()
    for _ in range(2):
        stream = fleet.servers[0].read(ticket)
        got = [arrow(b) for b in read_all(stream)]
        stream.close()
        del stream
        assert len(got) == len(plain)
        for batch, expected in zip(got, plain):
            assert batch.equals(expected) and batch.schema.equals(expected.schema,
                                                                  check_metadata=True)
    assert len(full_imports) == 1  # the first batch's: the second stream's schema is equal
    narrow = servers("--columns", "row_id,label").location  # a stream of other columns
    narrow_fleet = servers_of(narrow)
    narrow_ticket = narrow_fleet.ticket(STREAM)
    got = [arrow(b) for b in read_all(narrow_fleet.servers[0].read(narrow_ticket))]
    assert [b.schema.names for b in got] == [["row_id", "label"]] * len(got)
    assert len(full_imports) == 2
    for batch, expected in zip(got, plain_batches(narrow, narrow_ticket)):
        assert batch.equals(expected)


def test_the_columns_stay_valid_after_the_stream_is_gone(servers) -> None:
    """A tensor owns the received buffers: closing the stream and dropping the batch frees
    nothing it views."""
    fleet = servers_of(servers().location)
    stream = fleet.servers[0].read(fleet.ticket(STREAM))
    batch = stream.next()
    expected = pa.record_batch(batch).column("label").to_numpy().copy()
    tensors = _core.to_tensors(batch, "numpy")
    stream.close()
    del stream, batch
    np.testing.assert_array_equal(tensors["label"], expected)


def test_errors_are_pyarrow_flights(servers) -> None:
    location = servers().location
    fleet = servers_of(location)
    with pytest.raises(Exception, match="bad ticket") as refused:
        fleet.servers[0].read(b"stoker1;epoch=x").next()
    # What a plain pyarrow client raises for the same refusal.
    with pytest.raises(type(refused.value)):
        plain_batches(location, b"stoker1;epoch=x")
    gone = _core.FlightConnection("grpc://127.0.0.1:1", [], "")
    with pytest.raises(flight.FlightUnavailableError):
        _client.Stream(gone.read(b"stoker1", 2)).next()
    with pytest.raises(ValueError, match="'nowhere'"):
        _core.FlightConnection("nowhere", [], "")


def test_a_closed_stream_raises_cancelled_after_what_it_received(servers) -> None:
    fleet = servers_of(servers().location)
    stream = fleet.servers[0].read(fleet.ticket(STREAM), depth=1)
    stream.next()
    stream.close()
    with pytest.raises(flight.FlightCancelledError):
        for _ in range(3):  # at most the batch received ahead, then the cancel
            stream.next()


def test_remote_loader_counts_the_bytes_it_received(criteo: Path, servers) -> None:
    remote = stoker.RemoteLoader([servers().location], output="arrow", columns=COLUMNS,
                                 **OPTIONS)
    batches = list(remote)
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    assert remote.stats()["bytes_received"] == sum(b.get_total_buffer_size() for b in batches)
