"""Petastorm's reader API on Stoker: change ``from petastorm import make_reader`` to
``from stoker.petastorm import make_reader`` (docs/petastorm.md has every argument).

A Petastorm dataset is read as it is: its stored Unischema is loaded by a restricted
unpickler (only the classes a Unischema holds, mapped to Stoker's own definitions; Petastorm
need not be installed) and its codecs — ndarray, compressed ndarray, png, jpeg — are decoded
in the C++ workers, per row group, before the disk cache."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import stoker
from stoker.petastorm._arguments import ReaderArguments, open_reader
from stoker.petastorm._decoders import loader_codecs
from stoker.petastorm._errors import NoDataAvailableError
from stoker.petastorm._metadata import UNISCHEMA_KEY, find_unischema, resolve_urls
from stoker.petastorm._pickle import UnischemaUnpickler, load_unischema
from stoker.petastorm._reader import Reader
from stoker.petastorm._unischema import (
    CompressedImageCodec,
    CompressedNdarrayCodec,
    NdarrayCodec,
    ScalarCodec,
    Unischema,
    UnischemaField,
    match_unischema_fields,
)

__all__ = [
    "UNISCHEMA_KEY",
    "CompressedImageCodec",
    "CompressedNdarrayCodec",
    "NdarrayCodec",
    "NoDataAvailableError",
    "Reader",
    "ScalarCodec",
    "TransformSpec",
    "Unischema",
    "UnischemaField",
    "UnischemaUnpickler",
    "get_schema_from_dataset_url",
    "load_unischema",
    "loader_codecs",
    "make_batch_reader",
    "make_loader",
    "make_reader",
    "match_unischema_fields",
]


class TransformSpec:
    """Petastorm's TransformSpec: ``func`` runs in Python on each row (make_reader) or each
    batch as a pandas DataFrame (make_batch_reader), the slow path; ``edit_fields``
    (name, numpy dtype, shape, nullable) tuples, ``removed_fields`` and ``selected_fields``
    describe its output. The fast path is Stoker's transforms (docs/transforms.md)."""

    def __init__(self, func: Callable[[Any], Any] | None = None,
                 edit_fields: Sequence[tuple] | None = None,
                 removed_fields: Sequence[str] | None = None,
                 selected_fields: Sequence[str] | None = None) -> None:
        self.func = func if func is not None else (lambda x: x)
        self.edit_fields = list(edit_fields or [])
        self.removed_fields = list(removed_fields or [])
        self.selected_fields = None if selected_fields is None else list(selected_fields)


def get_schema_from_dataset_url(dataset_url: str | os.PathLike | Sequence[str]) -> Unischema:
    """The Unischema a Petastorm dataset stores (read by the restricted unpickler); for a
    list of file URLs, the first file's."""
    filesystem, path, source = resolve_urls(dataset_url)
    schema = find_unischema(filesystem, path, path if isinstance(source, list) else source)
    if schema is None:
        raise ValueError(f"'{source}' stores no Petastorm Unischema (no "
                         f"{UNISCHEMA_KEY.decode()} in _common_metadata, _metadata or a footer)")
    return schema


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


# make_reader and make_batch_reader write out Petastorm's signatures, the same parameters in the
# same order but for the dataset's name and batch_size (test_petastorm.py keeps them so):
# editors and type checkers read a def, not a __signature__ set at run time, and a Petastorm
# script passes these positionally. Each body hands its parameters on by name
# (ReaderArguments.of_call) to the one implementation, _arguments.open_reader.
def make_reader(dataset_url: str | os.PathLike | Sequence[str],
                schema_fields: Sequence[Any] | Any | None = None,
                reader_pool_type: str = "thread", workers_count: int | None = None,
                results_queue_size: int = 50, seed: int | None = None,
                shuffle_rows: bool = False, shuffle_row_groups: bool = True,
                shuffle_row_drop_partitions: int = 1, predicate: Any = None,
                rowgroup_selector: Any = None, num_epochs: int | None = 1,
                cur_shard: int | None = None, shard_count: int | None = None,
                shard_seed: int | None = None, cache_type: str | None = "null",
                cache_location: str | None = None, cache_size_limit: int | None = None,
                cache_row_size_estimate: int | None = None,
                cache_extra_settings: dict | None = None, hdfs_driver: str = "libhdfs3",
                transform_spec: TransformSpec | None = None, filters: Any = None,
                storage_options: dict | None = None, zmq_copy_buffers: bool = True,
                filesystem: Any = None, convert_early_to_numpy: bool = False,
                **loader_args: Any) -> Reader:
    """Petastorm's make_reader: yields one namedtuple per row, its fields decoded (numpy
    arrays of the Unischema's shapes, numpy scalars, str). ``workers_count`` is Stoker's
    ``num_threads`` (None: the CPUs this process may use); ``seed`` None is seed 0 (Stoker's
    order is always reproducible); ``predicate`` is a ``pyarrow.compute`` expression (fast:
    the C++ workers, row groups pruned by statistics) or a Petastorm predicate (slow: Python,
    per row). ``dataset_url`` may name a directory, one Parquet file or a list of file URLs;
    ``schema_fields`` may be an ``NGram`` (stoker.petastorm.ngram, or Petastorm's), which
    yields windows of consecutive rows. Further keyword arguments go to ``stoker.Loader``
    (e.g. ``shuffle_window``, ``transforms``). docs/petastorm.md maps every argument."""
    return open_reader(ReaderArguments.of_call(dataset_url, locals(), batched=False))


def make_batch_reader(dataset_url_or_urls: str | os.PathLike | Sequence[str],
                      schema_fields: Sequence[Any] | None = None,
                      reader_pool_type: str = "thread", workers_count: int | None = None,
                      results_queue_size: int = 50, seed: int | None = None,
                      shuffle_rows: bool = False, shuffle_row_groups: bool = True,
                      shuffle_row_drop_partitions: int = 1, predicate: Any = None,
                      rowgroup_selector: Any = None, num_epochs: int | None = 1,
                      cur_shard: int | None = None, shard_count: int | None = None,
                      shard_seed: int | None = None, cache_type: str | None = "null",
                      cache_location: str | None = None, cache_size_limit: int | None = None,
                      cache_row_size_estimate: int | None = None,
                      cache_extra_settings: dict | None = None, hdfs_driver: str = "libhdfs3",
                      transform_spec: TransformSpec | None = None, filters: Any = None,
                      storage_options: dict | None = None, zmq_copy_buffers: bool = True,
                      filesystem: Any = None, convert_early_to_numpy: bool = False,
                      batch_size: int = 1024, **loader_args: Any) -> Reader:
    """Petastorm's make_batch_reader: yields namedtuples of column batches (numpy arrays of
    ``batch_size`` rows; Petastorm's are one row group each). Unlike Petastorm's, it decodes a
    Petastorm dataset's codecs too. Arguments as make_reader's."""
    return open_reader(ReaderArguments.of_call(dataset_url_or_urls, locals(), batched=True))
