"""RemoteLoader: the Loader API over batches streamed by `stoker serve` (Arrow Flight).

Several servers split each epoch's plan in chunks of batches dealt round robin; the client
reads their streams side by side and yields the batches in plan order, so the output is
bit-identical to a local Loader with the same options. A server that fails mid-stream is
reconnected to, and its stream resumed at the next batch the client needs."""

from __future__ import annotations

import contextlib
import json
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyarrow import flight

from stoker import _state

_RETRYABLE = (flight.FlightUnavailableError, flight.FlightTimedOutError,
              flight.FlightInternalError, ConnectionError)


def ticket(config: str, *, epoch: int, rank: int, world_size: int, rounds: list[list[int]],
           shards: int = 1, shard: int = 0, chunk: int = 1, first: int = 0) -> bytes:
    """The ticket naming a stream (the format docs/serve.md documents)."""
    text = ";".join([
        "stoker1", f"config={config}", f"epoch={epoch}", f"rank={rank}", f"world={world_size}",
        "rounds=" + ",".join(f"{w}:{c}" for w, c in rounds),
        f"shards={shards}", f"shard={shard}", f"chunk={chunk}", f"first={first}"])
    return text.encode()


class _Server:
    def __init__(self, location: str, headers: list, tls_root_certs: bytes | None) -> None:
        self.location = location
        kwargs = {"tls_root_certs": tls_root_certs} if tls_root_certs else {}
        self.client = flight.FlightClient(location, **kwargs)
        self.options = flight.FlightCallOptions(headers=headers)

    def action(self, kind: str, body: bytes = b"") -> dict:
        results = list(self.client.do_action(flight.Action(kind, body), self.options))
        return json.loads(results[0].body.to_pybytes())

    def read(self, ticket_bytes: bytes) -> flight.FlightStreamReader:
        return self.client.do_get(flight.Ticket(ticket_bytes), self.options)


def _columns(batch: pa.RecordBatch, ragged: set[str], output: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, column in zip(batch.schema.names, batch.columns):
        if column.null_count:
            raise ValueError(f"column '{name}' has null values; numpy/torch output cannot hold "
                             "nulls: use output='arrow' or a fill_null transform")
        if name in ragged:
            offsets = column.offsets.to_numpy()
            out[name] = column.values.slice(offsets[0], offsets[-1] - offsets[0]).to_numpy()
            out[name + "_offsets"] = (offsets - offsets[0]).astype(np.int64)
            continue
        shape = [len(column)]
        values = column
        while pa.types.is_fixed_size_list(values.type):
            shape.append(values.type.list_size)
            values = values.flatten()
        array = values.to_numpy(zero_copy_only=False).reshape(shape)
        out[name] = array
    if output == "torch":
        import torch

        with warnings.catch_warnings():
            # Arrays over received IPC buffers are flagged read-only; the buffers belong to
            # this batch alone, so sharing them with torch without a copy is safe.
            warnings.filterwarnings("ignore", "The given NumPy array is not writable")
            return {k: torch.from_numpy(v) for k, v in out.items()}
    return out


class _RemoteEpoch:
    def __init__(self, loader: RemoteLoader, epoch: int, rounds: list[list[int]],
                 progress: Any) -> None:
        self._loader = loader
        self._epoch, self._rounds, self._progress = epoch, rounds, progress
        self._len = loader._plan_batches(epoch, rounds)
        self._next = 0
        self._readers: dict[int, flight.FlightStreamReader] = {}

    def __iter__(self) -> _RemoteEpoch:
        return self

    def __len__(self) -> int:
        return self._len

    def _open(self, k: int, first: int) -> flight.FlightStreamReader:
        loader = self._loader
        return loader._servers[k].read(ticket(
            loader._config["config"], epoch=self._epoch, rank=loader._rank,
            world_size=loader._world_size, rounds=self._rounds, shards=len(loader._servers),
            shard=k, chunk=loader._chunk, first=first))

    def _read(self, k: int, b: int) -> pa.RecordBatch:
        loader = self._loader
        deadline = time.monotonic() + loader._reconnect_timeout
        delay = 0.1
        while True:
            try:
                if k not in self._readers:
                    self._readers[k] = self._open(k, b)
                return self._readers[k].read_chunk().data
            except _RETRYABLE as error:
                self._readers.pop(k, None)
                if time.monotonic() > deadline:
                    raise ConnectionError(
                        f"server {loader._servers[k].location} did not answer for "
                        f"{loader._reconnect_timeout:g} s (batch {b} of epoch {self._epoch}): "
                        f"{error}") from error
                loader._stats["reconnects"] += 1
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
            except StopIteration:
                raise ConnectionError(f"server {loader._servers[k].location} ended its stream "
                                      f"before batch {b}") from None

    def __next__(self) -> Any:
        if self._next >= self._len:
            self._progress.finished = True
            self.close()
            raise StopIteration
        b = self._next
        k = (b // self._loader._chunk) % len(self._loader._servers)
        started = time.perf_counter()
        batch = self._read(k, b)
        stats = self._loader._stats
        stats["wait_seconds"] += time.perf_counter() - started
        stats["rows"] += batch.num_rows
        stats["batches"] += 1
        stats["bytes_received"] += batch.nbytes
        self._next += 1
        self._progress.rows += batch.num_rows
        if self._loader._output == "arrow":
            return batch
        return _columns(batch, self._loader._ragged, self._loader._output)

    def close(self) -> None:
        for reader in self._readers.values():
            with contextlib.suppress(flight.FlightError, OSError):  # the server may be gone
                reader.cancel()
        self._readers.clear()


class RemoteLoader:
    """The Loader API over `stoker serve` servers: same iteration, ``len``, ``set_epoch``,
    ``state_dict``/``load_state_dict`` and ``stats()``, and bit-identical batches to a local
    ``stoker.Loader`` with the same options, however many servers serve it.

    Args:
        servers: Flight locations, e.g. ``["grpc://10.0.0.5:8815", "grpc+tls://..."]``.
        batch_size, seed, shuffle, shuffle_window, columns, drop_last: must match what the
            servers were started with (checked; None means "whatever the server has").
        rank, world_size: this trainer's data-parallel rank.
        output: "numpy", "torch" or "arrow".
        token: bearer token, when the servers need one.
        tls_root_certs: PEM of the CA that signed the servers' certificates (grpc+tls://).
        reconnect_timeout: seconds to keep reconnecting to a failed server before giving up.
    """

    def __init__(self, servers: str | Sequence[str], *, batch_size: int | None = None,
                 seed: int | None = None, shuffle: bool | None = None,
                 shuffle_window: int | None = None, columns: Sequence[str] | None = None,
                 drop_last: bool | None = None, rank: int = 0, world_size: int = 1,
                 output: str = "numpy", token: str | None = None,
                 tls_root_certs: bytes | str | None = None,
                 reconnect_timeout: float = 60.0) -> None:
        if isinstance(servers, str):
            servers = [servers]
        if not servers:
            raise ValueError("servers: give at least one grpc://host:port")
        if output not in ("numpy", "torch", "arrow"):
            raise ValueError(f"output must be 'numpy', 'torch' or 'arrow', got {output!r}")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank must satisfy 0 <= rank < world_size, got {rank} of "
                             f"{world_size}")
        headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
        if isinstance(tls_root_certs, str):
            tls_root_certs = tls_root_certs.encode()
        self._servers = [_Server(s, headers, tls_root_certs) for s in servers]
        configs = []
        for server in self._servers:
            try:
                configs.append(server.action("config"))
            except flight.FlightUnauthenticatedError as error:
                raise PermissionError(f"server {server.location}: {error}") from error
            except flight.FlightUnavailableError as error:
                raise ConnectionError(f"server {server.location} is unreachable: {error}") \
                    from error
        self._config = configs[0]
        for server, config in zip(self._servers, configs):
            if config["config"] != self._config["config"]:
                raise ValueError(f"server {server.location} serves another configuration than "
                                 f"{self._servers[0].location} (dataset or options differ)")
        wanted = {"batch_size": batch_size, "seed": seed, "shuffle": shuffle,
                  "shuffle_window": shuffle_window, "drop_last": drop_last,
                  "columns": list(columns) if columns is not None else None}
        differences = [f"{key}: asked {value!r}, served {self._config[key]!r}"
                       for key, value in wanted.items()
                       if value is not None and value != self._config[key]]
        if differences:
            raise ValueError("the servers were started with other options: " +
                             "; ".join(differences))
        self._rank, self._world_size = rank, world_size
        self._output = output
        self._chunk = int(self._config["chunk"])
        self._ragged = set(self._config.get("ragged", []))
        self._reconnect_timeout = reconnect_timeout
        self._epoch = 0
        self._pending_rounds: list[list[int]] = []
        self._progress = None
        self._stats = {"rows": 0, "batches": 0, "bytes_received": 0, "wait_seconds": 0.0,
                       "reconnects": 0}
        self._identity = {
            "dataset_fingerprint": self._config["dataset_fingerprint"],
            "files": self._config["files"], "rows": self._config["rows"],
            "seed": self._config["seed"], "shuffle": self._config["shuffle"],
            "shuffle_window": self._config["shuffle_window"],
            "batch_size": self._config["batch_size"], "drop_last": self._config["drop_last"],
            "columns_digest": _state.columns_digest(self._config["columns"]),
            "filter_digest": self._config["filter_digest"],
        }

    def _plan_batches(self, epoch: int, rounds: list[list[int]]) -> int:
        body = ticket(self._config["config"], epoch=epoch, rank=self._rank,
                      world_size=self._world_size, rounds=rounds)
        return int(self._servers[0].action("plan", body)["plan_batches"])

    @property
    def schema(self) -> pa.Schema:
        info = self._servers[0].client.get_flight_info(
            flight.FlightDescriptor.for_command(b"stoker"), self._servers[0].options)
        return info.schema

    def __len__(self) -> int:
        return self._plan_batches(0, [])

    def set_epoch(self, epoch: int) -> None:
        self._epoch, self._pending_rounds, self._progress = epoch, [], None

    def __iter__(self) -> Iterator[Any]:
        from stoker._loader import _Progress

        epoch, rounds = self._epoch, self._pending_rounds
        self._epoch, self._pending_rounds = epoch + 1, []
        self._progress = _Progress(epoch, rounds)
        return _RemoteEpoch(self, epoch, rounds, self._progress)

    def state_dict(self) -> dict[str, Any]:
        """As Loader.state_dict(); a local Loader can load it too, and vice versa."""
        epoch, rounds = _state.position(self._progress, self._epoch, self._pending_rounds,
                                        self._world_size)
        return _state.make_state(epoch=epoch, rounds=rounds, rank=self._rank,
                                 world_size=self._world_size, identity=self._identity,
                                 delivered_digest="")

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        epoch, rounds = _state.check_state(state, self._identity, strict=strict)
        self._epoch, self._pending_rounds, self._progress = epoch, rounds, None

    def stats(self) -> dict[str, Any]:
        """rows, batches, bytes_received, wait_seconds (the data stall) and reconnects."""
        return dict(self._stats)
