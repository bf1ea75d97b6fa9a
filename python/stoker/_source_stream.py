"""One mixture source as an endless stream of rows: its own epochs 0, 1, 2, ... back to back,
each in its own plan's order (world size 1), read from any position onward by the engine
(docs/mixtures.md)."""

from __future__ import annotations

from typing import Any

from stoker import _core
from stoker._loader import _CapsuleBatch


class SourceStream:
    """Hands out the rows of a source's stream Z in order: row z of Z is row z mod T of the
    source's epoch z // T (T rows per epoch). ``take(start, count)`` continues the engine
    epoch being read when ``start`` is where the last take ended, and otherwise starts the
    engine at ``start`` (a resume of that epoch after z mod T rows: nothing before it is
    read). At most one engine epoch is open; its read-ahead is bounded by the source
    loader's ``prefetch``. Rows are handed out as (``_core.SourceBatch``, offset, length)
    slices of the engine's batches, never copied here."""

    def __init__(self, core: Any, rows_per_epoch: int, names: list[str]) -> None:
        self._core = core  # the source's _core.Loader, output "arrow", world size 1
        self.rows_per_epoch = rows_per_epoch
        self._names = names  # the mixture's column order when this source's differs; or []
        self._epoch: Any = None  # the engine epoch being read
        self._source_epoch = 0
        self._position = -1  # row of Z that the buffer's first unconsumed row is
        self._batch: Any = None  # the engine batch being handed out
        self._offset = 0  # its first row not handed out yet

    def take(self, start: int, count: int) -> list[tuple[Any, int, int]]:
        """Rows [start, start + count) of Z, as (SourceBatch, offset, length) slices."""
        if start != self._position:
            self._open(start)
        out = []
        while count > 0:
            if self._batch is None or self._offset == self._batch.num_rows:
                self._fill()
            n = min(count, self._batch.num_rows - self._offset)
            out.append((self._batch, self._offset, n))
            self._offset += n
            count -= n
            self._position += n
        return out

    def close(self) -> None:
        """Stops the engine epoch being read (its workers are joined)."""
        epoch, self._epoch = self._epoch, None
        self._batch, self._offset, self._position = None, 0, -1
        if epoch is not None:
            epoch.close()

    def _open(self, start: int) -> None:
        self.close()
        self._source_epoch, offset = divmod(start, self.rows_per_epoch)
        self._start_engine(offset)
        self._position = start

    def _start_engine(self, offset: int) -> None:
        resumed = [(1, offset)] if offset else []
        self._epoch = self._core.start_epoch(self._source_epoch, resumed)

    def _fill(self) -> None:
        """Takes the next engine batch, going on into the source's next epoch at the end of
        one."""
        while True:
            while not self._epoch.wait_ready():  # the GIL is free while it waits
                pass
            capsules = self._epoch.next()
            if capsules is not None:
                self._batch = _core.import_batch(_CapsuleBatch(capsules), self._names)
                self._offset = 0
                return
            self._epoch.close()
            self._source_epoch += 1
            self._start_engine(0)
