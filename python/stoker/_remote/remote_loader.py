"""RemoteLoader: the Loader API over batches streamed by `stoker serve` (Arrow Flight).

Several servers split each epoch's plan in chunks of whole shuffle windows dealt round robin
(each window decoded by one server; a batch spanning two chunks comes in two pieces, joined
here); the client reads their streams side by side and yields the batches in plan order, so
the output is bit-identical to a local Loader with the same options. A server that fails mid-stream is
reconnected to, and its stream resumed at the next batch the client needs. The servers are
fixed locations or a stoker.ray.Fleet, whose addresses are resolved at each epoch's start and
again after a failure: a server Ray restarted elsewhere, or a fleet resized, is followed (the
chunks are dealt again over the servers there are, from the next batch needed)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa
from pyarrow import flight

from stoker import _core
from stoker import torchrec as _torchrec
from stoker._loading import cursor as _cursor
from stoker._loading import loader as _loader
from stoker._loading import state as _state
from stoker._options import convert as _options
from stoker._options import frameworks as _frameworks
from stoker._options import keywords as _keywords
from stoker._remote import client as _client
from stoker._remote import local_first as _local_first
from stoker._remote import split as _split

_DEFAULTS = _options.LOADER_DEFAULTS

if TYPE_CHECKING:
    from stoker.torchrec import Features


class _Redealt(Exception):
    """The servers' share changed while a batch's pieces were read (the servers resized)."""


# A reader over a fleet looks at its servers at a chunk's start at most this often: a Ray
# fleet's answer is a few actor calls, made on the consumer's thread.
FLEET_LOOK_SECONDS = 1.0


class _RemoteEpoch(_cursor.EpochIterator):
    """One epoch read from the servers' streams side by side, in plan order; after a failure
    the servers are resolved again (`reconnect`) and the failed one — or, when the servers
    changed, each one — is asked for its share from the next batch needed. With
    `follow_fleet`, the servers are resolved again at a chunk's first piece too (at most every
    FLEET_LOOK_SECONDS), so a fleet grown (or shrunk) mid-epoch is read from that chunk on."""

    def __init__(self, reconnect: Callable[[], _client.Servers], stream: dict[str, Any],
                 progress: _cursor.Progress, convert: Callable[[pa.RecordBatch], Any],
                 stats: dict[str, Any], planned_rows: Callable[[int], int],
                 trace: Any | None = None,
                 on_close: Callable[[], None] | None = None,
                 follow_fleet: bool = False) -> None:
        servers = reconnect()
        plan_batches, self._share = servers.share(stream)
        super().__init__(progress, plan_batches)
        # Batch b's planned rows (padding included): what it counts as consumed, whatever a
        # server's on_error="skip" left out of it, so that a resume continues exactly where
        # the plan says (the local loader counts the same way).
        self._planned_rows = planned_rows
        self._servers, self._reconnect, self._stream = servers, reconnect, stream
        self._convert, self._stats = convert, stats
        self._trace, self._on_close = trace, on_close
        self._next = 0
        self._readers: dict[int, _client.Stream] = {}
        self._follow_fleet = follow_fleet
        self._looked_at: int | None = None  # the chunk the fleet was last looked at, and when
        self._looked_time = 0.0

    def _server_of(self, piece: int) -> int:
        return self._share.owner(piece, len(self._servers.servers))

    def _read(self, b: int) -> Any:
        """Batch b, a _core.Batch as received, or its pieces joined (a pyarrow.RecordBatch).
        Read again from its first piece when the servers were dealt again meanwhile."""
        while True:
            share = self._share
            try:
                parts = [self._read_piece(b, piece, share) for piece in share.pieces(b)]
                break
            except _Redealt:
                continue
        if len(parts) == 1:
            return parts[0]
        self._stats["joined_batches"] += 1
        return pa.concat_batches([pa.record_batch(part) for part in parts])

    def _look_at_fleet(self, piece: int, share: _client.Share) -> None:
        """At a chunk's first piece (FLEET_LOOK_SECONDS or more after the last look), the
        fleet's servers now: a change since the last look
        deals the rest of the epoch again (_follow), so a server added mid-epoch serves from
        this chunk on. A fleet that does not answer now is asked again at the next chunk."""
        chunk = share.chunk_of(piece)
        if chunk == self._looked_at:
            return
        looked, self._looked_at, now = self._looked_at, chunk, time.monotonic()
        if looked is None:  # the epoch's first chunk: the servers were resolved at its start
            self._looked_time = now
            return
        if now - self._looked_time < FLEET_LOOK_SECONDS:
            return
        self._looked_time = now
        with contextlib.suppress(*_client.RETRYABLE):
            servers = self._reconnect()
            if servers is not self._servers:
                self._stats["fleet_changes"] += 1
                self._follow(servers)

    def _read_piece(self, b: int, piece: int, share: _client.Share) -> Any:
        if self._follow_fleet:
            self._look_at_fleet(piece, share)
        backoff = _client.Backoff(self._servers, self._stats)
        while True:
            if self._share is not share:  # a piece of the old share's means nothing now
                raise _Redealt
            k = self._server_of(piece)
            location = self._servers.servers[k].location
            try:
                if k not in self._readers:
                    self._readers[k] = self._servers.open(k, self._stream, self._share, piece)
                received = self._readers[k].next()
                self._stats["bytes_received"] += received.nbytes  # its buffers' bytes
                return received
            except _client.RETRYABLE as error:
                self._readers.pop(k, None)
                backoff.wait(location, b, self._stream["epoch"], error)
                with contextlib.suppress(*_client.RETRYABLE):  # if not now, after the next failure
                    self._follow(self._reconnect())
            except StopIteration:
                raise ConnectionError(f"server {location} ended its stream "
                                      f"before batch {b}") from None

    def _follow(self, servers: _client.Servers) -> None:
        """Reads from `servers` from now on: when they are not the ones read so far, every
        stream is closed, to be reopened at the next batch each serves."""
        if servers is not self._servers:
            self._cancel_readers()
            if len(servers.servers) != len(self._servers.servers):
                # Dealt again over the servers there are (one server: whole batches; more:
                # whole windows); the plan, and so the batches, the same.
                _, self._share = servers.share(self._stream)
            self._servers = servers

    def _pull(self) -> tuple[int, Any] | None:
        if self._next >= len(self):
            return None
        b = self._next
        trace = self._trace
        asked = trace.now() if trace is not None else 0
        started = time.perf_counter()
        batch = self._read(b)
        self._stats["wait_seconds"] += time.perf_counter() - started
        self._stats["rows"] += batch.num_rows
        self._stats["batches"] += 1
        self._next += 1
        planned = self._planned_rows(b)
        if trace is None:
            return planned, self._convert(batch)
        received = trace.now()
        converted = self._convert(batch)
        done = trace.now()
        trace.record("receive", asked, received, b, self._server_of(self._share.pieces(b)[0]))
        trace.record("convert", received, done, b)
        trace.record("wait", asked, done, b)
        return planned, converted

    def _cancel_readers(self) -> None:
        for reader in self._readers.values():
            reader.close()
        self._readers.clear()

    def _release(self) -> None:
        self._cancel_readers()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class RemoteLoader(_cursor.EpochLoader):
    # The signature and docstring are set below the class, from KEYWORDS: its own meaning of
    # a keyword where it differs, the Loader's otherwise.

    def __init__(
        # <keywords: scripts/write_signatures.py writes these from KEYWORDS>
        self,
        servers: str | Sequence[str] | Any,
        *,
        columns: Sequence[str] | None = None,
        batch_size: int | None = None,
        shuffle: bool | None = None,
        seed: int | None = None,
        shuffle_window: int | None = None,
        plan_version: int | None = None,
        rank: int = _DEFAULTS.rank,
        world_size: int = _DEFAULTS.world_size,
        drop_last: bool | None = None,
        output: str = "numpy",
        batch_transform: Callable[[Any], Any] | None = None,
        trace: str | os.PathLike | None = None,
        trace_events: int = _DEFAULTS.trace_events,
        torchrec: Features | dict[str, Any] | None = None,
        token: str | None = None,
        tls_root_certs: bytes | str | None = None,
        reconnect_timeout: float = 60.0,
        local: bool | dict[str, Any] = False,
        split: dict[str, Any] | None = None,
        # </keywords>
    ) -> None:
        given = _keywords.given(locals())
        batch_size, seed, shuffle = given["batch_size"], given["seed"], given["shuffle"]
        shuffle_window, columns, drop_last = (given["shuffle_window"], given["columns"],
                                              given["drop_last"])
        rank, world_size, output = given["rank"], given["world_size"], given["output"]
        batch_transform, torchrec = given["batch_transform"], given["torchrec"]
        token, tls_root_certs = given["token"], given["tls_root_certs"]
        reconnect_timeout, local, split = (given["reconnect_timeout"], given["local"],
                                           given["split"])
        trace, trace_events = given["trace"], given["trace_events"]
        if isinstance(servers, str) and "://" not in servers:
            servers = _client.find_fleet(servers)
        if isinstance(servers, str):
            servers = [servers]
        # A stoker.ray.Fleet (or what acts as one: addresses, recipe, report).
        self._fleet: Any = servers if hasattr(servers, "addresses") else None
        if self._fleet is None and not servers:
            raise ValueError("servers: give at least one grpc://host:port")
        if output == "torchrec" and local is not False:
            raise ValueError('output="torchrec" with local=: not supported (yet): read from '
                             "the servers alone, or use a Loader on the trainer")
        _frameworks.check_output(output)
        if batch_transform is not None and not callable(batch_transform):
            raise TypeError(f"batch_transform must be callable, got {batch_transform!r}")
        _core.validate_rank(rank, world_size)
        if isinstance(tls_root_certs, str):
            tls_root_certs = tls_root_certs.encode()
        self._connection: _client.Connection = {"token": token, "tls_root_certs": tls_root_certs,
                                         "reconnect_timeout": reconnect_timeout}
        # Not a fleet: servers is the locations (mypy cannot tell from the hasattr above).
        self._locations = None if self._fleet is not None else list(
            cast("Sequence[str]", servers))
        self._local_core: Any = None  # the local engine's _core.Loader (local first)
        self._local_loader: Any = None
        self._local_first: _local_first.LocalFirst | None = None  # what its epochs read through
        features = _torchrec.features_for(output, torchrec)
        if local is not False:
            if trace is not None or trace_events:
                raise ValueError("trace: a loader reading local first keeps no timeline (its "
                                 "local engine's stats() are in stats()['local'])")
            self._open_local(local, output, rank, world_size, split)
        locations = self._resolve()
        self._servers = _client.Servers(locations, **self._connection) if locations else None
        if self._servers is None and self._local_core is None:
            raise ValueError(f"fleet '{getattr(self._fleet, 'name', '')}' has no servers "
                             "now: read it with local=True (its own cores first) or start "
                             "it with a server")
        self._config = self._check_local(self._servers)
        _check_served_options(self._config, {
            "batch_size": batch_size, "seed": seed, "shuffle": shuffle,
            "shuffle_window": shuffle_window, "plan_version": given["plan_version"],
            "drop_last": drop_last, "columns": list(columns) if columns is not None else None})
        self._output, self._batch_transform = output, batch_transform
        self._arrow_batches = _client.ArrowBatches()
        self._ragged = list(self._config.get("ragged", []))
        self._torchrec = None
        if features is not None:  # served batches: their KeyedJaggedTensor built here
            self._torchrec = _torchrec.Maker(features.check(self.schema))
        if output == "jax":
            _frameworks.check_schema(output, self.schema)
        self._stats = {"rows": 0, "batches": 0, "bytes_received": 0, "wait_seconds": 0.0,
                       "reconnects": 0, "joined_batches": 0, "fleet_changes": 0}
        if self._local_core is not None:
            self._stats.update({"local_batches": 0, "remote_batches": 0, "relayouts": 0})
            self._local_first = _local_first.LocalFirst(
                engine=self._local_core, output=output, connect=self._connect_optional,
                layout=self._layout, convert=self._convert, batch_transform=batch_transform,
                split=self._split, meter=self._meter, stats=self._stats, fleet=self._fleet,
                trainer_id=_local_first.trainer_id())
        self._cursor = _cursor.EpochCursor(_state.identity(self._config), rank, world_size)
        if trace is not None and not trace_events:
            trace_events = _core.DEFAULT_TRACE_EVENTS
        self._trace_path = None if trace is None else os.fspath(trace)
        self._trace = _core.TraceRing(trace_events) if trace_events else None

    def _resolve(self) -> list[str]:
        """The servers' locations now: the fixed ones, or the fleet's current addresses."""
        if self._fleet is None:
            return cast("list[str]", self._locations)  # set whenever there is no fleet
        try:
            return self._fleet.addresses(timeout=self._connection["reconnect_timeout"])
        except TimeoutError as error:
            raise ConnectionError(str(error)) from error

    def _connect(self) -> _client.Servers:
        """The servers to read from: those read so far while they are still where they
        were; a fleet's restarted or resized servers otherwise, checked to serve the same
        configuration."""
        servers = self._connect_optional()
        if servers is None:
            raise ConnectionError(f"fleet '{getattr(self._fleet, 'name', '')}' has no "
                                  "servers now")
        return servers

    def _connect_optional(self) -> _client.Servers | None:
        """As _connect, but None while the fleet has no servers (read local first)."""
        locations = self._resolve()
        if not locations:
            return None
        if self._servers is None or locations != self._servers.locations:
            servers = _client.Servers(locations, **self._connection)
            if servers.config["config"] != self._config["config"]:
                raise ValueError(f"the fleet's servers {locations} now serve another "
                                 "configuration than when this loader was made")
            self._servers = servers
        return self._servers

    def _open_local(self, local: bool | dict[str, Any], output: str, rank: int,
                    world_size: int, split: dict[str, Any] | None) -> None:
        """The trainer's own engine for local-first reading: the fleet's source and options
        (a plain list of servers: local={"source": ...} and the servers' options), with
        `local`'s options over them."""
        given = {} if local is True else dict(cast("dict[str, Any]", local))
        if self._fleet is not None:
            source, options = self._fleet.recipe()
            for sizing in ("num_threads", "prefetch", "trace_events"):  # the servers' own
                options.pop(sizing, None)
            source = given.pop("source", source)
        elif "source" in given:
            source, options = given.pop("source"), {}
        else:
            raise ValueError("local: with servers given by address, name what they serve: "
                             "local={'source': ..., <their Loader options>}")
        self._split = _split.SplitController(_split.SplitOptions.of(split))
        self._meter = _split.WindowMeter(self._split.options)
        self._meter.pause(time.perf_counter())  # until the first epoch starts
        options.update(given)
        if "prefetch" not in options and options.get("batch_size"):
            # A chunk ahead: the local share fills its next chunk while the consumer takes
            # the servers' (memory: about a shuffle window of assembled rows).
            options["prefetch"] = _split.chunk_batches(
                options["batch_size"], options.get("shuffle", True),
                options.get("shuffle_window") or _core.DEFAULT_SHUFFLE_WINDOW,
                _core.DEFAULT_CHUNK_BATCHES, self._split.options.chunk_windows)
        self._local_loader = _loader.Loader(source, output=output, rank=rank,
                                            world_size=world_size, **options)
        self._local_core = self._local_loader._core

    def _check_local(self, servers: _client.Servers | None) -> dict[str, Any]:
        """The configuration served: the servers', the same as the local engine's."""
        if self._local_core is None:
            assert servers is not None
            return servers.config
        local = json.loads(self._local_core.config())
        if servers is not None and servers.config["config"] != local["config"]:
            raise ValueError(f"the servers {servers.locations} serve another configuration "
                             "than the local engine reads (dataset or options differ)")
        return local

    def _layout(self, servers: _client.Servers | None, local: int | None = None) -> Any:
        """Which source serves each batch: `local` chunks (the controller's when None) and
        one per server in each period; chunks of a shuffle window's batches, so that the
        sources mostly read different windows."""
        count = 0 if servers is None else len(servers.servers)
        local = self._split.local if local is None else local
        if count == 0:
            local = max(1, local)
        config = self._config
        chunk = _split.chunk_batches(config["batch_size"], config["shuffle"],
                                     config["shuffle_window"], config["chunk"],
                                     self._split.options.chunk_windows)
        return _split.Layout(local, count, chunk)

    def _stream(self, epoch: int, rounds: list[list[int]]) -> dict[str, Any]:
        return {"epoch": epoch, "rank": self._cursor.rank,
                "world_size": self._cursor.world_size, "rounds": rounds}

    def _convert(self, batch: Any) -> Any:
        """A received batch (a _core.Batch, or a pyarrow.RecordBatch) as this loader delivers
        it: the engine's own tensor conversion, then the batch_transform."""
        if self._torchrec is not None:
            batch = self._torchrec.from_arrow(batch)
        elif self._output != "arrow":
            batch = _core.to_tensors(batch, self._output, self._ragged)
        elif not isinstance(batch, pa.RecordBatch):
            batch = self._arrow_batches(batch)
        return batch if self._batch_transform is None else self._batch_transform(batch)

    def _read_epoch(self, progress: _cursor.Progress) -> _cursor.EpochIterator:
        on_close = None if self._trace_path is None else lambda: self.write_trace(
            self._trace_path)
        identity = self._cursor.identity
        rank_rows = _core.rank_rows(
            identity["rows"], [(int(n), int(r)) for n, r in progress.rounds],
            self._cursor.world_size, self._cursor.rank, identity["batch_size"],
            identity["drop_last"], identity["mode"], identity["pad_to_equal_steps"])
        batch_size = identity["batch_size"]

        def planned_rows(b: int) -> int:
            return min(batch_size, rank_rows - b * batch_size)

        stream = self._stream(progress.epoch, progress.rounds)
        if self._local_first is not None:
            return _local_first.LocalFirstEpoch(self._local_first, stream, progress,
                                                -(-rank_rows // batch_size), planned_rows)
        return _RemoteEpoch(self._connect, stream, progress, self._convert, self._stats,
                            planned_rows, self._trace, on_close,
                            follow_fleet=self._fleet is not None)

    def write_trace(self, path: str | os.PathLike) -> None:
        """Writes the timeline kept so far (``trace=`` or ``trace_events=``) as Chrome trace
        JSON to ``path``."""
        if self._trace is None:
            raise ValueError("this loader keeps no trace: set trace_events (or trace=)")
        self._trace.write(os.fspath(path))

    @property
    def output(self) -> str:
        """What each batch is: "numpy", "torch", "jax", "tensorflow" or "arrow"."""
        return self._output

    @property
    def schema(self) -> pa.Schema:
        if self._local_core is not None:
            return self._local_loader.schema
        server = self._connect().servers[0]
        info = server.client.get_flight_info(flight.FlightDescriptor.for_command(b"stoker"),
                                             server.options)
        return info.schema

    def __len__(self) -> int:
        if self._local_core is not None:
            return len(self._local_loader)
        return self._connect().plan_batches(self._stream(0, []))

    def stats(self) -> dict[str, Any]:
        """rows, batches, bytes_received, wait_seconds (the data stall), reconnects,
        joined_batches (batches that came in pieces from two servers, joined here) and
        fleet_changes (a fleet's servers found changed at a chunk's start, mid-epoch);
        reading local first, also local_batches, remote_batches, relayouts, ``split`` (the
        controller's setting and its recent decisions) and ``local`` (the local engine's
        stats())."""
        out: dict[str, Any] = dict(self._stats)
        if self._local_first is not None:
            split = self._split
            layout = self._local_first.current_layout or self._layout(self._servers)
            out["split"] = {"local": split.local, "servers": layout.servers,
                            "chunk": layout.chunk,
                            "local_share": round(layout.local_share(), 4),
                            "windows": split.windows,
                            "decisions": split.decisions, "recent": list(split.recent),
                            "target_stall": split.options.target_stall}
            out["local"] = self._local_loader.stats()
        return out


# What a server from before an option existed serves, as its config leaves it out.
_SERVED_BEFORE = {"plan_version": 1}


def _check_served_options(config: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Raises ValueError naming each option asked for that the servers do not serve."""
    served = {key: config.get(key, _SERVED_BEFORE.get(key)) for key in wanted}
    differences = [f"{key}: asked {value!r}, served {served[key]!r}"
                   for key, value in wanted.items()
                   if value is not None and value != served[key]]
    if differences:
        raise ValueError("the servers were started with other options: " +
                         "; ".join(differences))


_keywords.define(RemoteLoader, """The Loader API over `stoker serve` servers: same iteration,
    ``len``, ``set_epoch``, ``state_dict``/``load_state_dict`` and ``stats()``, and
    bit-identical batches to a local ``stoker.Loader`` with the same options, however many
    servers serve it. The keywords not described here mean what they mean to
    ``stoker.Loader``.""", {
    "batch_size, seed, shuffle, shuffle_window, plan_version, columns, drop_last": """must match what the
        servers were started with (checked; None means "whatever the server has").""",
    "batch_transform": """a Python callable applied to each batch as it arrives, in the
        consumer's thread (the servers' transforms run before sending: the ``transforms``
        they were started with).""",
    "trace": """a path: keep a timeline of each batch's receipt from its server, its
        conversion and the consumer's wait, and write it there as Chrome trace JSON at the
        end of every epoch (docs/observability.md). None: no timeline.""",
})
