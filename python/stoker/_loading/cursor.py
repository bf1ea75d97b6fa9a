"""The epoch cursor Loader and RemoteLoader share: which epoch the next ``iter()`` reads,
where the current one stands, and the resume state made from them (docs/determinism.md)."""

from __future__ import annotations

import sys
import warnings
import weakref
from typing import Any

from stoker import _core
from stoker._loading import state as _state


class Progress:
    """Where the current epoch stands: what a checkpoint taken now must say."""

    def __init__(self, epoch: int, rounds: list[list[int]]) -> None:
        self.epoch = epoch
        self.rounds = rounds  # stretches consumed before this run of the epoch
        self.rows = 0  # rows delivered by this run of the epoch
        self.finished = False


class EpochCursor:
    """The epoch the next ``iter()`` reads (with what a resume says was consumed of it), and
    the progress of the one being read."""

    def __init__(self, identity: dict[str, Any], rank: int, world_size: int) -> None:
        self.identity, self.rank, self.world_size = identity, rank, world_size
        self._epoch = 0
        self._pending_rounds: list[list[int]] = []
        self._progress: Progress | None = None

    def set_epoch(self, epoch: int) -> None:
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise TypeError(f"epoch must be an int, got {epoch!r}")
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        if self._progress is None and epoch == self._epoch:
            return  # the position a load or skip put in this epoch (or its start) stays
        self._epoch, self._pending_rounds, self._progress = epoch, [], None

    def start(self) -> Progress:
        """Begins the next epoch; later ones count up from it."""
        self._progress = Progress(self._epoch, self._pending_rounds)
        self._epoch, self._pending_rounds = self._epoch + 1, []
        return self._progress

    def state(self, delivered_digest: str) -> dict[str, Any]:
        epoch, rounds = _state.position(self._progress, self._epoch, self._pending_rounds,
                                        self.world_size)
        epoch, rounds = _state.past_epoch_end(epoch, rounds, self.identity, self.world_size)
        return _state.make_state(epoch=epoch, rounds=rounds, rank=self.rank,
                                 world_size=self.world_size, identity=self.identity,
                                 delivered_digest=delivered_digest)

    def skip(self, n_batches: int) -> None:
        """Moves the position ``n_batches`` batches on, across epoch ends, without reading:
        the next ``start()`` begins after them. O(1) in the dataset and in ``n_batches``."""
        if isinstance(n_batches, bool) or not isinstance(n_batches, int):
            raise TypeError(f"n_batches must be an int, got {n_batches!r}")
        if n_batches < 0:
            raise ValueError(f"n_batches must be >= 0 (skip only moves forward; load an "
                             f"earlier state_dict() to go back), got {n_batches}")
        rows, batch_size = self.identity["rows"], self.identity["batch_size"]
        epoch, rounds = _state.position(self._progress, self._epoch, self._pending_rounds,
                                        self.world_size)
        left = self._batches_left(rounds)
        if n_batches >= left:  # past this epoch's end: whole epochs, then into the next
            per_epoch = self._batches_left([])
            n_batches -= left
            if n_batches > 0 and per_epoch == 0:
                raise ValueError(f"cannot skip {n_batches} more batches: an epoch has no "
                                 f"batches for this rank (rows={rows}, world_size="
                                 f"{self.world_size}, batch_size={batch_size})")
            whole, n_batches = divmod(n_batches, per_epoch) if per_epoch else (0, 0)
            epoch, rounds = epoch + 1 + whole, []
        rounds = _state.merge_round(rounds, self.world_size, n_batches * batch_size)
        self._epoch, self._pending_rounds, self._progress = epoch, rounds, None

    def _batches_left(self, rounds: list[list[int]]) -> int:
        """This rank's batches left of an epoch after ``rounds`` (in training or evaluation,
        with its padding): the plan's own count (``_core.batches_left``)."""
        identity = self.identity
        return _core.batches_left(
            identity["rows"], [(int(n), int(r)) for n, r in rounds], self.world_size, self.rank,
            identity["batch_size"], identity["drop_last"], identity.get("mode", "train"),
            identity.get("pad_to_equal_steps", False))

    def load(self, state: Any, *, strict: bool) -> bool:
        """Continues from a saved state; True when it is this very rank's (same rank and world
        size), whose delivered digest can be carried on."""
        epoch, rounds = _state.check_state(state, self.identity, strict=strict)
        epoch, rounds = _state.past_epoch_end(epoch, rounds, self.identity, self.world_size)
        self._epoch, self._pending_rounds, self._progress = epoch, rounds, None
        return state.get("world_size") == self.world_size and state.get("rank") == self.rank


class EpochLoader:
    """Iteration, ``set_epoch`` and ``state_dict``/``load_state_dict`` over an EpochCursor;
    a loader says how to read an epoch (``_read_epoch``) and what it knows of the delivered
    rows (``_delivered_digest``, ``_restore_digest``)."""

    _cursor: EpochCursor
    _open: weakref.ref | None = None  # the iterator of the epoch being read, if any

    def _read_epoch(self, progress: Progress) -> EpochIterator:
        raise NotImplementedError

    def _delivered_digest(self) -> str:
        return ""

    def _restore_digest(self, digest: str) -> None:
        pass

    def set_epoch(self, epoch: int) -> None:
        """Makes the next epoch ``epoch`` (later ones count up), read from its start, as
        ``DistributedSampler.set_epoch`` does; except that a position ``load_state_dict()``
        or ``skip()`` put inside ``epoch`` is kept, so the usual resume loop (load the
        checkpoint, then ``set_epoch(e)`` before each epoch from the saved one on) continues
        mid-epoch instead of reading the saved epoch again."""
        self._cursor.set_epoch(epoch)

    @property
    def sampler(self) -> _SamplerHook:
        """What frameworks that call ``loader.sampler.set_epoch(epoch)`` before each epoch
        (Lightning, Accelerate) find: it calls ``set_epoch``."""
        return _SamplerHook(self)

    def __getitem__(self, index: Any) -> Any:
        raise TypeError(
            f"{type(self).__name__} is not a map-style dataset: it is the data loader itself "
            f"(it batches, shuffles, shards and runs its own threads). Iterate it in place of "
            f"torch.utils.data.DataLoader (for batch in loader: ...); where a torch Dataset is "
            f"required, pass stoker.torch.IterableDataset(loader) to "
            f"DataLoader(..., batch_size=None) (docs/pytorch.md)")

    def skip(self, n_batches: int) -> None:
        """Moves on ``n_batches`` batches without reading them: the next ``iter()`` starts
        with the batch that would have come after them, exactly as if they had been read and
        discarded. From the epoch's start, mid-epoch (an iterator still open is closed: its
        epoch continues in the next ``iter()``) or after a ``load_state_dict``; a skip past
        the epoch's end goes on into the next epochs. It costs O(1): no data is read and
        ``state_dict()`` afterwards says where the skip landed. The delivered digest counts
        only delivered rows. See docs/state.md."""
        self._cursor.skip(n_batches)
        self._close_open()

    def __iter__(self) -> LazyEpoch:
        """The next epoch's batches. The epoch is claimed (and reading starts) at the first
        ``next()`` (or ``len()``) of the iterator, not here: frameworks that call ``iter()``
        to check a loader and drop the result (Lightning) neither use up an epoch nor read
        data for nothing."""
        iterator = LazyEpoch(self)
        self._open = weakref.ref(iterator)
        return iterator

    def _start_epoch(self) -> EpochIterator:
        _warn_if_unsharded(self._cursor.world_size)
        return self._read_epoch(self._cursor.start())

    def _close_open(self) -> None:
        """Closes the iterator of the epoch being read: the cursor moved away from it."""
        iterator = self._open() if self._open is not None else None
        if iterator is not None:
            iterator.close()
        self._open = None

    def state_dict(self) -> dict[str, Any]:
        """Where this rank stands, as a small JSON-serializable dict: the epoch, the rows each
        rank consumed in it (per world size), and what identifies the dataset and options.
        Take it between batches; ``load_state_dict`` continues with exactly the batches the
        uninterrupted run would have produced next. A Loader and a RemoteLoader load each
        other's states. See docs/determinism.md."""
        return self._cursor.state(self._delivered_digest())

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Resumes from ``state_dict()`` of this rank or of any rank of a lock-stepped job,
        with any world size: the next ``iter()`` reads the rest of the saved epoch, split
        evenly among this job's ranks. A state from another dataset, seed, shuffle setting,
        shuffle window, batch size, drop_last or column set raises ValueError saying what
        differs; ``strict=False`` loads it anyway with a warning."""
        self._close_open()
        if self._cursor.load(state, strict=strict) and state.get("delivered_digest"):
            self._restore_digest(state["delivered_digest"])


class _SamplerHook:
    """``loader.sampler``: only the ``set_epoch`` a sampler has."""

    def __init__(self, loader: EpochLoader) -> None:
        self._loader = loader

    def set_epoch(self, epoch: int) -> None:
        self._loader.set_epoch(epoch)


class LazyEpoch:
    """What ``iter(loader)`` returns: the epoch's iterator, started at its first ``next()``
    or ``len()``."""

    def __init__(self, loader: EpochLoader) -> None:
        self._loader: EpochLoader | None = loader
        self._epoch: EpochIterator | None = None

    def _started(self) -> EpochIterator | None:
        if self._loader is not None:
            loader, self._loader = self._loader, None
            self._epoch = loader._start_epoch()
        return self._epoch

    def __iter__(self) -> LazyEpoch:
        return self

    def __next__(self) -> Any:
        epoch = self._started()
        if epoch is None:
            raise StopIteration
        return next(epoch)

    def __len__(self) -> int:
        """Batches of this epoch (after a resume: the batches left); starts it."""
        epoch = self._started()
        return 0 if epoch is None else len(epoch)

    def close(self) -> None:
        """Stops reading this epoch now (an epoch not started yet never starts); idempotent."""
        self._loader = None
        if self._epoch is not None:
            self._epoch.close()


def _warn_if_unsharded(world_size: int) -> None:
    """Every rank of a data-parallel job reading every row is a silent mistake: warns when
    torch.distributed runs with several ranks and the loader was given none."""
    if world_size != 1:
        return
    distributed = getattr(sys.modules.get("torch"), "distributed", None)
    if distributed is None or not distributed.is_available() or not distributed.is_initialized():
        return
    ranks = distributed.get_world_size()
    if ranks > 1:
        warnings.warn(
            f"torch.distributed runs {ranks} ranks but this loader has world_size=1: every rank "
            f"reads every row. Pass rank=torch.distributed.get_rank(), world_size="
            f"torch.distributed.get_world_size() (Lightning: trainer.global_rank, "
            f"trainer.world_size) to give each rank its own share", stacklevel=4)


class EpochIterator:
    """One epoch's batches: counts the rows delivered into its Progress, marks the epoch
    finished at its end, and closes. A reader says how to get the next batch (``_pull``) and
    what closing frees (``_release``)."""

    def __init__(self, progress: Progress, length: int) -> None:
        self._progress = progress
        self._len = length
        self._closed = False

    def _pull(self) -> tuple[int, Any] | None:
        """The next batch as (rows, batch); None after the last."""
        raise NotImplementedError

    def _release(self) -> None:
        pass

    def __iter__(self) -> EpochIterator:
        return self

    def __len__(self) -> int:
        """Batches of this epoch (after a resume: the batches left)."""
        return self._len

    def __next__(self) -> Any:
        if self._closed:
            raise StopIteration
        item = self._pull()
        if item is None:
            self._progress.finished = True
            self.close()
            raise StopIteration
        rows, batch = item
        self._progress.rows += rows
        return batch

    def close(self) -> None:
        """Stops reading this epoch now; idempotent."""
        self._closed = True
        self._release()
