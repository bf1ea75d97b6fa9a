"""Petastorm's row-group index: the indexers its ``build_rowgroup_index`` pickles in
``_common_metadata`` (_metadata.py loads them, through the restricted unpickler, into the
definitions here), and the row groups a ``rowgroup_selector`` picks from them. A row group
is numbered as Petastorm numbers its pieces: files in sorted path order, each file's row
groups in order."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any


class SingleFieldIndexer:
    """The row groups holding each value of one field (Petastorm's SingleFieldIndexer; the
    attributes are its pickle's state)."""

    def __init__(self, index_name: str, index_field: str) -> None:
        self._index_name = index_name
        self._column_name = index_field
        self._index_data: defaultdict[Any, set[int]] = defaultdict(set)

    @property
    def index_name(self) -> str:
        return self._index_name

    @property
    def column_names(self) -> list[str]:
        return [self._column_name]

    @property
    def indexed_values(self) -> list[Any]:
        return list(self._index_data)

    def get_row_group_indexes(self, value_key: Any) -> set[int]:
        return set(self._index_data.get(value_key, ()))


class FieldNotNullIndexer:
    """The row groups where one field is not always null (Petastorm's FieldNotNullIndexer)."""

    def __init__(self, index_name: str, index_field: str) -> None:
        self._index_name = index_name
        self._column_name = index_field
        self._index_data: set[int] = set()

    @property
    def index_name(self) -> str:
        return self._index_name

    @property
    def column_names(self) -> list[str]:
        return [self._column_name]

    @property
    def indexed_values(self) -> list[str]:
        return ["Field is Not Null"]

    def get_row_group_indexes(self, value_key: Any = None) -> set[int]:
        return set(self._index_data)


def selected_row_groups(selector: Any, load_index: Callable[[], dict[str, Any]]) -> set[int]:
    """The row groups (Petastorm's piece numbers) ``selector`` picks from the index
    ``load_index`` returns; ValueError, as Petastorm raises, for anything but a selector (before
    the index is read) or a selector needing an index the dataset lacks."""
    if not (hasattr(selector, "get_index_names") and hasattr(selector, "select_row_groups")):
        raise ValueError(
            f"rowgroup_selector must be a row-group selector (get_index_names() and "
            f"select_row_groups(), as stoker.petastorm.selectors' have), got {selector!r}")
    index = load_index()
    required = list(selector.get_index_names())
    if not set(required) <= set(index):
        raise ValueError(f"Some of required indexes {required} are not available in "
                         f"{list(index)}")
    return {int(i) for i in selector.select_row_groups(index)}
