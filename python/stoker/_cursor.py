"""The epoch cursor Loader and RemoteLoader share: which epoch the next ``iter()`` reads,
where the current one stands, and the resume state made from them (docs/determinism.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stoker import _state


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
        self._epoch, self._pending_rounds, self._progress = epoch, [], None

    def start(self) -> Progress:
        """Begins the next epoch; later ones count up from it."""
        self._progress = Progress(self._epoch, self._pending_rounds)
        self._epoch, self._pending_rounds = self._epoch + 1, []
        return self._progress

    def state(self, delivered_digest: str) -> dict[str, Any]:
        epoch, rounds = _state.position(self._progress, self._epoch, self._pending_rounds,
                                        self.world_size)
        return _state.make_state(epoch=epoch, rounds=rounds, rank=self.rank,
                                 world_size=self.world_size, identity=self.identity,
                                 delivered_digest=delivered_digest)

    def load(self, state: Any, *, strict: bool) -> bool:
        """Continues from a saved state; True when it is this very rank's (same rank and world
        size), whose delivered digest can be carried on."""
        epoch, rounds = _state.check_state(state, self.identity, strict=strict)
        self._epoch, self._pending_rounds, self._progress = epoch, rounds, None
        return state.get("world_size") == self.world_size and state.get("rank") == self.rank


class EpochLoader:
    """Iteration, ``set_epoch`` and ``state_dict``/``load_state_dict`` over an EpochCursor;
    a loader says how to read an epoch (``_read_epoch``) and what it knows of the delivered
    rows (``_delivered_digest``, ``_restore_digest``)."""

    _cursor: EpochCursor

    def _read_epoch(self, progress: Progress) -> Iterator[Any]:
        raise NotImplementedError

    def _delivered_digest(self) -> str:
        return ""

    def _restore_digest(self, digest: str) -> None:
        pass

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` read ``epoch`` from its start (later ones count up)."""
        self._cursor.set_epoch(epoch)

    def __iter__(self) -> Iterator[Any]:
        return self._read_epoch(self._cursor.start())

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
        if self._cursor.load(state, strict=strict) and state.get("delivered_digest"):
            self._restore_digest(state["delivered_digest"])


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
