"""Petastorm's arguments mapped onto the Loader's: a make_reader or make_batch_reader call
checked with Petastorm's exceptions, its dataset opened, the fields, predicate, transform and
cache it asks for turned into the options of the Loaders that read it, and the Reader over
them (docs/petastorm.md has the table, argument by argument)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

import stoker
from stoker.petastorm._cache import LocalDiskCache, NullCache
from stoker.petastorm._decoders import loader_codecs
from stoker.petastorm._errors import NoDataAvailableError
from stoker.petastorm._metadata import find_unischema, load_rowgroup_index, resolve_urls
from stoker.petastorm._predicate import PythonPredicate
from stoker.petastorm._reader import Reader
from stoker.petastorm._row_origin import RowGroups
from stoker.petastorm._rowgroup_index import selected_row_groups
from stoker.petastorm._schema import (
    inferred_schema,
    ngram_schema,
    selected_schema,
    transformed_schema,
)
from stoker.petastorm._unischema import Unischema

# Rows the row reader takes from the engine at a time (the rows and their order do not depend
# on it).
_ROW_READER_BATCH = 256
# Petastorm's worker pools: each is accepted, and decoding runs in Stoker's C++ workers
# whichever is named.
_READER_POOL_TYPES = ("thread", "process", "dummy")
# The Loader options Petastorm's arguments set, refused among loader_args.
_SET_FROM_PETASTORM = ("num_threads", "shuffle", "seed", "rank", "world_size", "columns",
                       "codecs", "filter", "output", "batch_size")
# warnings.warn's stacklevel, from a step of open_reader, of the user's make_reader or
# make_batch_reader call: the step, open_reader, make_reader, the call.
_USER_CALL = 4


@dataclass(frozen=True)
class ReaderArguments:
    """The arguments of one make_reader or make_batch_reader call that change what it reads.
    Those Petastorm takes for its own machinery (results_queue_size, cache_row_size_estimate,
    cache_extra_settings, hdfs_driver, zmq_copy_buffers, convert_early_to_numpy) are accepted
    by the signatures and change nothing here."""

    dataset_url: Any  # make_batch_reader's dataset_url_or_urls; checked by _check_arguments
    batched: bool  # make_batch_reader's column batches, or make_reader's rows
    schema_fields: Sequence[Any] | Any | None
    reader_pool_type: str
    workers_count: int | None
    seed: int | None
    shuffle_rows: bool
    shuffle_row_groups: bool
    shuffle_row_drop_partitions: int
    predicate: Any
    rowgroup_selector: Any
    num_epochs: int | None
    cur_shard: int | None
    shard_count: int | None
    shard_seed: int | None
    cache_type: str | None
    cache_location: str | None
    cache_size_limit: int | None
    transform_spec: Any
    filters: Any
    storage_options: Any
    filesystem: Any
    batch_size: int | None  # make_batch_reader's; None for make_reader (_ROW_READER_BATCH)
    loader_args: dict[str, Any]  # the Loader's own keyword arguments, passed through

    @classmethod
    def of_call(cls, dataset_url: Any, parameters: Mapping[str, Any], *,
                batched: bool) -> ReaderArguments:
        """The arguments of a call of make_reader (``batched`` False) or make_batch_reader,
        taken by name from ``parameters``: that function's ``locals()`` as it begins, which
        hold exactly its parameters."""
        named = {field.name for field in fields(cls)} - {"dataset_url", "batched", "batch_size"}
        return cls(dataset_url=dataset_url, batched=batched,
                   batch_size=parameters.get("batch_size"),
                   **{name: parameters[name] for name in named})


@dataclass(frozen=True)
class _Dataset:
    """Where a reader's dataset is, and its Unischema."""

    filesystem: pafs.FileSystem
    path: str
    source: str | list[str]  # what the Loader reads: a directory, a file or a list of files
    schema: Unischema  # the stored one, or one inferred from the Parquet schema
    partitioning: Any  # what the Loaders read partition keys as (None: none)


def open_reader(args: ReaderArguments) -> Reader:
    """The Reader of one make_reader or make_batch_reader call.

    One straight sequence, left whole: each step takes what the steps before it made, and the
    order is the order of Petastorm's own checks and warnings (the arguments before the
    dataset is opened, the dataset's schema before the fields are chosen, the Loaders, which
    read every footer, last), so it reads as the list of what a call does."""
    ngram = args.schema_fields if _is_ngram(args.schema_fields) else None  # Stoker's or Petastorm's
    _check_arguments(args, ngram)
    dataset = _open_dataset(args)
    selected = _selected_row_groups(args, ngram, dataset)
    schema = _fields_read(args, ngram, dataset.schema)
    names = list(schema.fields)
    row_filter, expression = _predicates(args, names)
    transform, output_schema = None, schema
    if args.transform_spec is not None:
        transform = args.transform_spec.func
        output_schema = transformed_schema(schema, args.transform_spec)
    cache_dir, cache = _cache(args)
    options = _loader_options(args, schema, expression, cache_dir)
    by_row_group = ngram is not None or selected is not None
    loaders = _loaders(dataset.source, options, _passed_through(args, dataset, ngram, selected),
                       by_row_group=by_row_group)
    _check_shards(args.shard_count, loaders)
    _warn_if_no_partition_matches(row_filter, loaders, schema)
    row_groups = RowGroups(loaders[0].files) if by_row_group else None
    return Reader(loaders[0], schema, args.num_epochs, args.batched, row_filter, transform,
                  output_schema, ngram, row_groups, selected, seed=options["seed"],
                  cache=cache, more_loaders=loaders[1:])


def _check_arguments(args: ReaderArguments, ngram: Any) -> None:
    """Petastorm's checks of its arguments, with its exceptions (a script that catches them
    still does), and the refusals of those Stoker does not take."""
    if isinstance(args.dataset_url, list) and not args.dataset_url:
        raise ValueError("dataset url list must be non-empty")
    if not isinstance(args.dataset_url, (str, os.PathLike, list, tuple)):
        raise ValueError(  # noqa: TRY004 (Petastorm raises ValueError; scripts catch it)
            f"dataset_url must be a URL or path (a string), or a list of them; "
            f"got {args.dataset_url!r}")
    if args.reader_pool_type not in _READER_POOL_TYPES:
        raise ValueError(f"Unknown reader_pool_type: {args.reader_pool_type} (one of "
                         f"{', '.join(_READER_POOL_TYPES)})")
    epochs = args.num_epochs
    if epochs is not None and (not isinstance(epochs, int) or isinstance(epochs, bool)
                               or epochs < 1):
        raise ValueError(f"num_epochs must be a positive int or None (endless), got "
                         f"{epochs!r}")
    _check_shard(args.cur_shard, args.shard_count)
    if args.shard_seed is not None:
        warnings.warn("shard_seed was deprecated and will be removed in future versions. "
                      "It has no effect: shards follow the seed", UserWarning,
                      stacklevel=_USER_CALL)
    if args.shuffle_row_drop_partitions != 1 and ngram is None:
        raise NotImplementedError("shuffle_row_drop_partitions: Stoker shuffles rows across a "
                                  "window of row groups (shuffle_window) instead")
    if args.filesystem is not None:
        raise NotImplementedError("filesystem: pass storage_options (docs/storage.md)")


def _check_shard(cur_shard: Any, shard_count: Any) -> None:
    if cur_shard is None and shard_count is None:
        return
    if not (isinstance(cur_shard, int) and isinstance(shard_count, int)) or shard_count < 1:
        raise ValueError(f"cur_shard and shard_count must be ints and both given to shard "
                         f"(got cur_shard={cur_shard!r}, shard_count={shard_count!r})")
    if not 0 <= cur_shard < shard_count:
        raise ValueError(f"cur_shard must be in [0, shard_count={shard_count}), got "
                         f"{cur_shard}")


def _open_dataset(args: ReaderArguments) -> _Dataset:
    """Where the dataset is, how its partitions are read and its Unischema: the one it
    stores, or (a plain Parquet dataset) one inferred from its columns."""
    filesystem, path, source = resolve_urls(args.dataset_url)
    partitioning = args.loader_args.get("partitioning")
    # Petastorm reads a directory's key=value subdirectories (Spark's partitionBy) as columns,
    # as pyarrow's dataset discovery does; so does the Loader with partitioning="hive".
    if ("partitioning" not in args.loader_args
            and filesystem.get_file_info(path).type == pafs.FileType.Directory):
        partitioning = "hive"
    schema = find_unischema(filesystem, path, path if isinstance(source, list) else source)
    if schema is None:
        schema = inferred_schema(source, args.storage_options, partitioning, stacklevel=_USER_CALL)
    return _Dataset(filesystem, path, source, schema, partitioning)


def _selected_row_groups(args: ReaderArguments, ngram: Any,
                         dataset: _Dataset) -> set[int] | None:
    """The row groups ``rowgroup_selector`` picks from the dataset's row-group index (None:
    every one). It and an NGram find each row's row group from its place in its file, which a
    pyarrow.compute predicate or filters would take away."""
    by_row_group = [name for name, given in (("an NGram", ngram is not None),
                                             ("rowgroup_selector",
                                              args.rowgroup_selector is not None))
                    if given]  # what needs each row's row group
    if by_row_group and (isinstance(args.predicate, pc.Expression) or args.filters is not None):
        raise NotImplementedError(f"{' and '.join(by_row_group)} with a pyarrow.compute "
                                  f"predicate or filters: each row's row group is known from "
                                  f"its place in its file, which a filtered row group no longer "
                                  f"knows; give a Petastorm predicate (in_lambda, ...) instead")
    if args.rowgroup_selector is None:
        return None
    return selected_row_groups(args.rowgroup_selector,
                               lambda: load_rowgroup_index(dataset.filesystem, dataset.path))


def _fields_read(args: ReaderArguments, ngram: Any, schema: Unischema) -> Unischema:
    """The view of ``schema`` the reader reads: an NGram's fields (the NGram checked and its
    regular expressions resolved against ``schema``), those of ``schema_fields``, or every
    field when it is None or empty (as Petastorm)."""
    if ngram is not None:
        _check_ngram(ngram, args)
        ngram.resolve_regex_field_names(schema)
        return ngram_schema(schema, ngram)
    if args.schema_fields:
        return selected_schema(schema, args.schema_fields)
    return schema


def _check_ngram(ngram: Any, args: ReaderArguments) -> None:
    if args.batched:
        raise NotImplementedError("make_batch_reader does not take an NGram (nor does "
                                  "Petastorm's): use make_reader")
    if not ngram.timestamp_overlap and args.shuffle_row_drop_partitions > 1:
        # Petastorm's NotImplementedError.
        raise NotImplementedError("Using timestamp_overlap=False is not implemented with "
                                  "shuffle_options.shuffle_row_drop_partitions > 1")
    for name in ("with_row_origin", "shuffle_window"):
        if name in args.loader_args:
            raise TypeError(f"{name} is set by the NGram path; leave it out")


def _predicates(args: ReaderArguments,
                names: list[str]) -> tuple[PythonPredicate | None, pc.Expression | None]:
    """(the Petastorm predicate run in Python, the expression the Loader's workers filter
    by): ``predicate`` goes to one or the other by its kind, and ``filters`` (Petastorm's DNF
    list) joins the expression."""
    row_filter, expression = None, None
    if isinstance(args.predicate, pc.Expression):
        expression = args.predicate
    elif args.predicate is not None:
        row_filter = PythonPredicate(args.predicate, names)
    if args.filters is not None:
        given = pq.filters_to_expression(args.filters)
        expression = given if expression is None else expression & given
    return row_filter, expression


def _cache(args: ReaderArguments) -> tuple[str | None, LocalDiskCache | NullCache]:
    """(the Loader's cache_dir, what the reader's cleanup_cache() removes) for ``cache_type``:
    the Loader's disk cache in ``cache_location`` for "local-disk", none for "null"."""
    if args.cache_type in (None, "null"):
        return None, NullCache()
    if args.cache_type != "local-disk":
        raise ValueError(f"Unknown cache_type: {args.cache_type}")
    if args.cache_location is None:
        return None, NullCache()
    return args.cache_location, LocalDiskCache(args.cache_location)


def _loader_options(args: ReaderArguments, schema: Unischema, expression: pc.Expression | None,
                    cache_dir: str | None) -> dict[str, Any]:
    """The Loader options Petastorm's arguments set (refused among loader_args)."""
    for name in _SET_FROM_PETASTORM:
        if name in args.loader_args:
            raise TypeError(f"{name} is set from Petastorm's arguments; give those instead")
    names = list(schema.fields)
    return {
        "columns": names,
        "batch_size": _ROW_READER_BATCH if args.batch_size is None else args.batch_size,
        "shuffle": bool(args.shuffle_row_groups or args.shuffle_rows),
        "seed": 0 if args.seed is None else args.seed,
        "num_threads": args.workers_count,
        "rank": args.cur_shard or 0,
        "world_size": args.shard_count or 1,
        "mode": "eval",
        "output": "arrow",
        "codecs": loader_codecs(schema, names),
        "filter": expression,
        "cache_dir": cache_dir,
        "cache_limit_bytes": args.cache_size_limit or 0,
        "storage_options": args.storage_options,
    }


def _passed_through(args: ReaderArguments, dataset: _Dataset, ngram: Any,
                    selected: set[int] | None) -> dict[str, Any]:
    """loader_args, with the partitioning a directory is read with and the row origin the
    NGram and rowgroup_selector paths read. A name _loader_options sets that is given here too
    (``mode``, ``cache_dir``, ...) is Python's own TypeError (multiple values) when the Loaders
    are made."""
    passed = dict(args.loader_args)
    if dataset.partitioning is not None:
        passed["partitioning"] = dataset.partitioning
    if ngram is not None:
        # Each row group's rows arrive together (a shuffle window is whole row groups, so one
        # row group per window), their origin telling the row group and putting them back in
        # stored order: shuffling moves row groups, never rows within a window.
        passed.update(with_row_origin=True, shuffle_window=1)
    if selected is not None:
        passed["with_row_origin"] = True
    return passed


def _loaders(source: str | list[str], options: dict[str, Any], passed: dict[str, Any], *,
             by_row_group: bool) -> list[stoker.Loader]:
    """The Loaders that read ``source``, one after the other each epoch. A URL list naming a
    file again is read as Petastorm reads it, every time it is named: the Loader reads a file
    once, so each repetition is another Loader (not ``by_row_group``, an NGram's or a
    rowgroup_selector's, whose row-group numbers are one Loader's)."""
    sources: list[str | list[str]] = [source]
    if isinstance(source, list) and not by_row_group:
        sources = list(_rounds(source))
    return [stoker.Loader(files, **options, **passed) for files in sources]


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


def _check_shards(shard_count: int | None, loaders: Sequence[stoker.Loader]) -> None:
    """Petastorm's error for more shards than row groups. Stoker's shards are row slices and
    would not be empty, but a script written for Petastorm (whose shards are whole row groups)
    expects it."""
    if shard_count is None:
        return
    row_groups = sum(each.dataset_info()["row_groups"] for each in loaders)
    if row_groups < shard_count:
        raise NoDataAvailableError(
            f"Number of row-groups in the dataset ({row_groups}) must be greater or equal "
            f"to the number of requested shards ({shard_count}), as Petastorm requires")


def _warn_if_no_partition_matches(row_filter: PythonPredicate | None,
                                  loaders: Sequence[stoker.Loader], schema: Unischema) -> None:
    """Petastorm's warning for a predicate over the partition keys alone that keeps no
    partition (it evaluates such a predicate before reading)."""
    if row_filter is None:
        return
    files = [file for each in loaders for file in each.files]
    if row_filter.matches_nothing(_partition_keys(files),
                                  {n: f.numpy_dtype for n, f in schema.fields.items()}):
        warnings.warn("No matching data is available for loading after rowgroup selector were "
                      "applied and the data was sharded (the predicate keeps no partition)",
                      UserWarning, stacklevel=_USER_CALL)


def _partition_keys(files: Sequence[str]) -> list[dict[str, str]]:
    """Each file's hive partition keys (the ``key=value`` directories of its path)."""
    return [dict(part.split("=", 1) for part in file.split("/")[:-1] if "=" in part)
            for file in files]


def _is_ngram(schema_fields: Any) -> bool:
    """Whether schema_fields is an NGram: Stoker's or Petastorm's (both have these)."""
    return all(hasattr(schema_fields, name) for name in (
        "form_ngram", "make_namedtuple", "resolve_regex_field_names", "timestamp_overlap"))
