"""The public Loader: keyword-only options mirrored onto the C++ engine's LoaderOptions."""

from __future__ import annotations

import atexit
import os
import queue
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from stoker import _core, _state, _storage, _transforms

_OUTPUTS = ("numpy", "torch", "arrow")

# Epochs still running; closed at interpreter exit so no worker outlives the interpreter.
_live_epochs: weakref.WeakSet[_EpochIterator] = weakref.WeakSet()


@atexit.register
def _close_live_epochs() -> None:
    for epoch in list(_live_epochs):
        epoch.close()


class _CapsuleSchema:
    """Hands an Arrow C data interface schema capsule to pyarrow."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> Any:
        return self._capsule


class _CapsuleBatch:
    """Hands Arrow C data interface (schema, array) capsules to pyarrow."""

    def __init__(self, capsules: tuple[Any, Any]) -> None:
        self._capsules = capsules

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        return self._capsules


def _sources(source: Any) -> list[str]:
    items = source if isinstance(source, (list, tuple)) else [source]
    if not items:
        raise ValueError("source: the list of files is empty")
    out = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"source must be a path, a glob or a list of them, got {item!r}")
        out.append(os.fspath(item))
    return out


def _int_option(name: str, value: Any, *, minimum: int, allow_none: bool = False) -> int:
    if value is None and allow_none:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


class _Progress:
    """Where the current epoch stands: what a checkpoint taken now must say."""

    def __init__(self, epoch: int, rounds: list[list[int]]) -> None:
        self.epoch = epoch
        self.rounds = rounds  # stretches consumed before this run of the epoch
        self.rows = 0  # rows delivered by this run of the epoch
        self.finished = False


class _EpochIterator:
    """Iterates one epoch; closing it (or dropping it) stops the workers.

    With a batch_transform, a background thread pulls batches from the engine and applies
    it, at most `prefetch` batches ahead, so the training thread only dequeues."""

    def __init__(self, epoch: Any, output: str, progress: _Progress,
                 batch_transform: Callable[[Any], Any] | None, prefetch: int) -> None:
        self._epoch = epoch
        self._output = output
        self._progress = progress
        self._len = epoch.num_batches()
        self._transform = batch_transform
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        if batch_transform is not None:
            self._queue = queue.Queue(maxsize=prefetch)
            self._thread = threading.Thread(target=self._pump, name="stoker-batch-transform",
                                            daemon=True)
            self._thread.start()
        _live_epochs.add(self)

    def __iter__(self) -> _EpochIterator:
        return self

    def __len__(self) -> int:
        """Batches of this epoch (after a resume: the batches left)."""
        return self._len

    def _pull(self) -> tuple[int, Any] | None:
        """The engine's next batch as (rows, batch); None at the end."""
        batch = self._epoch.next()
        if batch is None:
            return None
        if self._output == "arrow":
            batch = pa.record_batch(_CapsuleBatch(batch))
            return batch.num_rows, batch
        return len(next(iter(batch.values()))), batch

    def _pump(self) -> None:
        try:
            while not self._stop.is_set():
                item = self._pull()
                if item is not None:
                    item = (item[0], self._transform(item[1]))
                while not self._stop.is_set():
                    try:
                        self._queue.put(("ok", item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if item is None:
                    return
        except BaseException as error:  # noqa: BLE001 (handed to the consumer, raised there)
            self._queue.put(("error", error))

    def __next__(self) -> Any:
        if self._epoch is None:
            raise StopIteration
        if self._queue is None:
            item = self._pull()
        else:
            kind, item = self._queue.get()
            if kind == "error":
                self.close()
                raise item
        if item is None:
            self._progress.finished = True
            self.close()
            raise StopIteration
        rows, batch = item
        self._progress.rows += rows
        return batch

    def close(self) -> None:
        self._stop.set()
        epoch, self._epoch = self._epoch, None
        if self._queue is not None and self._thread is not threading.current_thread():
            while self._thread.is_alive():  # unblock a full queue, then let it see _stop
                try:
                    self._queue.get(timeout=0.05)
                except queue.Empty:
                    pass
        if epoch is not None:
            epoch.close()

    def __del__(self) -> None:
        self.close()


class Loader:
    """Reads a Parquet dataset as exact, deterministic, shuffled batches.

    Each ``iter(loader)`` is one epoch; epochs count up from 0 unless ``set_epoch`` says
    otherwise. With the same dataset, seed, epoch, rank and world size the batches are
    bit-identical whatever ``num_threads`` is.

    Args:
        source: a Parquet file, a directory (searched recursively for ``*.parquet``), a glob,
            or a list of those. Files are read in sorted path order.
        columns: columns to read, in output order; None reads all.
        batch_size: rows per batch. Every batch has exactly this many rows except possibly
            the last of an epoch (dropped when ``drop_last``).
        shuffle: shuffle rows; False delivers file order, row-group order, row order.
        seed: key of the shuffle; the same seed gives the same batches.
        shuffle_window: rows mixed together (rounded up to whole row groups); memory holds
            about this many decoded rows. None: 262144.
        rank, world_size: this process's data-parallel rank. Ranks see disjoint rows and the
            same number of batches; at most ``world_size - 1`` rows per epoch are left out.
        drop_last: drop a short last batch.
        num_threads: worker threads; None uses every core.
        prefetch: finished batches kept ready ahead of the consumer; None: 2 per thread.
        output: "numpy" (dict of np.ndarray), "torch" (dict of torch.Tensor) or "arrow"
            (pyarrow.RecordBatch).
        transforms: feature transforms run per row group in the C++ workers: a list of
            dicts such as ``{"op": "log1p", "column": "I1"}`` (docs/transforms.md).
        filter: a ``pyarrow.compute`` expression; only rows for which it is true are
            delivered. Row groups whose statistics rule it out are skipped unread.
        batch_transform: a Python callable applied to each finished batch in a background
            thread: the slow path, for what the transforms cannot express.
        storage_options: how to reach ``s3://`` sources: region, endpoint_override, scheme,
            anonymous, access_key/secret_key/session_token (default: the AWS credential
            chain), max_attempts, connect_timeout, request_timeout, io_threads
            (docs/storage.md).
        cache_dir: a local directory caching finished row groups (after projection, filter
            and transforms) so later epochs skip reads and decoding; the output is the same
            with or without it (docs/cache.md). None: no cache.
        cache_limit_bytes: what the cache may hold on disk (0: no limit).
        cache_policy: "lru" evicts the least recently used entries to stay under the limit;
            "fill" stores until the limit and then keeps what it has.
    """

    def __init__(
        self,
        source: str | os.PathLike | Sequence[str | os.PathLike],
        *,
        columns: Sequence[str] | None = None,
        batch_size: int,
        shuffle: bool = True,
        seed: int = 0,
        shuffle_window: int | None = None,
        rank: int = 0,
        world_size: int = 1,
        drop_last: bool = False,
        num_threads: int | None = None,
        prefetch: int | None = None,
        output: str = "numpy",
        transforms: Sequence[dict[str, Any]] | None = None,
        filter: pc.Expression | None = None,
        batch_transform: Callable[[Any], Any] | None = None,
        storage_options: dict[str, Any] | None = None,
        cache_dir: str | os.PathLike | None = None,
        cache_limit_bytes: int = 0,
        cache_policy: str = "lru",
    ) -> None:
        if output not in _OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(map(repr, _OUTPUTS))}, "
                             f"got {output!r}")
        if output == "torch":
            try:
                import torch  # noqa: F401
            except ImportError as e:
                raise ImportError('output="torch" needs PyTorch: pip install torch') from e
        if columns is not None and (isinstance(columns, str) or
                                    not all(isinstance(c, str) for c in columns)):
            raise TypeError(f"columns must be a list of column names, got {columns!r}")
        world_size = _int_option("world_size", world_size, minimum=1)
        rank = _int_option("rank", rank, minimum=0)
        if rank >= world_size:
            raise ValueError(f"rank must be < world_size ({world_size}), got {rank}")
        if filter is not None and not isinstance(filter, pc.Expression):
            raise TypeError(f"filter must be a pyarrow.compute expression such as "
                            f"pc.field('label') > 0, got {filter!r}")
        if cache_policy not in ("lru", "fill"):
            raise ValueError(f"cache_policy must be 'lru' or 'fill', got {cache_policy!r}")
        if batch_transform is not None and not callable(batch_transform):
            raise TypeError(f"batch_transform must be callable, got {batch_transform!r}")
        self._output = output
        self._batch_transform = batch_transform
        self._prefetch = prefetch or 2
        self._rank, self._world_size = rank, world_size
        self._epoch = 0  # the epoch the next iter() reads
        self._pending_rounds: list[list[int]] = []  # its consumed stretches, after a resume
        self._progress: _Progress | None = None
        self._core = _core.Loader(
            sources=_sources(source),
            columns=list(columns or []),
            batch_size=_int_option("batch_size", batch_size, minimum=1),
            shuffle=bool(shuffle),
            seed=_int_option("seed", seed, minimum=0),
            shuffle_window=_int_option("shuffle_window", shuffle_window, minimum=1,
                                       allow_none=True),
            rank=rank,
            world_size=world_size,
            drop_last=bool(drop_last),
            num_threads=_int_option("num_threads", num_threads, minimum=1, allow_none=True),
            prefetch=_int_option("prefetch", prefetch, minimum=1, allow_none=True),
            output=output,
            transforms=_transforms.normalize(transforms),
            filter=None if filter is None else filter.__reduce__()[1][0].to_pybytes(),
            storage=_storage.normalize(storage_options),
            cache_dir="" if cache_dir is None else os.fspath(cache_dir),
            cache_limit_bytes=_int_option("cache_limit_bytes", cache_limit_bytes, minimum=0),
            cache_policy=cache_policy,
        )
        self._schema = pa.schema(_CapsuleSchema(self._core.schema_capsule()))
        dataset = self._core.dataset()
        self._identity = {
            "dataset_fingerprint": dataset["fingerprint"],
            "files": len(dataset["files"]),
            "rows": dataset["rows"],
            "seed": seed,
            "shuffle": bool(shuffle),
            "shuffle_window": dataset["shuffle_window"] if shuffle else None,
            "batch_size": batch_size,
            "drop_last": bool(drop_last),
            "columns_digest": _state.columns_digest(self._schema.names),
            "filter_digest": dataset["filter_digest"],
        }

    @property
    def schema(self) -> pa.Schema:
        """The columns of every batch, as Arrow types."""
        return self._schema

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._core.num_batches()

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` read ``epoch`` from its start (later ones count up)."""
        self._epoch = _int_option("epoch", epoch, minimum=0)
        self._pending_rounds = []
        self._progress = None

    def __iter__(self) -> Iterator[Any]:
        epoch, rounds = self._epoch, self._pending_rounds
        self._epoch, self._pending_rounds = epoch + 1, []
        stream = self._core.start_epoch(epoch, [tuple(r) for r in rounds])
        self._progress = _Progress(epoch, rounds)
        return _EpochIterator(stream, self._output, self._progress, self._batch_transform,
                              self._prefetch)

    def state_dict(self) -> dict[str, Any]:
        """Where this rank stands, as a small JSON-serializable dict: the epoch, the rows each
        rank consumed in it (per world size), and what identifies the dataset and options.
        Take it between batches; ``load_state_dict`` continues with exactly the batches the
        uninterrupted run would have produced next. See docs/determinism.md."""
        epoch, rounds = _state.position(self._progress, self._epoch, self._pending_rounds,
                                        self._world_size)
        return _state.make_state(epoch=epoch, rounds=rounds, rank=self._rank,
                                 world_size=self._world_size, identity=self._identity,
                                 delivered_digest=self._core.stats()["delivered_digest"])

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Resumes from ``state_dict()`` of this rank or of any rank of a lock-stepped job,
        with any world size: the next ``iter()`` reads the rest of the saved epoch, split
        evenly among this job's ranks. A state from another dataset, seed, shuffle setting,
        shuffle window, batch size, drop_last or column set raises ValueError saying what
        differs; ``strict=False`` loads it anyway with a warning."""
        epoch, rounds = _state.check_state(state, self._identity, strict=strict)
        self._epoch, self._pending_rounds, self._progress = epoch, rounds, None
        if (state.get("delivered_digest") and state.get("world_size") == self._world_size
                and state.get("rank") == self._rank):
            self._core.restore_digest(state["delivered_digest"])

    def stats(self) -> dict[str, Any]:
        """Counters over the loader's life: rows, batches, bytes_read, units_read, the
        seconds spent reading, decoding, assembling (thread-seconds) and waiting (the
        consumer's wall time blocked on the next batch), and ``delivered_digest``: a running
        digest of the rows delivered in order (carried across a same-rank resume)."""
        return self._core.stats()

    def dataset_info(self) -> dict[str, Any]:
        """Files, rows, row groups and the fingerprint of the resolved dataset."""
        return self._core.dataset()
