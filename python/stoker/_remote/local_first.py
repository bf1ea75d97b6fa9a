"""One epoch of a RemoteLoader that reads local first (``local=``): the trainer's own engine
serves a run of chunks of each period, the servers the rest (_split.Layout), the batches
taken in plan order from whichever source serves each. The controller (_split) moves the
split between windows; the fleet's servers are looked up again then, so a fleet that grew or
shrank is followed from the next batch. The batches are the plan's whatever the split."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import Any

from stoker._loading import cursor as _cursor
from stoker._loading import epoch as _epoch
from stoker._remote import client as _client
from stoker._remote import split as _split


@dataclasses.dataclass
class LocalFirst:
    """What a RemoteLoader reading local first gives its epochs: the local engine, how to reach
    the servers and lay the sources out, the split and its meter, and the counters the epochs
    update (the loader's stats())."""

    engine: Any  # the local engine's _core.Loader
    output: str  # what the local engine's batches are ("numpy", "torch", ...)
    connect: Callable[[], _client.Servers | None]  # the servers there are now (None: none)
    # The layout over `servers` with `local` chunks (None: the controller's share).
    layout: Callable[[_client.Servers | None, int | None], _split.Layout]
    convert: Callable[[Any], Any]  # a served batch (a _core.Batch) as the loader delivers it
    batch_transform: Callable[[Any], Any] | None  # applied to the local engine's batches
    split: _split.SplitController
    meter: _split.WindowMeter
    stats: dict[str, Any]
    fleet: Any  # the stoker.ray.Fleet reported to, or None
    trainer_id: str
    current_layout: _split.Layout | None = None  # the layout an epoch read last


class LocalFirstEpoch(_cursor.EpochIterator):
    """An epoch read from the local engine's share and the servers' streams (see module)."""

    def __init__(self, ctx: LocalFirst, stream: dict[str, Any], progress: _cursor.Progress,
                 num_batches: int, planned_rows: Callable[[int], int],
                 on_close: Callable[[], None] | None = None) -> None:
        super().__init__(progress, num_batches)
        self._ctx, self._stream, self._planned_rows = ctx, stream, planned_rows
        self._on_close = on_close
        self._next = 0
        self._servers = ctx.connect()
        self._layout = ctx.layout(self._servers, None)
        ctx.current_layout = self._layout
        self._local: _epoch.EngineReader | None = None
        self._remote: dict[int, _client.Stream] = {}
        # Per source opened, its first batches not yet taken whose waits count in no window:
        # its pipeline filling (the first batch, at an epoch's start or after a failure), or,
        # opened by a move of the split, its whole first chunk (the read-ahead filling too:
        # the next window judges the setting moved to, not the move, whose cost the hold
        # rule bounds).
        self._filling: dict[int, int] = {}
        self._blocked = 0.0  # seconds the batch being read has waited for its source
        self._meter = ctx.meter
        self._meter.resume(time.perf_counter())

    def _open(self, first: int, filling: int = 1) -> None:
        """Opens every source's share of the layout from batch `first` on; the first
        `filling` batches of each count in no window."""
        layout, stream = self._layout, self._stream
        if layout.local > 0:
            epoch = self._ctx.engine.start_share(
                stream["epoch"], [(int(n), int(r)) for n, r in stream["rounds"]],
                shards=layout.period, shard=0, span=layout.local, chunk=layout.chunk,
                first=first)
            self._local = _epoch.EngineReader(epoch, self._ctx.output)
            self._filling[_split.LOCAL] = filling
        for k in range(layout.servers):
            self._open_server(k, first, filling)

    def _open_server(self, k: int, first: int, filling: int = 1) -> None:
        assert self._servers is not None
        layout = self._layout
        ticket = self._servers.ticket(self._stream, shards=layout.period,
                                      shard=layout.local + k, chunk=layout.chunk,
                                      first=first)
        # A chunk ahead: the server fills its next chunk while the consumer takes the others'.
        self._remote[k] = self._servers.servers[k].read(ticket, depth=layout.chunk)
        self._filling[k] = filling

    def _close_sources(self) -> None:
        self._filling.clear()
        if self._local is not None:
            self._local.epoch.close()
            self._local = None
        for source in self._remote.values():
            source.close()
        self._remote.clear()

    def _read_local(self, b: int) -> Any:
        assert self._local is not None
        started = time.perf_counter()
        while not self._local.epoch.wait_ready():  # 100 ms at a time, the GIL released
            pass
        self._blocked += time.perf_counter() - started
        got = self._local.next()
        if got is None:
            raise RuntimeError(f"the local engine's share ended before batch {b}")
        self._ctx.stats["rows"] += _epoch.num_rows(got[1])
        transform = self._ctx.batch_transform
        return got[1] if transform is None else transform(got[1])

    def _read_remote(self, k: int, b: int) -> Any:
        servers = self._servers
        assert servers is not None
        backoff = _client.Backoff(servers, self._ctx.stats)
        while True:
            location = servers.servers[k].location
            try:
                if k not in self._remote:
                    self._open_server(k, b)
                started = time.perf_counter()
                batch = self._remote[k].next()
                self._blocked += time.perf_counter() - started
                self._ctx.stats["rows"] += batch.num_rows
                self._ctx.stats["bytes_received"] += batch.nbytes  # a _core.Batch's buffers
                return self._ctx.convert(batch)
            except _client.RETRYABLE as error:
                self._remote.pop(k).close()
                backoff.wait(location, b, self._stream["epoch"], error)
                with contextlib.suppress(*_client.RETRYABLE):
                    if self._relayout(b, self._ctx.connect()):
                        return self._read(b)  # the servers changed: b's source may too
            except StopIteration:
                raise ConnectionError(f"server {location} ended its stream "
                                      f"before batch {b}") from None

    def _relayout(self, b: int, servers: _client.Servers | None,
                  local: int | None = None, moved: bool = False) -> bool:
        """Reads from `servers` with `local` chunks (None: as now) from batch b on; True when
        the layout changed (every source reopened at b). `moved`: by the window's end (the
        split or the fleet moved), so each source's first chunk counts in no window."""
        layout = self._ctx.layout(servers, local)
        if layout == self._layout and servers is self._servers:
            return False
        self._close_sources()
        self._servers, self._layout = servers, layout
        self._ctx.current_layout = layout
        self._ctx.stats["relayouts"] += 1
        self._open(b, layout.chunk if moved else 1)
        return True

    def _read(self, b: int) -> Any:
        owner = self._layout.owner(b)
        if owner == _split.LOCAL:
            return self._read_local(b)
        return self._read_remote(owner, b)

    def _pull(self) -> tuple[int, Any] | None:
        if self._next >= len(self):
            return None
        b = self._next
        if b == 0 or (self._local is None and not self._remote):
            self._open(b)
        source = self._layout.owner(b)
        started = time.perf_counter()
        # The controller's wait: the time blocked for a batch, not its conversion (the
        # consumer's own work, the same whichever source served it).
        self._blocked = 0.0
        batch = self._read(b)
        now = time.perf_counter()
        wait = self._blocked
        stats = self._ctx.stats
        stats["wait_seconds"] += now - started
        stats["batches"] += 1
        stats["local_batches" if source == _split.LOCAL else "remote_batches"] += 1
        self._next += 1
        left = self._filling.get(source, 0)
        if left > 0:  # its first chunk, filling: in no window
            self._filling[source] = left - 1
            self._meter.skip(wait)
        else:
            self._meter.add(source, wait)
        # A window closes between two batches of an epoch (one ending with the epoch is
        # carried into the next), so the split moves where there are batches to move.
        layout, options = self._layout, self._ctx.split.options
        period = 0 if options.random_moves is not None else layout.period * layout.chunk
        window = self._meter.done(now, period) if self._next < len(self) else None
        if window is not None:
            self._end_window(window)
        return self._planned_rows(b), batch

    def _end_window(self, window: _split.Window) -> None:
        ctx = self._ctx
        servers = self._layout.servers
        local = ctx.split.decide(window, servers)
        if ctx.fleet is not None:
            ctx.fleet.report(ctx.trainer_id, {**window.figures(), "servers": servers,
                                              "local_share": self._layout.local_share(),
                                              "servers_short": ctx.split.servers_short(window)})
        self._relayout(self._next, ctx.connect(), local, moved=True)

    def _release(self) -> None:
        self._meter.pause(time.perf_counter())
        self._close_sources()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


def trainer_id() -> str:
    """A name for this loader in its fleet's reports."""
    return uuid.uuid4().hex[:12]
