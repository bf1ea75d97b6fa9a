"""The public Loader: keyword-only options mirrored onto the C++ engine's LoaderOptions
(converted in _options/convert.py), the engine opened (engine.py), epochs read by it
(epoch.py) and counted by the shared cursor (cursor.py)."""

from __future__ import annotations

import json
import logging
import os
import warnings
from typing import TYPE_CHECKING, Any, cast

from stoker import _core
from stoker import torchrec as _torchrec
from stoker._device import cuda as _cuda
from stoker._device import jax_device as _jax_device
from stoker._loading import cursor as _cursor
from stoker._loading import engine as _engine
from stoker._loading import epoch as _epoch
from stoker._loading import mixture as _mixture
from stoker._loading import tables as _tables
from stoker._loading.mixture_loader import MixtureLoader
from stoker._options import convert as _options
from stoker._options import keywords as _keywords

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import pyarrow as pa
    import pyarrow.compute as pc

    from stoker._loading.mixture import Mixture
    from stoker._loading.tables import Table
    from stoker.torchrec import Features

_DEFAULTS = _options.LOADER_DEFAULTS
# Warnings the loader logs (a row group skipped under on_error="skip"), under "stoker".
_log = logging.getLogger("stoker")


class Loader(_epoch.EngineLoader):
    # The signature and docstring are set below the class, from KEYWORDS (_options/keywords.py).

    def __new__(cls, source: Any = None, *args: Any, **kwargs: Any) -> Any:
        # A stoker.Mixture is read by a MixtureLoader (docs/mixtures.md), which takes the
        # same keyword options; Python then calls its own __init__, not this class's.
        if isinstance(source, _mixture.Mixture):
            return MixtureLoader(source, *args, **kwargs)
        return super().__new__(cls)

    def __init__(
        # <keywords: scripts/write_signatures.py writes these from KEYWORDS>
        self,
        source: str | os.PathLike | Sequence[str | os.PathLike] | Table | Mixture,
        *,
        columns: Sequence[str] | None = None,
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
        with_row_origin: bool = _DEFAULTS.with_row_origin,
        num_threads: int | str | None = _DEFAULTS.num_threads,
        engine_cpus: Sequence[int] | None = None,
        prefetch: int | None = _DEFAULTS.prefetch,
        autotune: bool | dict[str, Any] | None = None,
        output: str = "numpy",
        codecs: Sequence[dict[str, Any]] | None = None,
        transforms: Sequence[dict[str, Any]] | None = None,
        filter: pc.Expression | None = None,
        batch_transform: Callable[[Any], Any] | None = None,
        storage_options: dict[str, Any] | None = None,
        partitioning: str | pa.Schema | None = None,
        index: str | None = None,
        cache_dir: str | os.PathLike | None = None,
        cache_limit_bytes: int = _DEFAULTS.cache_limit_bytes,
        cache_policy: str = _DEFAULTS.cache_policy,
        on_error: str = _DEFAULTS.on_error,
        max_bad_units: int | None = _DEFAULTS.max_bad_units,
        max_bad_fraction: float | None = _DEFAULTS.max_bad_fraction,
        trace: str | os.PathLike | None = None,
        trace_events: int = _DEFAULTS.trace_events,
        device: str | None = None,
        device_prefetch: int = 2,
        torchrec: Features | dict[str, Any] | None = None,
        # </keywords>
    ) -> None:
        given = _keywords.given(locals())
        output, trace, trace_events = given["output"], given["trace"], given["trace_events"]
        device, device_prefetch = given["device"], given["device_prefetch"]
        batch_transform, storage_options = given["batch_transform"], given["storage_options"]
        if trace is not None and not trace_events:
            given["trace_events"] = _core.DEFAULT_TRACE_EVENTS
        features = _torchrec.features_for(output, given["torchrec"])
        # The keyword arguments are named after LoaderOptions' fields and go there by name.
        engine_options = _options.loader_options(
            [] if isinstance(source, _tables.Table) else source, storage_options, given)
        _epoch.check_python_options(output, batch_transform)
        if output == "jax":  # JAX's default device unless device= says (_device/jax_device.py)
            self._device = _jax_device.target(device)
        else:
            self._device = _cuda.check_device(device, output)
            engine_options.pinned_output = self._device is not None
        if device_prefetch < 1:
            raise ValueError(f"device_prefetch must be >= 1, got {device_prefetch}")
        self._device_prefetch = device_prefetch
        self._output, self._batch_transform = output, batch_transform
        self._transformed_ahead = given["prefetch"] or _epoch.TRANSFORMED_AHEAD
        self._max_bad = (engine_options.max_bad_units, engine_options.max_bad_fraction)
        self._trace = None if trace is None else os.fspath(trace)
        self._skipped_logged = 0  # skipped units logged so far (stats()["skipped_units"])
        self._table = source if isinstance(source, _tables.Table) else None
        self._storage_options = storage_options
        self._open_engine(engine_options, source=source, partitioning=given["partitioning"])
        self._torchrec = None if features is None else _torchrec.Maker(
            features.check(self._schema))
        if given["on_error"] == "skip":
            self._log_skipped()  # files whose footers could not be read, left out already
        if self._core.num_batches() == 0:
            warnings.warn(
                f"this loader delivers no batches: rank {given['rank']} of world_size "
                f"{given['world_size']} gets no rows of the dataset's "
                f"{self._core.dataset()['rows']} (world_size above the row count, or "
                f"drop_last with fewer rows than batch_size={given['batch_size']})",
                stacklevel=2)

    def _open_engine(self, options: Any, table: _tables.Table | None = None,
                     **hinted: Any) -> None:
        """Builds the engine from `options`; for a table source, at the snapshot of `table`
        (None: the source as given), whose pin goes into the state."""
        self._engine = _engine.Engine(options, self._output, table=table or self._table,
                                      storage_options=self._storage_options, **hinted)
        self._core, self._options = self._engine.core, options
        self._schema, self._files = self._engine.schema, self._engine.files
        self._cursor = _cursor.EpochCursor(self._engine.identity(), options.rank,
                                           options.world_size)

    def load_state_dict(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Resumes from ``state_dict()`` (see ``EpochLoader.load_state_dict``). A state
        saved reading a table names the version it read: a loader on that table at another
        version reopens it at the saved one first, so the rest of the epoch comes from the
        same snapshot even after the table has grown."""
        pin = state.get("table") if isinstance(state, dict) else None
        if self._table is not None and pin is not None and pin != self._cursor.identity.get(
                "table"):
            self._close_open()
            self._open_engine(self._options, self._table.pin(pin))
        super().load_state_dict(state, strict=strict)

    @property
    def files(self) -> list[str]:
        """The dataset's files in dataset order: ``_file_index`` (``with_row_origin``) indexes
        this list."""
        return list(self._files)

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._core.num_batches()

    def __repr__(self) -> str:
        identity, state = self._cursor.identity, self.state_dict()
        where = f"epoch {state['epoch']}" + (", mid-epoch" if state["rounds"] else "")
        return (f"<stoker.Loader {identity['files']} files, {identity['rows']} rows, "
                f"{len(self._schema)} columns; batch_size={identity['batch_size']}, "
                f"{len(self)} batches per epoch for rank {self._cursor.rank} of "
                f"{self._cursor.world_size}; seed={identity['seed']}, "
                f"shuffle={identity['shuffle']}, mode={identity['mode']!r}, "
                f"output={self._output!r}; position: {where}>")

    def _read_epoch(self, progress: _cursor.Progress) -> _cursor.EpochIterator:
        stream = self._core.start_epoch(  # each round is a [world_size, rows] pair
            progress.epoch, cast("list[tuple[int, int]]", [tuple(r) for r in progress.rounds]))
        on_close = None if self._trace is None else lambda: self.write_trace(self._trace)
        return _epoch.EpochIterator(stream, self._output, progress, self._batch_transform,
                              self._transformed_ahead, on_close, self._device,
                              self._device_prefetch, on_short=self._log_skipped,
                              torchrec=self._torchrec)

    def _log_skipped(self) -> None:
        """Logs each row group skipped under on_error="skip" once, as a batch first lacks
        its rows (the engine lists it in stats() when it skips it)."""
        skipped = self._core.stats()["skipped_units"]
        for unit in skipped[self._skipped_logged:]:
            if unit["row_group"] < 0:  # a file whose footer could not be read
                _log.warning("skipped file %s: its footer could not be read (on_error="
                             "\"skip\", %d skipped so far): %s", unit["file"], len(skipped),
                             unit["error"])
                continue
            _log.warning("skipped row group %d of %s (%d rows; on_error=\"skip\", %d skipped "
                         "so far): %s", unit["row_group"], unit["file"], unit["rows"],
                         len(skipped), unit["error"])
        self._skipped_logged = max(self._skipped_logged, len(skipped))

    def write_trace(self, path: str | os.PathLike) -> None:
        """Writes the timeline kept so far (``trace=`` or ``trace_events=``) as Chrome trace
        JSON to ``path``."""
        self._core.write_trace(os.fspath(path))

    def _delivered_digest(self) -> str:
        return self._core.stats()["delivered_digest"]

    def _restore_digest(self, digest: str) -> None:
        self._core.restore_digest(digest)

    def stats(self) -> dict[str, Any]:
        """Counters over the loader's life: rows, batches, bytes_read, units_read, the
        seconds spent reading, decoding, assembling (thread-seconds) and waiting (the
        consumer's wall time blocked on the next batch), and ``delivered_digest``: a running
        digest of the rows delivered in order (carried across a same-rank resume). Under
        ``on_error="skip"``: ``skipped_units`` (a dict per row group skipped: file,
        row_group, rows, error) and ``skipped_rows`` (planned rows left out of delivered
        batches, summed over epochs). The schema is stable and documented field by field in
        docs/observability.md, with ``wait_per_batch`` (the wait for each batch: count, p50,
        p90, p99, max in seconds, and its histogram), ``recent_rows_per_second``,
        ``cache_hit_rate``, ``threads``/``io_threads`` and ``cpu_budget``."""
        return self._engine.stats()

    def quarantine_report(self, path: str | os.PathLike | None = None) -> dict[str, Any]:
        """The row groups skipped so far under ``on_error="skip"`` (file, row group, rows,
        first error) with the dataset's identity and the budget, as a dict; written as JSON
        to ``path`` when given."""
        stats = self._core.stats()
        info = self._core.dataset()
        report = {
            "dataset_fingerprint": info["fingerprint"],
            "row_groups": info["row_groups"],
            "rows": info["rows"],
            "max_bad_units": self._max_bad[0],
            "max_bad_fraction": self._max_bad[1],
            "skipped_row_groups": len(stats["skipped_units"]),
            "skipped_rows_per_epoch": sum(unit["rows"] for unit in stats["skipped_units"]),
            "units": stats["skipped_units"],
        }
        if path is not None:
            with open(path, "w") as out:
                json.dump(report, out, indent=2)
                out.write("\n")
        return report

    def dataset_info(self) -> dict[str, Any]:
        """Files, rows, row groups and the fingerprint of the resolved dataset."""
        return self._core.dataset()


_keywords.define(Loader, """Reads a Parquet dataset as exact, deterministic, shuffled batches.

    Each ``iter(loader)`` is one epoch; epochs count up from 0 unless ``set_epoch`` says
    otherwise. With the same dataset, seed, epoch, rank and world size the batches are
    bit-identical whatever ``num_threads`` is.""")
