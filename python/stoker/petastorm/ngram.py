"""Petastorm's NGram: windows of consecutive rows of one row group, passed to make_reader as
``schema_fields=NGram(...)`` (``from petastorm.ngram import NGram`` becomes
``from stoker.petastorm.ngram import NGram``). The reader takes Petastorm's own NGram objects
as well: it calls only the methods both define."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Sequence
from typing import Any

from stoker.petastorm._unischema import Unischema, UnischemaField, match_unischema_fields

__all__ = ["NGram"]


class NGram:
    """Windows of ``length`` consecutive rows within one row group, as Petastorm 0.13.1 forms
    them: ``fields`` maps each timestep (integers; gaps allowed, the window spans
    ``min..max``) to the fields (UnischemaFields or regular expressions) delivered at it;
    consecutive rows of a window differ by at most ``delta_threshold`` in ``timestamp_field``
    (inclusive); with ``timestamp_overlap=False`` a window starts after the previous one's
    last timestamp. Each window is a dict ``{timestep: namedtuple of that step's fields}``.
    Windows never span two row groups, and rows must be stored sorted by the timestamp
    (NotImplementedError otherwise)."""

    def __init__(self, fields: dict[int, list[Any]], delta_threshold: Any,
                 timestamp_field: Any, timestamp_overlap: bool = True) -> None:
        _validate(fields, delta_threshold, timestamp_field, timestamp_overlap)
        self._fields = fields
        self._delta_threshold = delta_threshold
        # The name Petastorm gives it (its tests read it after the reader resolved it).
        self._timestamp_field = timestamp_field
        self.timestamp_overlap = timestamp_overlap

    @property
    def length(self) -> int:
        """Rows in a window."""
        return max(self._fields) - min(self._fields) + 1

    @property
    def fields(self) -> dict[int, list[Any]]:
        return self._fields

    @property
    def delta_threshold(self) -> Any:
        return self._delta_threshold

    @property
    def timestamp_field(self) -> Any:
        return self._timestamp_field

    def resolve_regex_field_names(self, schema: Unischema) -> None:
        """Replaces the regular expressions in ``fields`` and ``timestamp_field`` by the
        schema's fields they match (the reader calls it)."""
        self._fields = {step: _resolve(schema, names) for step, names in self._fields.items()}
        timestamp = _resolve(schema, [self._timestamp_field])
        if len(timestamp) != 1:
            raise ValueError(f"timestamp_field {self._timestamp_field!r} matches "
                             f"{len(timestamp)} fields of the schema; it must match one")
        self._timestamp_field = timestamp[0]

    def get_field_names_at_timestep(self, timestep: int) -> list[str]:
        return [field.name for field in self._fields.get(timestep, [])]

    def get_field_names_at_all_timesteps(self) -> list[Any]:
        """The fields delivered at any timestep (Petastorm's name: it returns fields)."""
        return list({field for fields in self._fields.values() for field in fields})

    def get_schema_at_timestep(self, schema: Unischema, timestep: int) -> Unischema:
        """The fields delivered at ``timestep``, in schema order."""
        names = set(self.get_field_names_at_timestep(timestep))
        return schema.create_schema_view([f for f in schema.fields.values() if f.name in names])

    def form_ngram(self, data: Sequence[dict[str, Any]],
                   schema: Unischema) -> list[dict[int, dict[str, Any]]]:
        """The windows of ``data`` (the rows of one row group, as dicts, in stored order), each
        a dict ``{timestep: {field name: value}}``."""
        name = self._timestamp_field.name
        stamps = [row[name] for row in data]
        if any(a > b for a, b in itertools.pairwise(stamps)):
            raise NotImplementedError(f"NGram needs the rows of each row group stored sorted by "
                                      f"its timestamp field '{name}', which they are not")
        first = min(self._fields)
        names = {step: set(self.get_field_names_at_timestep(step))
                 for step in range(first, first + self.length)}
        windows = []
        last_end = None  # the last timestamp of the previous window (timestamp_overlap=False)
        for start in range(len(data) - self.length + 1):
            end = start + self.length - 1
            if last_end is not None and stamps[start] <= last_end:
                continue
            if any(stamps[i + 1] - stamps[i] > self._delta_threshold for i in range(start, end)):
                continue
            windows.append({first + k: {f: v for f, v in data[start + k].items()
                                        if f in names[first + k]}
                            for k in range(self.length)})
            if not self.timestamp_overlap:
                last_end = stamps[end]
        return windows

    def make_namedtuple(self, schema: Unischema,
                        ngram_as_dicts: dict[int, dict[str, Any]]) -> dict[int, Any]:
        """A window with each step's dict made a namedtuple of that step's fields."""
        return {step: self.get_schema_at_timestep(schema, step).make_namedtuple(**values)
                for step, values in ngram_as_dicts.items()}

    def __eq__(self, other: object) -> bool:
        other_fields = getattr(other, "fields", None)
        if not isinstance(other_fields, dict) or set(self._fields) != set(other_fields):
            return False
        return all(set(self._fields[k]) == set(other_fields[k]) for k in self._fields)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by its fields


def _validate(fields: Any, delta_threshold: Any, timestamp_field: Any,
              timestamp_overlap: Any) -> None:
    """Petastorm's checks, with its ValueErrors (where a TypeError would be usual: scripts
    catch Petastorm's)."""
    if not isinstance(fields, dict) or not fields:
        raise ValueError(
            "NGram fields must be a non-empty dict of timestep to a list of fields")
    for step, step_fields in fields.items():
        if not isinstance(step_fields, list):
            raise ValueError(  # noqa: TRY004
                f"NGram fields[{step!r}] must be a list of UnischemaFields or regular "
                f"expressions, got {step_fields!r}")
        for field in step_fields:
            if not isinstance(field, (UnischemaField, tuple, str)):
                raise ValueError(  # noqa: TRY004
                    f"NGram fields[{step!r}] holds {field!r}: each must be a UnischemaField "
                    f"or a regular expression")
    if not isinstance(delta_threshold, numbers.Number) or isinstance(delta_threshold, bool):
        raise ValueError(  # noqa: TRY004
            f"delta_threshold must be a number, got {delta_threshold!r}")
    if not isinstance(timestamp_field, (UnischemaField, tuple, str)):
        raise ValueError(  # noqa: TRY004
            f"timestamp_field must be a UnischemaField or a regular expression, got "
            f"{timestamp_field!r}")
    if not isinstance(timestamp_overlap, bool):
        raise ValueError(  # noqa: TRY004
            f"timestamp_overlap must be a bool, got {timestamp_overlap!r}")


def _resolve(schema: Unischema, fields: list[Any]) -> list[Any]:
    """UnischemaFields kept, regular expressions replaced by the fields they fully match."""
    patterns = [f for f in fields if isinstance(f, str)]
    return [f for f in fields if not isinstance(f, str)] + [
        f for f in match_unischema_fields(schema, patterns) if f not in fields]
