"""Petastorm's torch loaders over a stoker.petastorm reader, either kind (make_reader's rows or
make_batch_reader's column batches): DataLoader collates rows (``decimal_friendly_collate``
unless told otherwise), BatchedDataLoader cuts the columns into batches of tensors,
InMemBatchedDataLoader holds up to ``rows_capacity`` rows in memory and serves epochs of
batches from them. ``shuffling_queue_capacity`` shuffles rows further through a buffer, as
Petastorm's, drawn from the reader's seed and the pass number (docs/petastorm.md)."""

from __future__ import annotations

import collections.abc
import decimal
from collections.abc import Callable, Iterator
from typing import Any, Self

import numpy as np

from stoker.petastorm._reader import Reader
from stoker.petastorm._shuffling_buffer import ShufflingBuffer

# numpy dtypes torch has no (or only partial) support for, and what Petastorm promotes them to.
_PROMOTED = {np.dtype(np.uint16): np.int32, np.dtype(np.uint32): np.int64,
             np.dtype(np.bool_): np.uint8}
# Petastorm's words, which scripts and Petastorm's tests match.
_PARALLEL_ITER_ERROR = ("You must finish a full pass of Petastorm DataLoader before making "
                        "another pass from the beginning. If you do need to terminate early and "
                        "restart from beginning, please re-create the reader and the data loader.")


def decimal_friendly_collate(batch: list) -> Any:
    """torch's default_collate, except that ``decimal.Decimal`` and string values are kept as
    lists (Petastorm's default collate_fn)."""
    from torch.utils.data import default_collate

    first = batch[0]
    if isinstance(first, (decimal.Decimal, str, bytes)):
        return batch
    if isinstance(first, collections.abc.Mapping):
        return {key: decimal_friendly_collate([row[key] for row in batch]) for key in first}
    if isinstance(first, collections.abc.Sequence):
        return [decimal_friendly_collate(list(values)) for values in zip(*batch)]
    return default_collate(batch)


def _sanitize_row(row: dict[str, Any]) -> None:
    """Petastorm's promotions of one row's values to types torch takes (uint16 to int32,
    uint32 to int64, bool to uint8), in place; a string array or a null is a TypeError, as
    in Petastorm."""
    for name, value in row.items():
        if isinstance(value, np.ndarray):
            if value.dtype in _PROMOTED:
                row[name] = value.astype(_PROMOTED[value.dtype])
            elif value.dtype.kind in "SUO":
                raise TypeError(f"Pytorch does not support arrays of string or object classes. "
                                f"Found in field {name}.")
        elif isinstance(value, np.bool_):
            row[name] = np.uint8(value)
        elif value is None:
            raise TypeError(f"Pytorch does not support nullable fields. Found None in {name}")


def _promote_column(values: Any) -> Any:
    if isinstance(values, np.ndarray) and values.dtype in _PROMOTED:
        return values.astype(_PROMOTED[values.dtype])
    return values


def _to_tensor(values: Any) -> Any:
    """A column as a tensor; a column of arrays of different shapes as a list of tensors."""
    import torch

    if isinstance(values, np.ndarray) and values.dtype != object:
        return torch.as_tensor(values)
    if isinstance(values, np.ndarray) and len(values) and isinstance(values[0], np.ndarray):
        return [torch.as_tensor(v) for v in values]
    return values if not isinstance(values, np.ndarray) else list(values)


def _columns(reader: Reader) -> Iterator[dict[str, Any]]:
    """The reader's items as dicts of columns: a row reader's rows as columns of one value."""
    for item in reader:
        columns = item._asdict()
        if not reader.batched_output:
            columns = {name: _one_row_column(value) for name, value in columns.items()}
        yield {name: _promote_column(values) for name, values in columns.items()}


def _one_row_column(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).dtype != object:
        return np.asarray(value)[np.newaxis]
    column = np.empty(1, dtype=object)
    column[0] = value
    return column


def _rows(reader: Reader) -> Iterator[dict[str, Any]]:
    """The reader's rows as dicts: a batch reader's column batches split into rows."""
    for item in reader:
        columns = item._asdict()
        if not reader.batched_output:
            yield columns
            continue
        names = list(columns)
        for values in zip(*(columns[name] for name in names)):
            yield dict(zip(names, values))


def _concat(parts: list) -> Any:
    if len(parts) == 1:
        return parts[0]
    import torch

    if isinstance(parts[0], torch.Tensor):
        return torch.cat(parts)
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return [value for part in parts for value in part]


def _take(values: Any, mask: np.ndarray) -> Any:
    """The rows of a column (tensor, array or list) where ``mask`` is true."""
    import torch

    if isinstance(values, torch.Tensor):
        return values[torch.from_numpy(mask)]
    if isinstance(values, np.ndarray):
        return values[mask]
    return [value for value, keep in zip(values, mask) if keep]


class _LoaderBase:
    """What DataLoader and BatchedDataLoader share: each ``iter()`` is one pass over the
    reader, and a pass after one that read every row starts the reader again (its next
    epoch), as Petastorm's loaders reset their reader; a pass while another is in progress,
    or after one that failed, is an error (Petastorm's)."""

    reader: Reader
    shuffling_queue_capacity: int
    _in_pass = False  # a pass is being read
    _passes = 0  # passes started
    _error: Exception | None = None  # what ended the last pass, if it failed

    def __iter__(self) -> Iterator[Any]:
        if self._error is not None:
            raise RuntimeError(f"Cannot start a new iteration because last time iteration "
                               f"failed with error {self._error!r}.")
        if self._in_pass:
            raise RuntimeError(_PARALLEL_ITER_ERROR)
        if self._passes and self.reader.last_row_consumed:
            self.reader.reset()
        self._in_pass = True
        self._passes += 1
        try:
            yield from self._pass()
        except Exception as error:
            self._error = error
            raise
        finally:
            self._in_pass = False

    def _random_seed(self) -> tuple[int, int]:
        """The shuffling queue's seed: the reader's (None: 0) and the pass, so each pass
        (epoch) is shuffled anew and every run alike."""
        return (getattr(self.reader, "seed", None) or 0, self._passes)

    def _pass(self) -> Iterator[Any]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.reader.stop()
        self.reader.join()


class DataLoader(_LoaderBase):
    """Batches the rows of a reader (a make_batch_reader's split into rows): ``batch_size``
    rows per batch, promoted as Petastorm promotes them and collated by ``collate_fn``
    (default: decimal_friendly_collate over the rows as dicts)."""

    def __init__(self, reader: Reader, batch_size: int = 1,
                 collate_fn: Callable[[list], Any] = decimal_friendly_collate,
                 shuffling_queue_capacity: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.reader, self.batch_size = reader, batch_size
        self.shuffling_queue_capacity = shuffling_queue_capacity
        self.collate_fn = collate_fn

    def _pass(self) -> Iterator[Any]:
        rows: list[dict] = []
        for row in self._shuffled(_rows(self.reader)):
            _sanitize_row(row)
            rows.append(row)
            if len(rows) == self.batch_size:
                yield self.collate_fn(rows)
                rows = []
        if rows:
            yield self.collate_fn(rows)

    def _shuffled(self, rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.shuffling_queue_capacity <= 0:
            yield from rows
            return
        buffer = ShufflingBuffer(self.shuffling_queue_capacity, self._random_seed())
        for row in rows:
            buffer.add_many([row])
            while buffer.can_retrieve():
                yield buffer.retrieve()
        buffer.finish()
        while buffer.can_retrieve():
            yield buffer.retrieve()


class BatchedDataLoader(_LoaderBase):
    """Cuts a reader's columns (a make_reader's rows joined into columns) into batches of
    ``batch_size`` rows: dicts of the columns, each given to ``transform_fn`` (default: a
    tensor, or a list of tensors where the rows' shapes differ) before batching, as
    Petastorm's."""

    def __init__(self, reader: Reader, batch_size: int = 1,
                 transform_fn: Callable[[Any], Any] | None = None,
                 shuffling_queue_capacity: int = 0, inmemory_cache_all: bool = False,
                 num_epochs: int | None = None) -> None:
        if inmemory_cache_all:
            raise NotImplementedError("inmemory_cache_all: use InMemBatchedDataLoader, or give "
                                      "the reader cache_type='local-disk' (Stoker's disk cache "
                                      "of decoded row groups)")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.reader, self.batch_size = reader, batch_size
        self.transform_fn = transform_fn or _to_tensor
        self.shuffling_queue_capacity = shuffling_queue_capacity

    def _pass(self) -> Iterator[dict[str, Any]]:
        # Rows kept back to mix with later ones (Petastorm's min_after_retrieve); with none, the
        # batches are cut in order.
        keep = max(self.shuffling_queue_capacity - 1, 0)
        random = (np.random.default_rng(self._random_seed())
                  if self.shuffling_queue_capacity > 0 else None)
        pending: dict[str, list] = {}
        held = 0
        for columns in _columns(self.reader):
            for name, values in columns.items():
                pending.setdefault(name, []).append(self.transform_fn(values))
            held += len(next(iter(columns.values())))
            while held >= keep + self.batch_size:
                batch, pending = self._cut(pending, held, self.batch_size, random)
                held -= self.batch_size
                yield batch
        while held:
            count = min(self.batch_size, held)
            batch, pending = self._cut(pending, held, count, random)
            held -= count
            yield batch

    @staticmethod
    def _cut(pending: dict[str, list], held: int, count: int,
             random: np.random.Generator | None) -> tuple[dict[str, Any], dict[str, list]]:
        """``count`` of the ``held`` rows as a batch, and the rest: the first ones, or with
        ``random`` ones drawn uniformly (Petastorm's BatchedRandomShufflingBuffer)."""
        joined = {n: _concat(v) for n, v in pending.items()}
        if random is None:
            return ({n: v[:count] for n, v in joined.items()},
                    {n: [v[count:]] for n, v in joined.items()})
        taken = np.zeros(held, dtype=bool)
        taken[random.choice(held, size=count, replace=False)] = True
        return ({n: _take(v, taken) for n, v in joined.items()},
                {n: [_take(v, ~taken)] for n, v in joined.items()})


class InMemBatchedDataLoader:
    """Reads up to ``rows_capacity`` rows of a reader into memory as tensors (each column
    through ``transform_fn``, default torch.as_tensor), stops the reader, then serves
    ``num_epochs`` epochs of ``batch_size`` rows from them, in a new order each epoch when
    ``shuffle`` (a permutation seeded by ``seed`` + the epoch), as Petastorm's. One ``iter()``
    serves every epoch; a second is an error."""

    def __init__(self, reader: Reader, batch_size: int = 1,
                 transform_fn: Callable[[Any], Any] | None = None, num_epochs: int = 1,
                 seed: int = 0, rows_capacity: int = 1024, shuffle: bool = False) -> None:
        import torch

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.batch_size, self.num_epochs = batch_size, num_epochs
        self.seed, self.shuffle = seed, shuffle
        self._served = False
        transform = transform_fn or torch.as_tensor
        held: dict[str, list] = {}
        rows = 0
        for columns in _columns(reader):
            take = min(rows_capacity - rows, len(next(iter(columns.values()))))
            for name, values in columns.items():
                held.setdefault(name, []).append(transform(values[:take]))
            rows += take
            if rows >= rows_capacity:
                break
        # The rows held are all that is served: the reader (endless, perhaps) is not drained.
        reader.stop()
        reader.join()
        self._columns = {name: _concat(parts) for name, parts in held.items()}
        self._rows = rows

    def __iter__(self) -> Iterator[dict[str, Any]]:
        import torch

        if self._served:
            raise RuntimeError("InMemBatchedDataLoader couldn't be used multiple times: give "
                               "the number of epochs as num_epochs")
        self._served = True
        for epoch in range(self.num_epochs):
            if self.shuffle:
                generator = torch.Generator()
                generator.manual_seed(self.seed + epoch)
                order = torch.randperm(self._rows, generator=generator)
            else:
                order = torch.arange(self._rows)
            for start in range(0, self._rows, self.batch_size):
                index = order[start:start + self.batch_size]
                yield {name: values[index] for name, values in self._columns.items()}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
