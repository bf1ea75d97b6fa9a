"""make_reader / make_batch_reader: Petastorm's reader API over a stoker.Loader. The stored
Unischema (read by the restricted unpickler) gives the codecs the C++ workers decode; the
reader iterates the loader's epochs and hands out namedtuples of rows or of column batches."""

from __future__ import annotations

import io
import os
import re
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Self

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

import stoker
from stoker.petastorm import _convert
from stoker.petastorm._cache import LocalDiskCache, NullCache
from stoker.petastorm._errors import NoDataAvailableError
from stoker.petastorm._metadata import (
    find_unischema,
    load_rowgroup_index,
    resolve_url,
    resolve_urls,
)
from stoker.petastorm._predicate import PythonPredicate
from stoker.petastorm._rowgroup_index import selected_row_groups
from stoker.petastorm._unischema import (
    CompressedImageCodec,
    CompressedNdarrayCodec,
    NdarrayCodec,
    Unischema,
    UnischemaField,
)

# Rows the row reader takes from the engine at a time (the rows and their order do not depend
# on it).
_ROW_READER_BATCH = 256
# Petastorm's worker pools: each is accepted, and decoding runs in Stoker's C++ workers
# whichever is named.
_READER_POOL_TYPES = ("thread", "process", "dummy")
# The columns with_row_origin adds: the NGram path and rowgroup_selector read them; they are
# not delivered.
_ORIGIN_COLUMNS = ("_file_index", "_row_in_file")


def loader_codecs(schema: Unischema, names: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The Loader ``codecs`` that decode ``schema``'s encoded fields (all, or those in
    ``names``): ndarray, compressed ndarray, png and jpeg. Scalars need none, and arrays of
    strings or bytes are left encoded: the C++ decoders take numbers (make_reader decodes
    those in Python)."""
    codecs = []
    for field in schema.fields.values():
        if names is not None and field.name not in names:
            continue
        if _text_array_loader(field) is not None:
            continue
        codec = _codec_name(field)
        if codec is None:
            continue
        codecs.append({"column": field.name, "codec": codec,
                       "dtype": _dtype_name(field),
                       "shape": [-1 if d is None else int(d) for d in field.shape]})
    return codecs


def make_loader(dataset_url: str | os.PathLike | Sequence[str],
                **loader_args: Any) -> stoker.Loader:
    """A ``stoker.Loader`` over a Petastorm dataset that decodes its codecs (from the stored
    Unischema) in the C++ workers: the fast path, batches of tensors (docs/petastorm.md).
    ``loader_args`` are the Loader's; ``codecs`` defaults to the stored schema's."""
    filesystem, path, source = resolve_urls(dataset_url)
    schema = find_unischema(filesystem, path, path if isinstance(source, list) else source)
    if schema is not None and loader_args.get("codecs") is None:
        loader_args["codecs"] = loader_codecs(schema, loader_args.get("columns"))
    return stoker.Loader(source, **loader_args)


def _codec_name(field: UnischemaField) -> str | None:
    codec = field.codec
    if isinstance(codec, CompressedNdarrayCodec):
        return "compressed_ndarray"
    if isinstance(codec, NdarrayCodec):
        return "ndarray"
    if isinstance(codec, CompressedImageCodec):
        name = codec.image_codec
        if name in ("jpg", "jpeg"):
            return "jpeg"
        if name == "png":
            return "png"
        raise ValueError(f"field '{field.name}': images in {name!r} cannot be decoded "
                         f"(png and jpeg can)")
    return None


def _dtype_name(field: UnischemaField) -> str:
    return np.dtype(field.numpy_dtype).name


def _text_array_loader(field: UnischemaField) -> Callable[[bytes], np.ndarray] | None:
    """For an ndarray field of strings or bytes (Petastorm's np.save bytes of a '<U' or '|S'
    array), the function that decodes one value in Python; None for any other field."""
    if not isinstance(field.codec, NdarrayCodec) or np.dtype(field.numpy_dtype).kind not in "SU":
        return None
    if isinstance(field.codec, CompressedNdarrayCodec):
        return _load_npz
    return lambda value: np.load(io.BytesIO(value), allow_pickle=False)


def _load_npz(value: bytes) -> np.ndarray:
    with np.load(io.BytesIO(value), allow_pickle=False) as archive:
        return archive["arr"]


def _python_decoders(schema: Unischema) -> dict[str, Callable[[Any], Any]]:
    """What the reader applies to each value of a field in Python, by field name: arrays of
    strings or bytes decoded, numeric and string scalars cast to the Unischema's dtype (a Spark
    ShortType column declared np.int32 is delivered as int32, a partition key declared np.str_
    as np.str_, as Petastorm's decode_row casts them). None stays None."""
    decoders: dict[str, Callable[[Any], Any]] = {}
    for field in schema.fields.values():
        load = _text_array_loader(field)
        if load is not None:
            decoders[field.name] = load
        elif (field.shape == () and isinstance(field.numpy_dtype, type)
              and issubclass(field.numpy_dtype, (np.number, np.bool_, np.str_, np.bytes_))):
            decoders[field.name] = field.numpy_dtype
    return decoders


class Reader:
    """What make_reader and make_batch_reader return: an iterator over namedtuples (of rows, or
    of column batches with ``batched_output``; of NGram windows with ``ngram``), usable as a
    context manager. ``next()`` may be called from several threads: each item goes to one."""

    def __init__(self, loader: stoker.Loader, schema: Unischema, num_epochs: int | None,
                 batched: bool, row_filter: PythonPredicate | None,
                 transform: Callable[[Any], Any] | None, transformed_schema: Unischema,
                 ngram: Any = None, row_groups: _RowGroups | None = None,
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
        self._decoders = _python_decoders(schema)
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
            if self.ngram is None and batch.schema.get_field_index(_ORIGIN_COLUMNS[0]) >= 0:
                batch = batch.select([n for n in batch.schema.names
                                      if n not in _ORIGIN_COLUMNS])
            yield batch

    def _row_dicts(self, batch: pa.RecordBatch) -> Iterator[tuple[int, dict[str, Any]]]:
        """(index in the batch, row) for each row the predicate keeps: its fields decoded and
        transformed, the loader's row-origin columns left out."""
        names = [n for n in batch.schema.names if n not in _ORIGIN_COLUMNS]
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
        columns = {name: _decode_column(_convert.column_values(batch.column(i)),
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


class _RowGroups:
    """Which row group each row of a ``with_row_origin`` batch belongs to, from the row
    counts in the files' footers (read once, one request per file)."""

    def __init__(self, files: Sequence[str]) -> None:
        self._starts = []  # per file: the first row (in the file) of each row group
        self._first_key = []  # per file: the dataset-wide number of its first row group
        key = 0
        for file in files:
            filesystem, path, _ = resolve_url(file)
            with filesystem.open_input_file(path) as f:
                metadata = pq.ParquetFile(f).metadata
            counts = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
            self._starts.append(np.cumsum([0, *counts[:-1]], dtype=np.int64))
            self._first_key.append(key)
            key += len(counts)

    def locate(self, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
        """(each row's dataset-wide row-group number, its row in its file)."""
        files = batch.column("_file_index").to_numpy()
        rows = batch.column("_row_in_file").to_numpy()
        keys = np.empty(len(rows), dtype=np.int64)
        for file in np.unique(files):
            mine = files == file
            keys[mine] = self._first_key[file] + np.searchsorted(
                self._starts[file], rows[mine], side="right") - 1
        return keys, rows


def _decode_column(values: np.ndarray, decode: Callable[[Any], Any] | None) -> np.ndarray:
    """A column batch with a field's Python decoder applied (see _python_decoders)."""
    if decode is None:
        return values
    if isinstance(decode, type):  # a numpy scalar type: the whole column is cast
        if values.dtype != object:
            return values.astype(decode, copy=False)
        return values  # nulls among the values: kept as objects (None), as Petastorm does
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):  # one by one: a list of equal arrays would broadcast
        out[i] = None if value is None else decode(value)
    return _convert.stack_rows(out)


def _check_arguments(dataset_url: Any, reader_pool_type: Any, num_epochs: Any,
                     cur_shard: Any, shard_count: Any, shard_seed: Any) -> None:
    """Petastorm's checks of its arguments, with its exceptions: a script that catches them
    still does."""
    if isinstance(dataset_url, list) and not dataset_url:
        raise ValueError("dataset url list must be non-empty")
    if not isinstance(dataset_url, (str, os.PathLike, list, tuple)):
        raise ValueError(  # noqa: TRY004 (Petastorm raises ValueError; scripts catch it)
            f"dataset_url must be a URL or path (a string), or a list of them; "
            f"got {dataset_url!r}")
    if reader_pool_type not in _READER_POOL_TYPES:
        raise ValueError(f"Unknown reader_pool_type: {reader_pool_type} (one of "
                         f"{', '.join(_READER_POOL_TYPES)})")
    if num_epochs is not None and (not isinstance(num_epochs, int) or isinstance(num_epochs, bool)
                                   or num_epochs < 1):
        raise ValueError(f"num_epochs must be a positive int or None (endless), got "
                         f"{num_epochs!r}")
    if cur_shard is not None or shard_count is not None:
        if not (isinstance(cur_shard, int) and isinstance(shard_count, int)) or shard_count < 1:
            raise ValueError(f"cur_shard and shard_count must be ints and both given to shard "
                             f"(got cur_shard={cur_shard!r}, shard_count={shard_count!r})")
        if not 0 <= cur_shard < shard_count:
            raise ValueError(f"cur_shard must be in [0, shard_count={shard_count}), got "
                             f"{cur_shard}")
    if shard_seed is not None:
        warnings.warn("shard_seed was deprecated and will be removed in future versions. "
                      "It has no effect: shards follow the seed", UserWarning, stacklevel=4)


def _make(dataset_url: Any, *, batched: bool, schema_fields: Sequence[Any] | Any | None,
          reader_pool_type: str, shard_seed: int | None,
          workers_count: int | None, seed: int | None, shuffle_rows: bool,
          shuffle_row_groups: bool, shuffle_row_drop_partitions: int, predicate: Any,
          rowgroup_selector: Any, num_epochs: int | None, cur_shard: int | None,
          shard_count: int | None, cache_type: str | None, cache_location: str | None,
          cache_size_limit: int | None, transform_spec: Any, filters: Any,
          storage_options: Any, filesystem: Any, batch_size: int | None,
          loader_args: dict[str, Any]) -> Reader:
    _check_arguments(dataset_url, reader_pool_type, num_epochs, cur_shard, shard_count,
                     shard_seed)
    ngram: Any = schema_fields if _is_ngram(schema_fields) else None  # Stoker's or Petastorm's
    if shuffle_row_drop_partitions != 1 and ngram is None:
        raise NotImplementedError("shuffle_row_drop_partitions: Stoker shuffles rows across a "
                                  "window of row groups (shuffle_window) instead")
    if filesystem is not None:
        raise NotImplementedError("filesystem: pass storage_options (docs/storage.md)")
    fs, path, source = resolve_urls(dataset_url)
    # Petastorm reads a directory's key=value subdirectories (Spark's partitionBy) as columns,
    # as pyarrow's dataset discovery does; so does the Loader with partitioning="hive".
    if "partitioning" not in loader_args and fs.get_file_info(path).type == pafs.FileType.Directory:
        loader_args["partitioning"] = "hive"
    schema = find_unischema(fs, path, path if isinstance(source, list) else source)
    if schema is None:
        schema = _schema_from_arrow(source, storage_options, loader_args.get("partitioning"))
    by_row_group = [name for name, given in (("an NGram", ngram is not None),
                                             ("rowgroup_selector", rowgroup_selector is not None))
                    if given]
    if by_row_group and (isinstance(predicate, pc.Expression) or filters is not None):
        raise NotImplementedError(f"{' and '.join(by_row_group)} with a pyarrow.compute "
                                  f"predicate or filters: each row's row group is known from "
                                  f"its place in its file, which a filtered row group no longer "
                                  f"knows; give a Petastorm predicate (in_lambda, ...) instead")
    selected = None
    if rowgroup_selector is not None:
        selected = selected_row_groups(rowgroup_selector, lambda: load_rowgroup_index(fs, path))
    if ngram is not None:
        _check_ngram(ngram, batched, shuffle_row_drop_partitions, loader_args)
        ngram.resolve_regex_field_names(schema)
        schema = _ngram_schema(schema, ngram)
    elif schema_fields:  # None or empty: every field, as Petastorm
        schema = schema.create_schema_view(_field_list(schema, schema_fields))
    names = list(schema.fields)

    row_filter = None
    filter_expression = None
    if isinstance(predicate, pc.Expression):
        filter_expression = predicate
    elif predicate is not None:
        row_filter = PythonPredicate(predicate, names)
    if filters is not None:
        expression = pq.filters_to_expression(filters)
        filter_expression = expression if filter_expression is None else (
            filter_expression & expression)

    transform = None
    output_schema = schema
    if transform_spec is not None:
        transform = transform_spec.func
        output_schema = _transformed_schema(schema, transform_spec)

    cache_dir = None
    cache: LocalDiskCache | NullCache = NullCache()
    if cache_type not in (None, "null"):
        if cache_type != "local-disk":
            raise ValueError(f"Unknown cache_type: {cache_type}")
        cache_dir = cache_location
        if cache_location is not None:
            cache = LocalDiskCache(cache_location)
    for name in ("num_threads", "shuffle", "seed", "rank", "world_size", "columns", "codecs",
                 "filter", "output", "batch_size"):
        if name in loader_args:
            raise TypeError(f"{name} is set from Petastorm's arguments; give those instead")
    if batch_size is None:
        batch_size = _ROW_READER_BATCH
    if ngram is not None:
        # Each row group's rows arrive together (a shuffle window is whole row groups, so one
        # row group per window), their origin telling the row group and putting them back in
        # stored order: shuffling moves row groups, never rows within a window.
        loader_args.update(with_row_origin=True, shuffle_window=1)
    if selected is not None:
        loader_args["with_row_origin"] = True
    # A URL list naming a file again is read as Petastorm reads it, every time it is named: the
    # Loader reads a file once, so each repetition is another Loader (not with an NGram or a
    # rowgroup_selector, whose row-group numbers are one Loader's).
    sources: list[str | list[str]] = [source]
    if isinstance(source, list) and ngram is None and selected is None:
        sources = list(_rounds(source))
    loaders = [stoker.Loader(
        files, columns=names, batch_size=batch_size,
        shuffle=bool(shuffle_row_groups or shuffle_rows), seed=0 if seed is None else seed,
        num_threads=workers_count, rank=cur_shard or 0, world_size=shard_count or 1,
        mode="eval", output="arrow", codecs=loader_codecs(schema, names),
        filter=filter_expression, cache_dir=cache_dir,
        cache_limit_bytes=cache_size_limit or 0, storage_options=storage_options,
        **loader_args) for files in sources]
    loader = loaders[0]
    files = [file for each in loaders for file in each.files]
    if shard_count is not None:
        row_groups = sum(each._core.dataset()["row_groups"] for each in loaders)
        if row_groups < shard_count:
            # Stoker's shards are row slices and would not be empty, but a script written for
            # Petastorm (whose shards are whole row groups) expects this error.
            raise NoDataAvailableError(
                f"Number of row-groups in the dataset ({row_groups}) must be greater or equal "
                f"to the number of requested shards ({shard_count}), as Petastorm requires")
    if row_filter is not None and row_filter.matches_nothing(
            _partition_keys(files), {n: f.numpy_dtype for n, f in schema.fields.items()}):
        warnings.warn("No matching data is available for loading after rowgroup selector were "
                      "applied and the data was sharded (the predicate keeps no partition)",
                      UserWarning, stacklevel=3)
    row_groups = None
    if ngram is not None or selected is not None:
        row_groups = _RowGroups(loader.files)
    return Reader(loader, schema, num_epochs, batched, row_filter, transform, output_schema,
                  ngram, row_groups, selected, seed=0 if seed is None else seed, cache=cache,
                  more_loaders=loaders[1:])


def _rounds(files: list[str]) -> list[list[str]]:
    """A file list split so that no part names a file twice: the files named once or more,
    then those named twice or more, ..., each in the order given. ``[a, b, a]`` reads a, b
    then a, as Petastorm; ``[a, a, b]`` too (Petastorm: a, a, b)."""
    rounds: list[list[str]] = []
    seen: dict[str, int] = {}
    for file in files:
        times = seen.get(file, 0)
        seen[file] = times + 1
        if times == len(rounds):
            rounds.append([])
        rounds[times].append(file)
    return rounds


def _partition_keys(files: Sequence[str]) -> list[dict[str, str]]:
    """Each file's hive partition keys (the ``key=value`` directories of its path)."""
    return [dict(part.split("=", 1) for part in file.split("/")[:-1] if "=" in part)
            for file in files]


def _is_ngram(schema_fields: Any) -> bool:
    """Whether schema_fields is an NGram: Stoker's or Petastorm's (both have these)."""
    return all(hasattr(schema_fields, name) for name in (
        "form_ngram", "make_namedtuple", "resolve_regex_field_names", "timestamp_overlap"))


def _ngram_schema(schema: Unischema, ngram: Any) -> Unischema:
    """The fields of every step of ``ngram`` (resolved), in alphabetical order, which each
    step's namedtuple keeps. Petastorm's order there is a set's (it varies from process to
    process unless its legacy alphabetical order is chosen, as its tests do)."""
    wanted = sorted({field.name for field in ngram.get_field_names_at_all_timesteps()})
    unknown = [name for name in wanted if name not in schema.fields]
    if unknown:
        raise ValueError(f"NGram field(s) {unknown} are not in the schema {schema.name!r}")
    return schema.create_schema_view([schema.fields[name] for name in wanted])


def _check_ngram(ngram: Any, batched: bool, shuffle_row_drop_partitions: int,
                 loader_args: dict[str, Any]) -> None:
    if batched:
        raise NotImplementedError("make_batch_reader does not take an NGram (nor does "
                                  "Petastorm's): use make_reader")
    if not ngram.timestamp_overlap and shuffle_row_drop_partitions > 1:
        # Petastorm's NotImplementedError.
        raise NotImplementedError("Using timestamp_overlap=False is not implemented with "
                                  "shuffle_options.shuffle_row_drop_partitions > 1")
    for name in ("with_row_origin", "shuffle_window"):
        if name in loader_args:
            raise TypeError(f"{name} is set by the NGram path; leave it out")


def _schema_from_arrow(source: str | list[str], storage_options: Any,
                       partitioning: Any) -> Unischema:
    """A Unischema of a plain Parquet dataset's columns (scalars, and lists as shape (None,)),
    its partition keys included. Columns of structs, lists of lists and lists of structs are
    left out with a warning, as Petastorm's inferred schema leaves them out."""
    if isinstance(source, list):
        source = list(dict.fromkeys(source))  # a file named again (read again) has one schema
    probe = stoker.Loader(source, batch_size=1, output="arrow", storage_options=storage_options,
                          partitioning=partitioning)
    fields = []
    shape: tuple[None, ...]  # () for a scalar, (None,) for a list
    for field in probe.schema:
        kind, shape = field.type, ()
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            kind, shape = kind.value_type, (None,)
        if pa.types.is_nested(kind):
            warnings.warn(f"Column {field.name!r} has an unsupported type {field.type}. "
                          f"Ignoring... (as Petastorm's inferred schema)", stacklevel=4)
            continue
        try:
            dtype = kind.to_pandas_dtype()
        except NotImplementedError:
            dtype = np.object_
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            dtype = np.str_
        fields.append(UnischemaField(field.name, dtype, shape, None, field.nullable))
    return Unischema("inferred_schema", fields)


def _field_list(schema: Unischema, schema_fields: Sequence[Any]) -> list[Any]:
    out = []
    for field in schema_fields:
        if isinstance(field, str):
            if field in schema.fields:
                out.append(schema.fields[field])
            else:
                out.append(field)  # a regular expression, as Petastorm takes them
        else:
            out.append(field)
    if out and all(isinstance(f, str) for f in out):
        patterns = list(out)
        if not any(re.fullmatch(p, name) for p in patterns for name in schema.fields):
            # RuntimeError, as Petastorm raises when schema_fields selects nothing.
            raise RuntimeError(f"No fields matching the criteria {patterns} were found in the "
                               f"dataset (its fields: {list(schema.fields)})")
    return out


def _transformed_schema(schema: Unischema, spec: Any) -> Unischema:
    fields = [f for f in schema.fields.values()
              if f.name not in set(getattr(spec, "removed_fields", None) or [])]
    by_name = {f.name: f for f in fields}
    for edit in getattr(spec, "edit_fields", None) or []:
        name, dtype, shape, nullable = tuple(edit)[:4]
        by_name[name] = UnischemaField(name, dtype, shape, None, nullable)
    ordered = list(by_name.values())
    selected = getattr(spec, "selected_fields", None)
    if selected is not None:
        ordered = [by_name[name] for name in selected]
    return Unischema(f"{schema.name}_transformed", ordered)
