"""Petastorm's torch loaders over a stoker.petastorm reader: DataLoader collates rows from
make_reader, BatchedDataLoader re-batches column batches from make_batch_reader; both give
dicts of torch tensors. Shuffling is the Loader's (shuffle_window rows mixed across row
groups), so ``shuffling_queue_capacity`` adds none (docs/petastorm.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Self

import numpy as np

from stoker.petastorm._reader import Reader


def _to_tensor(values: Any) -> Any:
    import torch

    if isinstance(values, np.ndarray) and values.dtype != object:
        return torch.as_tensor(values)
    if isinstance(values, np.ndarray) and len(values) and isinstance(values[0], np.ndarray):
        return [torch.as_tensor(v) for v in values]
    return values if not isinstance(values, np.ndarray) else list(values)


class _LoaderBase:
    """What both loaders share: each ``iter()`` is one pass over the reader, and a pass after
    one that read every row starts the reader again (its next epoch), as Petastorm's
    loaders reset their reader; a pass while another is in progress is an error."""

    reader: Reader
    _in_pass = False  # a pass is being read
    _passes = 0  # passes started

    def __iter__(self) -> Iterator[Any]:
        if self._in_pass:
            raise RuntimeError("Cannot start a new iteration because last time iteration "
                               "hasn't finished.")
        if self._passes and self.reader.last_row_consumed:
            self.reader.reset()
        self._in_pass = True
        self._passes += 1
        try:
            yield from self._pass()
        finally:
            self._in_pass = False

    def _pass(self) -> Iterator[Any]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reader.stop()
        self.reader.join()


class DataLoader(_LoaderBase):
    """Batches the rows of a ``make_reader`` reader: ``batch_size`` rows per batch, collated by
    ``collate_fn`` (default: torch's default_collate over the rows as dicts)."""

    def __init__(self, reader: Reader, batch_size: int = 1,
                 collate_fn: Callable[[list], Any] | None = None,
                 shuffling_queue_capacity: int = 0) -> None:
        if reader.batched_output:
            raise ValueError("DataLoader takes a make_reader reader; use BatchedDataLoader "
                             "with make_batch_reader")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.reader, self.batch_size = reader, batch_size
        self.shuffling_queue_capacity = shuffling_queue_capacity
        if collate_fn is None:
            from torch.utils.data import default_collate

            collate_fn = default_collate
        self.collate_fn = collate_fn

    def _pass(self) -> Iterator[Any]:
        rows: list[dict] = []
        for row in self.reader:
            rows.append(row._asdict())
            if len(rows) == self.batch_size:
                yield self.collate_fn(rows)
                rows = []
        if rows:
            yield self.collate_fn(rows)

class BatchedDataLoader(_LoaderBase):
    """Re-batches the column batches of a ``make_batch_reader`` reader into ``batch_size``
    rows, as dicts of torch tensors (``transform_fn`` applied to each)."""

    def __init__(self, reader: Reader, batch_size: int = 1,
                 transform_fn: Callable[[Any], Any] | None = None,
                 shuffling_queue_capacity: int = 0, inmemory_cache_all: bool = False,
                 num_epochs: int | None = None) -> None:
        if not reader.batched_output:
            raise ValueError("BatchedDataLoader takes a make_batch_reader reader; use "
                             "DataLoader with make_reader")
        if inmemory_cache_all:
            raise NotImplementedError("inmemory_cache_all: give the reader cache_type="
                                      "'local-disk' (Stoker's disk cache of decoded row groups)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.reader, self.batch_size = reader, batch_size
        self.transform_fn = transform_fn
        self.shuffling_queue_capacity = shuffling_queue_capacity

    def _pass(self) -> Iterator[dict[str, Any]]:
        pending: dict[str, list] = {}
        held = 0
        for batch in self.reader:
            columns = batch._asdict()
            for name, values in columns.items():
                pending.setdefault(name, []).append(values)
            held += len(next(iter(columns.values())))
            while held >= self.batch_size:
                joined = {n: _concat(v) for n, v in pending.items()}
                yield self._emit({n: v[:self.batch_size] for n, v in joined.items()})
                pending = {n: [v[self.batch_size:]] for n, v in joined.items()}
                held -= self.batch_size
        if held:
            yield self._emit({n: _concat(v) for n, v in pending.items()})

    def _emit(self, columns: dict[str, Any]) -> Any:
        batch = {name: _to_tensor(values) for name, values in columns.items()}
        return self.transform_fn(batch) if self.transform_fn is not None else batch


def _concat(parts: list) -> Any:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
