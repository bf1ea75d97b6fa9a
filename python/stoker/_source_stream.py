"""One mixture source as an endless stream of rows: its own epochs 0, 1, 2, ... back to back,
each in its own plan's order (world size 1), read from any position onward by the engine
(docs/mixtures.md)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from stoker._loader import _CapsuleBatch


class SourceStream:
    """Hands out the rows of a source's stream Z in order: row z of Z is row z mod T of the
    source's epoch z // T (T rows per epoch). ``take(start, count)`` continues the engine
    epoch being read when ``start`` is where the last take ended, and otherwise starts the
    engine at ``start`` (a resume of that epoch after z mod T rows: nothing before it is
    read). At most one engine epoch is open; its read-ahead is bounded by the source
    loader's ``prefetch``."""

    def __init__(self, core: Any, rows_per_epoch: int, schema: pa.Schema | None) -> None:
        self._core = core  # the source's _core.Loader, output "arrow", world size 1
        self.rows_per_epoch = rows_per_epoch
        self._schema = schema  # the mixture's output schema when this source's differs
        self._epoch: Any = None  # the engine epoch being read
        self._source_epoch = 0
        self._position = -1  # row of Z that self._buffer starts with
        self._buffer: list[pa.RecordBatch] = []  # rows read from the engine, not handed out

    def take(self, start: int, count: int) -> list[pa.RecordBatch]:
        """Rows [start, start + count) of Z, as zero-copy slices of the engine's batches."""
        if start != self._position:
            self._open(start)
        out = []
        while count > 0:
            if not self._buffer:
                self._fill()
            batch = self._buffer[0]
            n = min(count, batch.num_rows)
            out.append(batch.slice(0, n))
            if n < batch.num_rows:
                self._buffer[0] = batch.slice(n)
            else:
                self._buffer.pop(0)
            count -= n
            self._position += n
        return out

    def close(self) -> None:
        """Stops the engine epoch being read (its workers are joined)."""
        epoch, self._epoch = self._epoch, None
        self._buffer, self._position = [], -1
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
        """Reads the next engine batch into the buffer, going on into the source's next epoch
        at the end of one."""
        while True:
            while not self._epoch.wait_ready():  # the GIL is free while it waits
                pass
            capsules = self._epoch.next()
            if capsules is not None:
                batch = pa.record_batch(_CapsuleBatch(capsules))
                if self._schema is not None:
                    batch = pa.RecordBatch.from_arrays(
                        [batch.column(name) for name in self._schema.names],
                        schema=self._schema)
                self._buffer.append(batch)
                return
            self._epoch.close()
            self._source_epoch += 1
            self._start_engine(0)

