"""The Flight client of `stoker serve` servers: the servers of one configuration (each one's
share of a stream: chunks of whole shuffle windows dealt round robin, or of batches where a
server offers no other), the ticket naming a stream, the errors worth retrying and how long a
failed read is retried (docs/serve.md)."""

from __future__ import annotations

import bisect
import importlib.metadata
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyarrow import flight

from stoker import _core

if TYPE_CHECKING:
    from typing import TypedDict, Unpack

    class TicketShare(TypedDict, total=False):
        """The keywords naming a share of a stream (_core.encode_ticket's)."""
        shards: int
        shard: int
        chunk: int
        first: int
        chunk_rows: int
        first_row: int

    class Connection(TypedDict):
        """How RemoteLoader reaches its servers (Servers' keywords)."""
        token: str | None
        tls_root_certs: bytes | None
        reconnect_timeout: float

# FlightTimedOutError also comes from a server that released a stream its client left idle
# longer than its stream_idle_timeout_s: reopening it from the batch needed continues the epoch.
RETRYABLE = (flight.FlightUnavailableError, flight.FlightTimedOutError,
              flight.FlightInternalError, ConnectionError)

# The ticket naming a stream (the format docs/serve.md documents), as the servers read it:
# ticket(config, *, epoch, rank, world_size, rounds, shards=1, shard=0, chunk=1, first=0,
#        chunk_rows=0, first_row=0).
ticket = _core.encode_ticket


class BatchChunks:
    """A stream shared in chunks of `chunk` batches dealt round robin: what a mixture's servers
    (and servers from before shares of windows) serve. Every server decodes every window its
    chunks touch. A piece is a whole batch, named by the batch."""

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk

    def pieces(self, b: int) -> list[int]:
        return [b]

    def chunk_of(self, piece: int) -> int:
        return piece // self.chunk

    def owner(self, piece: int, servers: int) -> int:
        return self.chunk_of(piece) % servers

    def share(self, k: int, servers: int, piece: int) -> TicketShare:
        return {"shards": servers, "shard": k, "chunk": self.chunk, "first": piece}


class WindowChunks:
    """A stream shared in chunks of whole shuffle windows (at least `chunk_rows` rows each,
    ending at `ends`, rank-local offsets the server's plan gives) dealt round robin, so each
    window is decoded by one server. A batch that spans two chunks comes as two pieces, one
    from each chunk's server, that the client joins; a piece is named by its first row."""

    def __init__(self, chunk_rows: int, ends: list[int], batch_size: int) -> None:
        self.chunk_rows, self.ends, self.batch_size = chunk_rows, ends, batch_size

    def pieces(self, b: int) -> list[int]:
        first = b * self.batch_size
        last = min(first + self.batch_size, self.ends[-1])
        starts = [first]
        i = bisect.bisect_right(self.ends, first)
        while i < len(self.ends) and self.ends[i] < last:
            starts.append(self.ends[i])
            i += 1
        return starts

    def chunk_of(self, piece: int) -> int:
        return bisect.bisect_right(self.ends, piece)

    def owner(self, piece: int, servers: int) -> int:
        return self.chunk_of(piece) % servers

    def share(self, k: int, servers: int, piece: int) -> TicketShare:
        return {"shards": servers, "shard": k, "chunk_rows": self.chunk_rows, "first_row": piece}


Share = BatchChunks | WindowChunks


# Batches each server's stream holds received ahead of the consumer (C++ threads, one a
# stream): memory, per server, of READ_AHEAD + 1 batches beyond what gRPC's window holds.
READ_AHEAD = 4


class Stream:
    """A server's stream of batches, received ahead on a C++ thread of its own (gRPC, the
    IPC decoding): next() hands over the next one as a _core.Batch over the received
    buffers, which the tensor conversion reads as it is (no per-column Python work, no
    export to pyarrow and back)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def next(self) -> Any:
        """The next batch (a _core.Batch); StopIteration at the stream's end; its error as
        pyarrow.flight raises it."""
        while not self._stream.wait_ready():  # the GIL is free while it waits; Ctrl-C between
            pass
        batch = self._stream.next()
        if batch is None:
            raise StopIteration
        return batch

    def close(self) -> None:
        """Ends the call (the server's slot is freed); the receiving thread stops."""
        self._stream.cancel()


class ArrowBatches:
    """Received batches (_core.Batch) as pyarrow.RecordBatches over the same buffers, each
    batch's arrays imported over a pyarrow.Schema imported once for all the batches of that
    schema (the C data interface's round trip imports the schema too, and with it pyarrow
    builds the fields and their name index for every batch: about half its cost)."""

    def __init__(self) -> None:
        self._held: Any = None  # a batch of the schema below: keeps it alive, to compare
        self._schema: pa.Schema | None = None

    def __call__(self, batch: Any) -> pa.RecordBatch:
        if self._held is None or not self._held._same_schema(batch):
            record_batch = pa.record_batch(batch)  # the whole round trip, schema included
            self._held, self._schema = batch, record_batch.schema
            return record_batch
        owner, address = batch._export_array()
        # pyarrow takes the arrays over (owner then frees the struct alone).
        record_batch = pa.RecordBatch._import_from_c(address, self._schema)
        del owner
        return record_batch


class Server:
    def __init__(self, location: str, headers: list, tls_root_certs: bytes | None) -> None:
        self.location = location
        kwargs = {"tls_root_certs": tls_root_certs} if tls_root_certs else {}
        self.client = flight.FlightClient(location, **kwargs)
        self.options = flight.FlightCallOptions(headers=headers)
        # The streams' own client: reads ahead on C++ threads.
        self.connection = _core.FlightConnection(
            location, [(k.decode(), v.decode()) for k, v in headers],
            (tls_root_certs or b"").decode())

    def action(self, kind: str, body: bytes = b"") -> dict:
        results = list(self.client.do_action(flight.Action(kind, body), self.options))
        return json.loads(results[0].body.to_pybytes())

    def read(self, ticket_bytes: bytes, depth: int = READ_AHEAD) -> Stream:
        """The stream `ticket_bytes` names, `depth` batches received ahead."""
        return Stream(self.connection.read(ticket_bytes, depth))

    def config(self) -> dict:
        try:
            return self.action("config")
        except flight.FlightUnauthenticatedError as error:
            raise PermissionError(f"server {self.location}: {error}") from error
        except flight.FlightUnavailableError as error:
            raise ConnectionError(f"server {self.location} is unreachable: {error}") from error


class Servers:
    """The servers of one configuration: where each batch of a stream comes from, and how
    long a failed one is reconnected to."""

    def __init__(self, locations: Sequence[str], *, token: str | None,
                 tls_root_certs: bytes | None, reconnect_timeout: float) -> None:
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        self.locations = list(locations)
        self.servers = [Server(s, headers, tls_root_certs) for s in locations]
        configs = [server.config() for server in self.servers]
        for server, config in zip(self.servers, configs):
            if config["config"] != configs[0]["config"]:
                raise ValueError(f"server {server.location} serves another configuration than "
                                 f"{self.servers[0].location} (dataset or options differ)")
        self.config = configs[0]
        self.chunk = int(self.config["chunk"])
        self.reconnect_timeout = reconnect_timeout

    def ticket(self, stream: dict[str, Any], **share: Unpack[TicketShare]) -> bytes:
        """The ticket for `stream` (epoch, rank, world_size, rounds), or a share of it."""
        return ticket(self.config["config"], **stream, **share)

    def plan_batches(self, stream: dict[str, Any]) -> int:
        return int(self.servers[0].action("plan", self.ticket(stream))["plan_batches"])

    def share(self, stream: dict[str, Any]) -> tuple[int, Share]:
        """The batches of `stream` and how the servers share it: chunks of whole windows of
        at least `chunk` batches' rows where the servers offer it (each window decoded by one
        server), else chunks of `chunk` batches."""
        # One server decodes every window anyway: whole batches, nothing to join.
        if not self.config.get("window_shares") or len(self.servers) == 1:
            return self.plan_batches(stream), BatchChunks(self.chunk)
        chunk_rows = self.chunk * int(self.config["batch_size"])
        plan = self.servers[0].action("plan", self.ticket(stream, chunk_rows=chunk_rows))
        return int(plan["plan_batches"]), WindowChunks(
            chunk_rows, [int(end) for end in plan["chunk_ends"]], int(self.config["batch_size"]))

    def open(self, k: int, stream: dict[str, Any], share: Share, piece: int) -> Stream:
        """Server k's share of `stream`, from piece `piece` on."""
        return self.servers[k].read(self.ticket(stream, **share.share(k, len(self.servers),
                                                                      piece)))


class Backoff:
    """How a failed read of batch `b` is retried: waits doubling from 0.1 s to 2 s, each
    counted in stats()["reconnects"], until the servers' reconnect_timeout has passed since
    the first failure; then a ConnectionError naming the server, the batch and the epoch."""

    def __init__(self, servers: Servers, stats: dict[str, Any]) -> None:
        self._timeout, self._stats = servers.reconnect_timeout, stats
        self._deadline = time.monotonic() + self._timeout
        self._delay = 0.1

    def wait(self, location: str, b: int, epoch: int, error: Exception) -> None:
        if time.monotonic() > self._deadline:
            raise ConnectionError(f"server {location} did not answer for {self._timeout:g} s "
                                  f"(batch {b} of epoch {epoch}): {error}") from error
        self._stats["reconnects"] += 1
        time.sleep(self._delay)
        self._delay = min(self._delay * 2, 2.0)


# The packages that find a fleet of servers by name register here (pyproject.toml's
# entry points): stoker.ray's Fleet, with the extra stoker[ray]. This package imports none of
# them: a fleet is a client's plugin, not a layer below it.
FLEETS = "stoker.fleets"


def find_fleet(name: str) -> Any:
    """The fleet named `name` (what acts as a stoker.ray.Fleet: addresses, recipe, report), as
    the first provider registered under FLEETS finds it."""
    providers = sorted(importlib.metadata.entry_points(group=FLEETS), key=lambda e: e.name)
    if not providers:
        raise ValueError(f"servers={name!r}: not a grpc://host:port, and no fleet provider is "
                         f"installed to find a fleet by that name (pip install 'stoker[ray]')")
    return providers[0].load().get(name)
