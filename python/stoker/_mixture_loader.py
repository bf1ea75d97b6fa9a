"""``stoker.Loader(stoker.Mixture(...))``: several sources read as one dataset. Each source is
an engine Loader of its own (its columns, renames, filter, transforms); the mixture plan
(``_core.MixturePlan``, src/plan/mixture_plan.h) says which source fills each position of an
epoch; a rank reads its positions' rows from each source's stream (_source_stream.py) as
zero-copy Arrow slices and gathers them into one batch per step (docs/mixtures.md)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from stoker import _core, _cursor, _frameworks, _loader, _mixture, _options, _state
from stoker._source_stream import SourceStream

_DEFAULTS = _options.LOADER_DEFAULTS

# Loader options that mean one dataset; a mixture takes them per stoker.Source, or not at all.
_PER_SOURCE = ("columns", "filter", "transforms")
_NOT_WITH_MIXTURE = ("mode", "pad_to_equal_steps", "with_row_origin", "batch_transform",
                     "on_error", "max_bad_units", "max_bad_fraction", "trace", "trace_events",
                     "device", "device_prefetch")


class MixtureLoader(_cursor.EpochLoader):
    """Reads a ``stoker.Mixture`` as exact, deterministic batches; ``stoker.Loader`` returns
    one when its source is a Mixture. Each ``iter()`` is one epoch of the mixture.

    The source of every position of an epoch is a pure function of (seed, epoch, position);
    ranks take equal contiguous slices of the epoch's positions, so they get the same number
    of batches; the state is the epoch and the rows consumed (``state_dict``), from which each
    source's position is recomputed, and it resumes at any world size (the elastic rule).
    Within a batch, rows are grouped by source, in source order.

    Args (the rest as ``stoker.Loader`` documents them, applied to every source):
        mixture: the sources and their policy.
        seed: keys the interleaving and, through ``_core.mixture_source_seed``, each
            source's own shuffle.
        shuffle: False reads each source in file order (the interleaving stays seeded).
        shuffle_window, num_threads, prefetch, cache_dir, cache_limit_bytes, cache_policy,
            storage_options, index: per source: each source's engine has its own worker
            threads and holds its own shuffle window.
        output: "numpy", "torch", "jax", "tensorflow" or "arrow".
    """

    def __init__(
        self,
        mixture: _mixture.Mixture,
        *,
        batch_size: int,
        shuffle: bool = _DEFAULTS.shuffle,
        seed: int = _DEFAULTS.seed,
        shuffle_window: int | None = _DEFAULTS.shuffle_window,
        rank: int = _DEFAULTS.rank,
        world_size: int = _DEFAULTS.world_size,
        drop_last: bool = _DEFAULTS.drop_last,
        num_threads: int | None = _DEFAULTS.num_threads,
        prefetch: int | None = _DEFAULTS.prefetch,
        output: str = "numpy",
        cache_dir: str | os.PathLike | None = None,
        cache_limit_bytes: int = _DEFAULTS.cache_limit_bytes,
        cache_policy: str = _DEFAULTS.cache_policy,
        storage_options: dict[str, Any] | None = None,
        index: str | None = None,
        **others: Any,
    ) -> None:
        _check_other_options(others)
        _frameworks.check_output(output)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(world_size, int) or world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, world_size) and world_size >= 1, got "
                             f"rank={rank!r}, world_size={world_size!r}")
        self._mixture, self._output = mixture, output
        self._batch_size, self._drop_last = batch_size, drop_last
        self._rank, self._world_size = rank, world_size
        shared = {"batch_size": batch_size, "shuffle": shuffle,
                  "shuffle_window": shuffle_window, "num_threads": num_threads,
                  "prefetch": prefetch, "output": "arrow", "cache_dir": cache_dir,
                  "cache_limit_bytes": cache_limit_bytes, "cache_policy": cache_policy}
        self._sources = [_source_loader(source, i, seed, storage_options, index, shared)
                         for i, source in enumerate(mixture.sources)]
        configs = [json.loads(loader._core.config()) for loader in self._sources]
        passes = _passes(mixture.sources, configs)
        source_rows = mixture.source_rows(passes, batch_size, seed)
        self._plan = _core.MixturePlan(source_rows, batch_size if mixture.stratified else 0,
                                       seed)
        self._schema, conversions = _output_schema(mixture.sources, self._sources)
        self._ragged = _ragged(mixture.sources, configs)
        self._streams_args = [(loader._core, config["rows"], conversion) for loader, config,
                              conversion in zip(self._sources, configs, conversions)]
        # Where epoch e starts in each source's stream: e times the whole source epochs an
        # epoch draws from, so every epoch starts a fresh source epoch (a downsampled source
        # gives each epoch another part; no row repeats within an epoch unless upsampled).
        self._strides = [-(-rows // config["rows"]) * config["rows"]
                         for rows, config in zip(self._plan.source_rows, configs)]
        self._delivered = [0] * len(self._sources)  # rows per source, over the loader's life
        self._batches = 0
        identity = _state.identity(_mixture_config(self, seed, shuffle, shuffle_window,
                                                   configs))
        self._cursor = _cursor.EpochCursor(identity, rank, world_size)

    @property
    def schema(self) -> pa.Schema:
        """The columns of every batch, as Arrow types (the first source's order)."""
        return self._schema

    @property
    def output(self) -> str:
        return self._output

    @property
    def mixture(self) -> _mixture.Mixture:
        return self._mixture

    @property
    def source_rows(self) -> dict[str, int]:
        """Rows each source fills in every epoch (all ranks), by source name."""
        return {s.name: rows for s, rows in zip(self._mixture.sources, self._plan.source_rows)}

    @property
    def epoch_rows(self) -> int:
        """Positions of an epoch (all ranks): the sum of ``source_rows``."""
        return self._plan.epoch_rows

    @property
    def files(self) -> list[str]:
        """Every source's files, source after source."""
        return [f for loader in self._sources for f in loader.files]

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        rows = self._plan.epoch_rows // self._world_size
        return _state.batches_of(rows, self._batch_size, self._drop_last)

    def _read_epoch(self, progress: _cursor.Progress) -> Iterator[Any]:
        segments = _core.rank_segments(self._plan.epoch_rows,
                                       [tuple(r) for r in progress.rounds],
                                       self._world_size, self._rank)
        return _MixtureEpoch(self, progress, segments)

    def _convert(self) -> Callable[[Any], Any]:
        """What a gathered batch becomes: Arrow capsules into a pyarrow.RecordBatch; the
        tensors ``gather_slices`` made are delivered as they are."""
        if self._output == "arrow":
            return lambda capsules: pa.record_batch(_loader._CapsuleBatch(capsules))
        return lambda batch: batch

    def _count_delivered(self, counts: list[int]) -> None:
        for s, rows in enumerate(counts):
            self._delivered[s] += rows
        self._batches += 1

    def stats(self) -> dict[str, Any]:
        """``rows`` and ``batches`` delivered over the loader's life, ``rows_per_source`` (the
        rows each source delivered, by name), ``epoch_rows``, and ``sources``: per source its
        name, weight, repeat, rows per epoch, rows delivered and its engine's own ``stats()``
        (whose ``rows`` count what the engine assembled, read-ahead included)."""
        sources = []
        for source, loader, rows, delivered in zip(self._mixture.sources, self._sources,
                                                   self._plan.source_rows, self._delivered):
            sources.append({"name": source.name, "weight": source.weight,
                            "repeat": source.repeat, "rows_per_epoch": rows,
                            "rows_delivered": delivered, "engine": loader.stats()})
        return {
            "rows": sum(self._delivered),
            "batches": self._batches,
            "epoch_rows": self._plan.epoch_rows,
            "rows_per_source": {s["name"]: s["rows_delivered"] for s in sources},
            "sources": sources,
        }


class _MixtureEpoch(_cursor.EpochIterator):
    """One epoch of a mixture for one rank: walks the rank's segments of the epoch's
    positions, a batch at a time; for each stretch it counts the positions each source fills
    (from the plan's block of sources) and takes that many rows from the source's stream,
    where the source's rows before that position say (``rows_before``: recomputed at each
    segment's start, then carried)."""

    def __init__(self, loader: MixtureLoader, progress: _cursor.Progress,
                 segments: list[tuple[int, int]]) -> None:
        rows = sum(end - begin for begin, end in segments)
        super().__init__(progress,
                         _state.batches_of(rows, loader._batch_size, loader._drop_last))
        self._loader, self._plan, self._epoch = loader, loader._plan, progress.epoch
        self._strides = loader._strides
        self._segments, self._segment = segments, 0
        self._position = segments[0][0] if segments else 0
        self._before: list[int] | None = None  # rows of each source before self._position
        self._left = len(self)  # batches still to deliver
        self._rows_left = rows
        self._block, self._block_sources = -1, np.zeros(0, np.uint8)
        self._streams = [SourceStream(*args) for args in loader._streams_args]
        self._convert = loader._convert()
        self._pid = os.getpid()
        _loader._live_epochs.add(self)  # closed at interpreter exit, as a Loader's epochs

    def _pull(self) -> tuple[int, Any] | None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                f"this mixture epoch was started in process {self._pid} and read after a fork "
                f"in process {os.getpid()}: its sources' worker threads exist only in the "
                f"parent. Start a new iter(loader) in the child")
        if self._left == 0:
            return None
        self._left -= 1
        need = min(self._loader._batch_size, self._rows_left)
        self._rows_left -= need
        pieces: list[list[tuple[Any, int, int]]] = [[] for _ in self._streams]
        counts = [0] * len(self._streams)
        while need > 0:
            end = self._segments[self._segment][1]
            if self._before is None:
                self._before = self._plan.rows_before(self._epoch, self._position)
            n = min(need, end - self._position)
            for s, count in enumerate(self._count_sources(self._position, n)):
                if count:
                    start = self._epoch * self._strides[s] + self._before[s]
                    pieces[s].extend(self._streams[s].take(start, count))
                    self._before[s] += count
                    counts[s] += count
            self._position += n
            need -= n
            if self._position == end and self._segment + 1 < len(self._segments):
                self._segment += 1
                self._position, self._before = self._segments[self._segment][0], None
        batch = _core.gather_slices([piece for source in pieces for piece in source],
                                    self._loader._output, self._loader._ragged)
        self._loader._count_delivered(counts)
        return sum(counts), self._convert(batch)

    def _count_sources(self, position: int, n: int) -> list[int]:
        """Positions each source fills in [position, position + n)."""
        counts = np.zeros(len(self._streams), np.int64)
        block_rows = self._plan.block_rows
        while n > 0:
            block, offset = divmod(position, block_rows)
            if block != self._block:
                self._block = block
                self._block_sources = np.frombuffer(
                    self._plan.block_sources(self._epoch, block), np.uint8)
            m = min(n, len(self._block_sources) - offset)
            counts += np.bincount(self._block_sources[offset:offset + m],
                                  minlength=len(counts))
            position += m
            n -= m
        return counts.tolist()

    def _release(self) -> None:
        if getattr(self, "_pid", None) != os.getpid():
            return  # not started, or the engine epochs are the parent's
        for stream in self._streams:
            stream.close()

    def __del__(self) -> None:
        self.close()


def _check_other_options(others: dict[str, Any]) -> None:
    """Loader options a mixture does not take: per-source ones name stoker.Source."""
    for name in others:
        if name in _PER_SOURCE:
            raise ValueError(f"{name}= is per source in a Mixture: give it to stoker.Source")
        if name in _NOT_WITH_MIXTURE:
            raise ValueError(f"{name}= is not supported with a Mixture")
        raise TypeError(f"Loader() got an unexpected keyword argument {name!r}")


def _source_loader(source: _mixture.Source, i: int, seed: int,
                   storage_options: dict[str, Any] | None, index: str | None,
                   shared: dict[str, Any]) -> _loader.Loader:
    """The engine Loader of one source (world size 1: a rank reads any range of it); its
    errors say which source."""
    try:
        return _loader.Loader(
            source.path, columns=source.columns, filter=source.filter,
            transforms=source.transform_spec(), seed=_core.mixture_source_seed(seed, i),
            storage_options=(source.storage_options if source.storage_options is not None
                             else storage_options),
            index=source.index if source.index is not None else index, **shared)
    except (ValueError, KeyError, TypeError, OSError) as error:
        kind = type(error)
        if kind is KeyError:
            kind = ValueError
        raise kind(f"mixture source {source.name!r}: {error}") from error


def _passes(sources: list[_mixture.Source], configs: list[dict[str, Any]]) -> list[int]:
    """Rows of one pass of each source: ``repeat`` times its rows (after its filter)."""
    passes = []
    for source, config in zip(sources, configs):
        if config["rows"] == 0:
            raise ValueError(f"mixture source {source.name!r} has no rows"
                             f"{' matching its filter' if source.filter is not None else ''}")
        rows = round((source.repeat or 1.0) * config["rows"])
        if rows < 1:
            raise ValueError(f"mixture source {source.name!r}: repeat={source.repeat} of "
                             f"{config['rows']} rows is less than one row")
        passes.append(rows)
    return passes


def _output_schema(sources: list[_mixture.Source], loaders: list[_loader.Loader]
                   ) -> tuple[pa.Schema, list[list[str]]]:
    """The mixture's output schema (the first source's) and, per source, the output's column
    names when the source gives them in another order (else []: its batches fit as they
    are). Missing, extra or differently typed columns are errors naming source and column."""
    first, target = sources[0].name, loaders[0].schema
    conversions: list[list[str]] = [[]]
    for source, loader in zip(sources[1:], loaders[1:]):
        schema = loader.schema
        for field in target:
            if field.name not in schema.names:
                raise ValueError(
                    f"mixture source {source.name!r} has no column {field.name!r}, which "
                    f"source {first!r} gives the output: map one of its columns "
                    f"({', '.join(schema.names)}) with rename=")
            other = schema.field(field.name).type
            if other != field.type:
                raise ValueError(
                    f"mixture source {source.name!r} column {field.name!r} is {other}, but "
                    f"source {first!r}'s is {field.type}: the sources must give the same "
                    f"output schema (a cast transform can convert it)")
        extra = [name for name in schema.names if name not in target.names]
        if extra:
            raise ValueError(f"mixture source {source.name!r} has columns {extra} that source "
                             f"{first!r} does not give: select the shared ones with columns=")
        conversions.append([] if schema.names == target.names else target.names)
    return target, conversions


def _ragged(sources: list[_mixture.Source], configs: list[dict[str, Any]]) -> list[str]:
    ragged = sorted(configs[0].get("ragged", []))
    for source, config in zip(sources[1:], configs[1:]):
        if sorted(config.get("ragged", [])) != ragged:
            raise ValueError(f"mixture source {source.name!r}: its ragged columns "
                             f"{sorted(config.get('ragged', []))} differ from source "
                             f"{sources[0].name!r}'s {ragged}")
    return list(configs[0].get("ragged", []))


def _mixture_config(loader: MixtureLoader, seed: int, shuffle: bool,
                    shuffle_window: int | None, configs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a saved state of the mixture must match, in the shape ``_state.identity`` reads:
    the fingerprint covers every source's dataset and rows per epoch and the mixing mode; the
    filter digest every source's filter and transforms."""
    plan = loader._plan

    def digest(parts: list[Any]) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]

    return {
        "dataset_fingerprint": digest(["mixture", plan.stratified, plan.block_rows] + [
            [c["dataset_fingerprint"], rows] for c, rows in zip(configs, plan.source_rows)]),
        "files": sum(c["files"] for c in configs),
        "rows": plan.epoch_rows,
        "seed": seed,
        "shuffle": shuffle,
        "shuffle_window": configs[0]["shuffle_window"] if shuffle_window is None
        else shuffle_window,
        "batch_size": loader._batch_size,
        "drop_last": loader._drop_last,
        "mode": "train",
        "pad_to_equal_steps": False,
        "columns": loader.schema.names,
        "filter_digest": digest([[c["filter_digest"], c.get("transforms_digest", ""),
                                  source.rename] for c, source in
                                 zip(configs, loader.mixture.sources)]),
    }
