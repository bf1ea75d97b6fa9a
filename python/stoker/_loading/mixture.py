# mypy: allow-redefinition-new, local-partial-types
"""A weighted mixture of datasets: ``stoker.Source`` (one dataset with its own columns,
renames, filter and transforms, and its weight or repeat) and ``stoker.Mixture`` (the sources
and the policy that sizes an epoch). ``stoker.Loader(Mixture(...), ...)`` reads it
(mixture_loader.py); docs/mixtures.md."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pyarrow.compute as pc

from stoker import _core
from stoker._loading import tables as _tables

# How a weighted mixture's epoch ends (Mixture's ``stop``).
STOPS = ("first", "all")


class Source:
    """One dataset of a mixture.

    Args:
        path: what ``stoker.Loader`` takes as its source: a file, a directory, a glob, or a
            list of those; or a table, ``stoker.delta_table(...)`` or
            ``stoker.iceberg_table(...)`` (its snapshot is resolved when the loader is made;
            the mixture's state covers its files, so a state is refused by another snapshot).
        weight: this source's share of the mixture (> 0; the weights are relative, divided
            by their sum). Give every source a weight, or none.
        repeat: how many passes over this source an epoch holds: 2.0 upsamples (each row
            twice per epoch), 0.5 downsamples (half the rows per epoch: the first half of
            the source's own shuffle for that epoch, so another half each epoch). Without weights, the epoch is each source's ``repeat`` passes and
            the proportions follow from them; with weights, ``repeat`` scales what
            ``stop=`` calls one pass of this source. None: 1.0.
        columns: columns to read from this source (its own names), None: all.
        rename: ``{name in this source: name in the mixture's output}``, applied after
            ``columns`` and before ``transforms`` (a ``rename`` transform op).
        filter: a ``pyarrow.compute`` expression on this source's columns.
        transforms: this source's transform ops (docs/transforms.md), after the renames.
        name: how errors and ``stats()`` call it; None: the path (a table's URI or
            identifier).
        storage_options, index: as ``stoker.Loader`` takes them, for this source.
    """

    def __init__(self, path: str | os.PathLike | Sequence[str | os.PathLike], *,
                 weight: float | None = None, repeat: float | None = None,
                 columns: Sequence[str] | None = None, rename: Mapping[str, str] | None = None,
                 filter: pc.Expression | None = None,
                 transforms: Sequence[dict[str, Any]] | None = None, name: str | None = None,
                 storage_options: dict[str, Any] | None = None,
                 index: str | None = None) -> None:
        self.path = path
        self.name = name if name is not None else _path_name(path)
        self.weight = _positive(weight, "weight", self.name)
        self.repeat = _positive(repeat, "repeat", self.name)
        self.columns = None if columns is None else list(columns)
        self.rename = dict(rename or {})
        for old, new in self.rename.items():
            if not isinstance(old, str) or not isinstance(new, str) or not new:
                raise TypeError(f"source {self.name!r}: rename maps column names to new "
                                f"names, got {old!r}: {new!r}")
        self.filter = filter
        self.transforms = list(transforms or [])
        self.storage_options = storage_options
        self.index = index

    def transform_spec(self) -> list[dict[str, Any]]:
        """The renames as rename ops, then the source's own transforms."""
        renames = [{"op": "rename", "column": old, "to": new} for old, new in self.rename.items()]
        return renames + self.transforms

    def __repr__(self) -> str:
        return f"stoker.Source({self.name!r}, weight={self.weight}, repeat={self.repeat})"


class Mixture:
    """Several sources read as one dataset: every position of an epoch is filled by one
    source, chosen as a pure function of (seed, epoch, position) (docs/mixtures.md).

    Args:
        sources: the ``stoker.Source`` s, in the order ``stats()`` and the batches list them.
        epoch_rows: with weights: rows of an epoch, each source filling its weight's share
            (a source with fewer rows goes on into its next own epoch: upsampled; one with
            more gives the first rows of a fresh own epoch: downsampled, another part each
            epoch). Not with ``stop``.
        stop: with weights, how the epoch's size follows from the sources' passes (a pass:
            ``repeat`` times the source's rows): "first" (None: the default) ends it when the
            first source's pass is used up, so no row repeats within an epoch; "all" when the
            last one's is, the others going on into their next pass (oversampling).
        stratified: every batch holds each source's share of ``batch_size`` (largest
            remainder, ties broken by the seed), the same count in every batch; the epoch is
            then whole batches. False: sources are interleaved at random, and each epoch
            holds each source's share exactly (within one row).
    """

    def __init__(self, sources: Sequence[Source], *, epoch_rows: int | None = None,
                 stop: str | None = None, stratified: bool = False) -> None:
        self.sources = list(sources)
        if not self.sources:
            raise ValueError("Mixture needs at least one stoker.Source")
        for i, source in enumerate(self.sources):
            if not isinstance(source, Source):
                raise TypeError(f"Mixture sources must be stoker.Source, got {source!r} at {i}")
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"Mixture source names must differ (give name=): {names}")
        weighted = [s.weight is not None for s in self.sources]
        if any(weighted) and not all(weighted):
            missing = [s.name for s in self.sources if s.weight is None]
            raise ValueError(f"give every Mixture source a weight or none; no weight: "
                             f"{missing}")
        self.weighted = all(weighted)
        if epoch_rows is not None:
            if isinstance(epoch_rows, bool) or not isinstance(epoch_rows, int) \
                    or epoch_rows < 1:
                raise ValueError(f"Mixture epoch_rows must be an int >= 1, got {epoch_rows!r}")
            if not self.weighted:
                raise ValueError("Mixture epoch_rows needs a weight on every source (without "
                                 "weights an epoch is each source's repeat passes)")
            if stop is not None:
                raise ValueError("give Mixture epoch_rows or stop, not both")
        if stop is not None and stop not in STOPS:
            raise ValueError(f"Mixture stop must be one of {STOPS}, got {stop!r}")
        if stop is not None and not self.weighted:
            raise ValueError("Mixture stop needs a weight on every source")
        self.epoch_rows, self.stop, self.stratified = epoch_rows, stop, bool(stratified)

    def source_rows(self, passes: list[int], batch_size: int, seed: int) -> list[int]:
        """Rows each source fills per epoch, given the rows of one pass of each (``repeat``
        times its rows, rounded): the epoch-size policy. Errors name the source."""
        # Weighted: no source's weight is None.
        weights = cast("list[float]", [s.weight for s in self.sources] if self.weighted else passes)
        if self.stratified:
            share = _core.apportion(batch_size, weights, seed)
            for source, rows in zip(self.sources, share):
                if rows == 0:
                    raise ValueError(
                        f"stratified Mixture: source {source.name!r}'s share of a batch of "
                        f"{batch_size} rows rounds to 0 (weight {source.weight}); raise its "
                        f"weight or batch_size")
            batches = self._stratified_batches(passes, share, batch_size)
            if batches < 1:
                raise ValueError(f"stratified Mixture: an epoch would hold no whole batch of "
                                 f"{batch_size} rows")
            return [rows * batches for rows in share]
        total = self._epoch_rows(passes, weights)
        rows = _core.apportion(total, weights, seed)
        # Rounding may give a source one row more (or less) than its pass: step the epoch
        # size until the stop policy holds (a step per source at most).
        while self.stop != "all" and self.weighted and self.epoch_rows is None \
                and any(r > p for r, p in zip(rows, passes)):
            total -= 1
            rows = _core.apportion(total, weights, seed)
        while self.stop == "all" and any(r < p for r, p in zip(rows, passes)):
            total += 1
            rows = _core.apportion(total, weights, seed)
        for source, count in zip(self.sources, rows):
            if count == 0:
                raise ValueError(f"Mixture source {source.name!r} gets no row of an epoch of "
                                 f"{total} rows at weight {source.weight}: raise its weight "
                                 f"or epoch_rows")
        return rows

    def _epoch_rows(self, passes: list[int], weights: list[float]) -> int:
        if not self.weighted:
            return sum(passes)
        if self.epoch_rows is not None:
            return self.epoch_rows
        total_weight = math.fsum(weights)
        shares = [w / total_weight for w in weights]
        if (self.stop or "first") == "first":
            return min(math.floor(p / w) for p, w in zip(passes, shares))
        return max(math.ceil(p / w) for p, w in zip(passes, shares))

    def _stratified_batches(self, passes: list[int], share: list[int], batch_size: int) -> int:
        if not self.weighted:
            return sum(passes) // batch_size
        if self.epoch_rows is not None:
            return self.epoch_rows // batch_size
        if (self.stop or "first") == "first":
            return min(p // c for p, c in zip(passes, share))
        return max(-(-p // c) for p, c in zip(passes, share))

    def resolved(self, storage_options: dict[str, Any] | None) -> Mixture:
        """This mixture with each table source resolved to its snapshot now (what a fleet's
        servers are given, so all read the same files and no catalog travels)."""
        out = copy.copy(self)
        out.sources = []
        for source in self.sources:
            source = copy.copy(source)
            source.path = _tables.resolved(source.path, source.storage_options
                                           if source.storage_options is not None
                                           else storage_options)
            out.sources.append(source)
        return out

    def __repr__(self) -> str:
        return (f"stoker.Mixture({self.sources!r}, epoch_rows={self.epoch_rows}, "
                f"stop={self.stop!r}, stratified={self.stratified})")


_SPEC_KEYS = {"sources", "epoch_rows", "stop", "stratified"}
_SOURCE_KEYS = {"path", "weight", "repeat", "columns", "rename", "transforms", "name",
                "storage_options", "index"}


def from_spec(spec: Any, *, where: str = "mixture spec") -> Mixture:
    """A Mixture from its JSON form (what ``stoker serve --mixture FILE`` reads):
    ``{"sources": [{"path": ..., "weight": ..., ...}, ...], "stop": ..., "epoch_rows": ...,
    "stratified": ...}``, each source's keys ``stoker.Source``'s arguments. A ``filter`` has
    no JSON form (build the Mixture in Python); unknown keys are errors naming them."""
    if not isinstance(spec, dict) or not isinstance(spec.get("sources"), list):
        # ValueError: the file holds the wrong value (its type is JSON's, not the caller's).
        raise ValueError(f"{where}: a JSON object with a list of \"sources\" is expected")  # noqa: TRY004
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; it takes {sorted(_SPEC_KEYS)}")
    sources = []
    for i, item in enumerate(spec["sources"]):
        if not isinstance(item, dict) or "path" not in item:
            raise ValueError(f"{where}: source {i} must be an object with a \"path\"")
        unknown = sorted(set(item) - _SOURCE_KEYS)
        if "filter" in unknown:
            raise ValueError(f"{where}: source {i}: a filter has no JSON form; build the "
                             f"stoker.Mixture in Python (stoker.ray.Fleet.start serves it)")
        if unknown:
            raise ValueError(f"{where}: source {i}: unknown key(s) {unknown}; a source takes "
                             f"{sorted(_SOURCE_KEYS)}")
        path = item["path"]
        sources.append(Source(path, **{k: v for k, v in item.items() if k != "path"}))
    return Mixture(sources, epoch_rows=spec.get("epoch_rows"), stop=spec.get("stop"),
                   stratified=bool(spec.get("stratified", False)))


def _positive(value: float | None, option: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"source {name!r}: {option} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"source {name!r}: {option} must be finite and > 0, got {value!r}")
    return float(value)


def _path_name(path: Any) -> str:
    if isinstance(path, _tables.Table):
        return path.label
    if isinstance(path, (str, os.PathLike)):
        return os.fspath(path)
    return ",".join(os.fspath(p) for p in path)
