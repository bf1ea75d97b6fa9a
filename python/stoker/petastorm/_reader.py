"""The reader make_reader and make_batch_reader return: it iterates a stoker.Loader's epochs
(one Loader, or one per round of a URL list naming a file again) and hands out namedtuples of
rows, of column batches or of NGram windows, with the Python decoders, predicate and
TransformSpec of the slow path applied."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Self

import numpy as np
import pyarrow as pa

import stoker
from stoker.petastorm import _convert
from stoker.petastorm._cache import LocalDiskCache, NullCache
from stoker.petastorm._decoders import decode_column, python_decoders
from stoker.petastorm._predicate import PythonPredicate
from stoker.petastorm._row_origin import ORIGIN_COLUMNS, RowGroups
from stoker.petastorm._unischema import Unischema


class Reader:
    """What make_reader and make_batch_reader return: an iterator over namedtuples (of rows, or
    of column batches with ``batched_output``; of NGram windows with ``ngram``), usable as a
    context manager. ``next()`` may be called from several threads: each item goes to one."""

    def __init__(self, loader: stoker.Loader, schema: Unischema, num_epochs: int | None,
                 batched: bool, row_filter: PythonPredicate | None,
                 transform: Callable[[Any], Any] | None, transformed_schema: Unischema,
                 ngram: Any = None, row_groups: RowGroups | None = None,
                 selected_row_groups: set[int] | None = None, seed: int = 0,
                 cache: LocalDiskCache | NullCache | None = None,
                 more_loaders: Sequence[stoker.Loader] = ()) -> None:
        self._loader = loader
        # Read one after the other each epoch: the files a URL list names again (see _rounds).
        self._loaders = [loader, *more_loaders]
        self.seed = seed  # the shuffle's; the torch loaders' shuffling queues draw from it too
        # What cleanup_cache() (and leaving the reader's with block) removes.
        self.cache = cache if cache is not None else NullCache()
        self.schema = transformed_schema
        self.dataset_schema = schema
        self.batched_output = batched
        self.ngram = ngram
        # Which row group each row is in (NGram and rowgroup_selector only), and the row
        # groups rowgroup_selector picked (None: every one).
        self._row_groups = row_groups
        self._selected_row_groups = None if selected_row_groups is None else np.array(
            sorted(selected_row_groups), dtype=np.int64)
        self.is_batched_reader = batched
        self.num_epochs = num_epochs
        self._row_filter, self._transform = row_filter, transform
        self._decoders = python_decoders(schema)
        self._epochs_started = 0
        self._items: Generator[Any, None, None] | None = None
        # Held while the generator advances or closes: Petastorm's reader may be read from
        # several threads, and a generator may not be resumed by two at once.
        self._lock = threading.Lock()
        self.last_row_consumed = False
        self.stopped = False

    @property
    def loader(self) -> stoker.Loader:
        """The stoker.Loader doing the work (stats(), state_dict(), ...); for a URL list naming
        a file again, the one reading every file's first time."""
        return self._loader

    def __iter__(self) -> Reader:
        return self

    def __next__(self) -> Any:
        with self._lock:
            if self.stopped:
                raise RuntimeError("Trying to read a sample after a reader created by "
                                   "make_reader/make_batch_reader has stopped (its context "
                                   "manager exited, or stop() was called)")
            if self._row_filter is not None and self._row_filter.error is not None:
                raise self._row_filter.error
            if self._items is None:
                self._items = self._generate()
            try:
                return next(self._items)
            except StopIteration:
                self.last_row_consumed = True
                raise

    def _generate(self) -> Generator[Any, None, None]:
        while not self.stopped and (self.num_epochs is None
                                    or self._epochs_started < self.num_epochs):
            self._epochs_started += 1
            for loader in self._loaders:
                epoch = iter(loader)
                try:
                    batches = self._selected(epoch)
                    if self.ngram is not None:
                        yield from self._windows(batches)
                        continue
                    for batch in batches:
                        if self.stopped:
                            return
                        yield from (self._batch(batch) if self.batched_output
                                    else self._rows(batch))
                finally:
                    epoch.close()

    def _selected(self, epoch: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The epoch's batches, only the rows of the row groups rowgroup_selector picked
        (all of them without one); the row-origin columns kept for the NGram path only."""
        for batch in epoch:
            if self._selected_row_groups is not None:
                assert self._row_groups is not None
                keys, _ = self._row_groups.locate(batch)
                batch = batch.filter(pa.array(np.isin(keys, self._selected_row_groups)))
                if batch.num_rows == 0:
                    continue
            if self.ngram is None and batch.schema.get_field_index(ORIGIN_COLUMNS[0]) >= 0:
                batch = batch.select([n for n in batch.schema.names
                                      if n not in ORIGIN_COLUMNS])
            yield batch

    def _row_dicts(self, batch: pa.RecordBatch) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index in the batch, row) for each row the predicate keeps: its fields decoded and
        transformed, the loader's row-origin columns left out."""
        names = [n for n in batch.schema.names if n not in ORIGIN_COLUMNS]
        getters = [_convert.row_getter(batch.column(n)) for n in names]
        decoders = [(name, self._decoders[name]) for name in names if name in self._decoders]
        for i in range(batch.num_rows):
            row = {name: get(i) for name, get in zip(names, getters)}
            for name, decode in decoders:
                if row[name] is not None:
                    row[name] = decode(row[name])
            if self._row_filter is not None and not self._row_filter.includes_row(row):
                continue
            if self._transform is not None:
                row = self._transform(row)
            yield i, row

    def _rows(self, batch: pa.RecordBatch) -> Iterator[Any]:
        row_type = self.schema.namedtuple_type()
        for _, row in self._row_dicts(batch):
            yield row_type(**{name: row[name] for name in self.schema.fields})

    def _windows(self, epoch: Iterator[pa.RecordBatch]) -> Iterator[dict[int, Any]]:
        """The NGram windows of an epoch: the rows of each row group (which the loader delivers
        together, make_reader's NGram path) put back in stored order, then windowed."""
        assert self._row_groups is not None
        group: list[tuple[int, dict[str, Any]]] = []  # (row in file, row) of one row group
        key, seen = None, set()
        for batch in epoch:
            if self.stopped:
                return
            keys, origins = self._row_groups.locate(batch)
            for i, row in self._row_dicts(batch):
                if keys[i] != key:
                    yield from self._form(group)
                    if keys[i] in seen:
                        raise RuntimeError(f"NGram: the rows of row group {keys[i]} did not "
                                           f"arrive together (shuffle_window is set by NGram)")
                    group, key = [], keys[i]
                    seen.add(key)
                group.append((int(origins[i]), row))
        yield from self._form(group)

    def _form(self, group: list[tuple[int, dict[str, Any]]]) -> Iterator[dict[int, Any]]:
        group.sort(key=lambda origin_and_row: origin_and_row[0])
        for window in self.ngram.form_ngram(data=[row for _, row in group], schema=self.schema):
            yield self.ngram.make_namedtuple(self.schema, window)

    def _batch(self, batch: pa.RecordBatch) -> Iterator[Any]:
        columns = {name: decode_column(_convert.column_values(batch.column(i)),
                                        self._decoders.get(name))
                   for i, name in enumerate(batch.schema.names)}
        if self._row_filter is not None:
            keep = self._row_filter.mask(columns, len(batch))
            columns = {n: c[keep] for n, c in columns.items()}
        if self._transform is not None:
            import pandas as pd

            frame = self._transform(pd.DataFrame({n: list(c) if c.ndim > 1 else c
                                                  for n, c in columns.items()}))
            columns = {n: _convert.stack_rows(frame[n].to_numpy()) for n in frame.columns}
        yield self.schema.namedtuple_type()(**{n: columns[n] for n in self.schema.fields})

    def reset(self) -> None:
        """Starts over after the last epoch was read (Petastorm's reset)."""
        if self._items is not None and not self.last_row_consumed:
            raise NotImplementedError("reset() is only allowed after every row was read")
        self._epochs_started, self._items, self.last_row_consumed = 0, None, False

    def stop(self) -> None:
        """Stops reading: the loader's workers stop when the current epoch is closed (after
        a ``next()`` under way in another thread returns)."""
        self.stopped = True
        with self._lock:
            if self._items is not None:
                self._items.close()

    def join(self) -> None:
        """Waits for the workers to finish (they are joined when the epoch closes)."""
        self.stop()

    def cleanup_cache(self) -> None:
        """Removes the local-disk cache's files (nothing without one), saying so on stdout as
        Petastorm does; an error removing them is printed, not raised."""
        error = self._remove_cache()
        if error is not None:
            print(f"Error cleaning cache: {error}")
        print("Cache cleanup complete.")

    def _remove_cache(self) -> Exception | None:
        try:
            self.cache.cleanup()
        except (OSError, AttributeError) as error:  # Petastorm's: reported, never raised
            return error
        return None

    @property
    def diagnostics(self) -> dict[str, Any]:
        return self._loader.stats()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        """Stops the reader and removes its local-disk cache, as Petastorm's reader does when
        its with block ends."""
        self.stop()
        self.join()
        error = self._remove_cache()
        if error is not None:
            warnings.warn(f"Error cleaning cache: {error}", stacklevel=2)
