"""``stoker.Loader(stoker.Mixture(...))``: several sources read as one dataset. Each source is
an engine Loader of its own (its columns, renames, filter, transforms); the mixture plan
(``_core.MixturePlan``, src/mixture/mixture_plan.h) says which source fills each position of an
epoch; the engine reads a rank's positions' rows from each source's stream and gathers them
into one batch per step, ahead of the consumer (``_core.MixtureReader``,
src/mixture/mixture_stream.h; docs/mixtures.md)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, cast

import pyarrow as pa

from stoker import _core
from stoker._device import cuda as _cuda
from stoker._device import jax_device as _jax_device
from stoker._loading import cursor as _cursor
from stoker._loading import engine as _engine
from stoker._loading import epoch as _epoch
from stoker._loading import mixture as _mixture
from stoker._loading import state as _state
from stoker._loading import tables as _tables
from stoker._options import convert as _options
from stoker._options import frameworks as _frameworks
from stoker._options import keywords as _keywords

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Sequence

    from stoker._loading.mixture import Mixture

_DEFAULTS = _options.LOADER_DEFAULTS

_TAKEN = set(_keywords.names_of("MixtureLoader"))
# Loader options that mean one dataset; a mixture takes them per stoker.Source, or not at all
# (KEYWORDS says which). autotune: a mixture's sources share one pool of fixed size
# (docs/autotune.md).
_PER_SOURCE = tuple(name for keyword in _keywords.KEYWORDS if keyword.per_source
                    for name in keyword.names)
_NOT_WITH_MIXTURE = tuple(name for name in _keywords.names_of("Loader")
                          if name not in _TAKEN and name not in _PER_SOURCE)


class MixtureLoader(_epoch.EngineLoader):
    # The signature and docstring are set below the class, from KEYWORDS: its own meaning of
    # a keyword where it differs, the Loader's otherwise.

    def __init__(
        # <keywords: scripts/write_signatures.py writes these from KEYWORDS>
        self,
        mixture: Mixture,
        *,
        batch_size: int,
        shuffle: bool = _DEFAULTS.shuffle,
        seed: int = _DEFAULTS.seed,
        shuffle_window: int | None = _DEFAULTS.shuffle_window,
        plan_version: int = _DEFAULTS.plan_version,
        rank: int = _DEFAULTS.rank,
        world_size: int = _DEFAULTS.world_size,
        drop_last: bool = _DEFAULTS.drop_last,
        mode: str = _DEFAULTS.mode,
        pad_to_equal_steps: bool = _DEFAULTS.pad_to_equal_steps,
        num_threads: int | str | None = _DEFAULTS.num_threads,
        engine_cpus: Sequence[int] | None = None,
        prefetch: int | None = _DEFAULTS.prefetch,
        output: str = "numpy",
        batch_transform: Callable[[Any], Any] | None = None,
        storage_options: dict[str, Any] | None = None,
        index: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        cache_limit_bytes: int = _DEFAULTS.cache_limit_bytes,
        cache_policy: str = _DEFAULTS.cache_policy,
        device: str | None = None,
        device_prefetch: int = 2,
        # </keywords>
        **others: Any,
    ) -> None:
        given = _keywords.given(locals())
        _check_other_options(others)  # Loader options a mixture takes per source, or not
        batch_size, shuffle, seed = given["batch_size"], given["shuffle"], given["seed"]
        shuffle_window, rank, world_size = (given["shuffle_window"], given["rank"],
                                            given["world_size"])
        drop_last, mode, pad_to_equal_steps = (given["drop_last"], given["mode"],
                                               given["pad_to_equal_steps"])
        output, prefetch, batch_transform = (given["output"], given["prefetch"],
                                             given["batch_transform"])
        device, device_prefetch = given["device"], given["device_prefetch"]
        if output == "torchrec":
            raise ValueError('output="torchrec" with a Mixture: not supported (yet): read each '
                             'source with its own Loader, or take output="torch" batches')
        _frameworks.check_output(output)
        _epoch.check_python_options(output, batch_transform)
        self._device = _device(device, output)
        if device_prefetch < 1:
            raise ValueError(f"device_prefetch must be >= 1, got {device_prefetch}")
        self._device_prefetch, self._batch_transform = device_prefetch, batch_transform
        self._transformed_ahead = prefetch or _epoch.TRANSFORMED_AHEAD
        # The sources' engines check batch_size; the options no source sees (each reads at
        # world size 1, in training mode) the engine's LoaderOptions::Validate checks here.
        _check_rank_options(batch_size, rank, world_size, drop_last, mode, pad_to_equal_steps)
        if mode == "eval" and mixture.stratified:
            raise ValueError(
                "mode='eval' cannot be used with a stratified Mixture: stratified batches need "
                "whole batches per rank, and evaluation shares the rows so that ranks differ "
                "by one row (docs/combinations.md)")
        self._mixture, self._output = mixture, output
        self._batch_size, self._drop_last = batch_size, drop_last
        self._mode, self._pad = mode, pad_to_equal_steps
        self._rank, self._world_size = rank, world_size
        # The sources' engines check and stage their units for the mixture's output: tensor
        # output refuses nulls up front, so their records carry no validity flags (arrow
        # output's do, which measured about 40% more engine work on criteo data).
        engine_output = "arrow" if output == "arrow" else "numpy"
        shared = {name: given[name] for name in ("batch_size", "shuffle", "shuffle_window",
                                                 "plan_version", "num_threads", "engine_cpus", "prefetch",
                                                 "cache_dir", "cache_limit_bytes",
                                                 "cache_policy")}
        shared["output"] = engine_output
        self._sources = [_source_engine(source, i, seed, given["storage_options"],
                                        given["index"], shared)
                         for i, source in enumerate(mixture.sources)]
        configs = [engine.config() for engine in self._sources]
        passes = _passes(mixture.sources, configs)
        source_rows = mixture.source_rows(passes, batch_size, seed)
        self._plan = _core.MixturePlan(source_rows, batch_size if mixture.stratified else 0,
                                       seed)
        self._schema = _output_schema(mixture.sources, self._sources)
        if pad_to_equal_steps:
            self._schema = self._schema.append(pa.field("_valid", pa.bool_(), nullable=False))
        _check_ragged(mixture.sources, configs)
        # Each epoch e reads source s from e times the whole source epochs an epoch draws
        # from (a downsampled source gives each epoch another part; no row repeats within an
        # epoch unless upsampled), with its share of the shuffle window (MakeMixtureConfig).
        self._reader = _core.MixtureReader([engine.core for engine in self._sources],
                                           self._plan, output, mode, pad_to_equal_steps)
        self._ragged = sorted(configs[0].get("ragged", []))
        self._config = _mixture_config(self, seed, shuffle, shuffle_window, configs)
        self._cursor = _cursor.EpochCursor(_state.identity(self._config), rank, world_size)
        self._waited = _epoch.WaitClock()  # the consumer's wait (the engine counts a Loader's)

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
        return [f for engine in self._sources for f in engine.files]

    def __len__(self) -> int:
        """Batches per epoch for this rank (in evaluation, with its padding)."""
        return _core.batches_left(self._plan.epoch_rows, [], self._world_size, self._rank,
                                  self._batch_size, self._drop_last, self._mode, self._pad)

    def _read_epoch(self, progress: _cursor.Progress) -> _cursor.EpochIterator:
        epoch = self._reader.start_epoch(progress.epoch,
                                         cast("list[tuple[int, int]]",  # [world_size, rows]
                                              [tuple(r) for r in progress.rounds]),
                                         self._rank, self._world_size)
        return _epoch.EpochIterator(epoch, self._output, progress, self._batch_transform,
                                    self._transformed_ahead, None, self._device,
                                    self._device_prefetch, clock=self._waited)

    def identity_json(self) -> str:
        """What a saved state of this mixture must match (``state_dict()``'s identity fields),
        and the ragged columns, as the JSON a server over it advertises (docs/serve.md)."""
        return json.dumps({**self._config, "ragged": self._ragged,
                           "sources": [s.name for s in self._mixture.sources]}, sort_keys=True)

    def stats(self) -> dict[str, Any]:
        """``rows`` and ``batches`` delivered over the loader's life and ``wait_seconds`` (the
        consumer's wall time blocked on the next batch: the core every loader's stats() has,
        _loading/stats_keys.py), ``rows_per_source`` (the
        rows each source delivered, by name), ``epoch_rows``, ``threads`` (the workers all
        the sources share), and ``sources``: per source its
        name, weight, repeat, rows per epoch, shuffle window (its share of the mixture's),
        rows delivered and its engine's own ``stats()``
        (whose ``rows`` count what the engine assembled, read-ahead included)."""
        sources = []
        for source, engine, rows, window, delivered in zip(
                self._mixture.sources, self._sources, self._plan.source_rows,
                self._reader.shuffle_windows, self._reader.rows_delivered()):
            sources.append({"name": source.name, "weight": source.weight,
                            "repeat": source.repeat, "rows_per_epoch": rows,
                            "shuffle_window": window, "rows_delivered": delivered,
                            "engine": engine.stats()})
        return {
            "rows": sum(s["rows_delivered"] for s in sources),
            "batches": self._reader.batches_delivered(),
            "wait_seconds": self._waited.seconds,
            "epoch_rows": self._plan.epoch_rows,
            "threads": self._reader.num_threads,
            "rows_per_source": {s["name"]: s["rows_delivered"] for s in sources},
            "sources": sources,
        }



_keywords.define(MixtureLoader, """Reads a ``stoker.Mixture`` as exact, deterministic
    batches; ``stoker.Loader`` returns one when its source is a Mixture. Each ``iter()`` is one
    epoch of the mixture.

    The source of every position of an epoch is a pure function of (seed, epoch, position);
    ranks take equal contiguous slices of the epoch's positions, so they get the same number
    of batches; the state is the epoch and the rows consumed (``state_dict``), from which each
    source's position is recomputed, and it resumes at any world size (the elastic rule).
    Within a batch, rows are grouped by source, in source order. The keywords not described
    here mean what they mean to ``stoker.Loader``, applied to every source.""", {
    "seed": """keys the interleaving and, through ``_core.mixture_source_seed``, each
        source's own shuffle.""",
    "shuffle": "False reads each source in file order (the interleaving stays seeded).",
    "shuffle_window": f"""rows mixed together, split among the sources by their share of the
        epoch's positions (a batch draws from all their windows at once): memory holds
        about as many decoded rows as a Loader's. None: {_core.DEFAULT_SHUFFLE_WINDOW}.""",
    "num_threads": """the worker threads of the whole mixture, as a Loader's (None: this
        rank's share of the CPUs): one pool every source's engine submits its work to,
        not threads per source.""",
    "prefetch, cache_dir, cache_limit_bytes, cache_policy, storage_options, index": """per
        source (each source's engine keeps its own ``prefetch`` batches).""",
})

def _device(device: str | None, output: str) -> Any:
    """Where batches go: JAX's as a Loader's (its default device unless ``device`` says); a
    torch device is refused, as a mixture's batches are not staged in pinned memory."""
    if output == "jax":
        return _jax_device.target(device)
    if device is not None and output == "torch":
        raise ValueError("device= with output='torch' is not supported with a Mixture (yet): "
                         "its batches are not staged in pinned memory; move each batch with "
                         ".to(device, non_blocking=True) (docs/combinations.md)")
    return _cuda.check_device(device, output)  # a Loader's error for any other output


def _check_rank_options(batch_size: int, rank: int, world_size: int, drop_last: bool,
                        mode: str, pad_to_equal_steps: bool) -> None:
    """The options of how ranks share a mixture's epoch, checked by the engine's own rules
    (LoaderOptions::Validate), with its messages."""
    options = _core.LoaderOptions()
    # A mixture's sources are checked by their own engines; one stands in for them here.
    _options.assign(options, {"sources": ["mixture"], "batch_size": batch_size, "rank": rank,
                              "world_size": world_size, "drop_last": drop_last, "mode": mode,
                              "pad_to_equal_steps": pad_to_equal_steps})
    options.validate()


def given(options: dict[str, Any]) -> dict[str, Any]:
    """`options` without the ones a mixture does not take that are left at what "not given"
    means (None, False, empty, the Loader's default): what a command line that spells every
    flag passes for a mixture."""
    def unset(name: str, value: Any) -> bool:
        default = getattr(_DEFAULTS, name, None)
        return value in (None, False, [], 0) or (isinstance(default, str) and value == default)

    return {name: value for name, value in options.items()
            if not ((name in _PER_SOURCE or name in _NOT_WITH_MIXTURE) and unset(name, value))}


def check_options(options: dict[str, Any]) -> None:
    """The refusals of Loader options a mixture does not take, without reading any data (what
    a fleet checks before it starts servers)."""
    _check_other_options({name: value for name, value in options.items()
                          if name in _PER_SOURCE or name in _NOT_WITH_MIXTURE})


def _check_other_options(others: dict[str, Any]) -> None:
    """Loader options a mixture does not take: per-source ones name stoker.Source."""
    for name in others:
        if name in _PER_SOURCE:
            raise ValueError(f"{name}= is per source in a Mixture: give it to stoker.Source")
        if name in _NOT_WITH_MIXTURE:
            raise ValueError(f"{name}= is not supported with a Mixture")
        raise TypeError(f"Loader() got an unexpected keyword argument {name!r}")


def _source_engine(source: _mixture.Source, i: int, seed: int,
                   storage_options: dict[str, Any] | None, index: str | None,
                   shared: dict[str, Any]) -> _engine.Engine:
    """The engine of one source (world size 1: a rank reads any range of it); its errors say
    which source."""
    storage = source.storage_options if source.storage_options is not None else storage_options
    table = source.path if isinstance(source.path, _tables.Table) else None
    try:
        options = _options.loader_options([] if table is not None else source.path, storage, {
            "columns": source.columns, "filter": source.filter,
            "transforms": source.transform_spec(), "seed": _core.mixture_source_seed(seed, i),
            "index": source.index if source.index is not None else index, **shared})
        return _engine.Engine(options, shared["output"], table=table, storage_options=storage,
                              source=source.path)
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


def _output_schema(sources: list[_mixture.Source], engines: list[_engine.Engine]) -> pa.Schema:
    """The mixture's output schema: the first source's (the engine takes the others' columns
    in its order). Missing, extra or differently typed columns are errors naming source and
    column."""
    first, target = sources[0].name, engines[0].schema
    for source, engine in zip(sources[1:], engines[1:]):
        schema = engine.schema
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
    return target


def _check_ragged(sources: list[_mixture.Source], configs: list[dict[str, Any]]) -> None:
    ragged = sorted(configs[0].get("ragged", []))
    for source, config in zip(sources[1:], configs[1:]):
        if sorted(config.get("ragged", [])) != ragged:
            raise ValueError(f"mixture source {source.name!r}: its ragged columns "
                             f"{sorted(config.get('ragged', []))} differ from source "
                             f"{sources[0].name!r}'s {ragged}")


def _mixture_config(loader: MixtureLoader, seed: int, shuffle: bool,
                    shuffle_window: int | None, configs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a saved state of the mixture must match, in the shape ``_state.identity`` reads:
    the fingerprint covers every source's dataset and rows per epoch and the mixing mode; the
    filter digest every source's filter, renames and transforms (a source without transforms
    adds none, so the states saved before they counted still load)."""
    plan = loader._plan

    def digest(parts: list[Any]) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]

    return {
        "dataset_fingerprint": digest(["mixture", plan.stratified, plan.block_rows] + [
            [c["dataset_fingerprint"], rows, window] for c, rows, window in
            zip(configs, plan.source_rows, loader._reader.shuffle_windows)]),
        "files": sum(c["files"] for c in configs),
        "rows": plan.epoch_rows,
        "seed": seed,
        "shuffle": shuffle,
        "shuffle_window": configs[0]["shuffle_window"] if shuffle_window is None
        else shuffle_window,
        "plan_version": configs[0]["plan_version"],
        "batch_size": loader._batch_size,
        "drop_last": loader._drop_last,
        "mode": loader._mode,
        "pad_to_equal_steps": loader._pad,
        "columns": loader.schema.names,
        "filter_digest": digest([[c["filter_digest"],
                                  c["transform_digest"] if source.transforms else "",
                                  source.rename] for c, source in
                                 zip(configs, loader.mixture.sources)]),
        "codecs_digest": digest([c["codecs_digest"] for c in configs])
        if any(c["codecs_digest"] for c in configs) else "",
    }
