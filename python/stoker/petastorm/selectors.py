"""Petastorm's row-group selectors, for make_reader's ``rowgroup_selector``
(``from petastorm.selectors import ...`` becomes ``from stoker.petastorm.selectors import
...``): each picks row groups from the index Petastorm's ``build_rowgroup_index`` stored in the
dataset. Petastorm's own selector objects are taken as well."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["IntersectIndexSelector", "RowGroupSelectorBase", "SingleIndexSelector",
           "UnionIndexSelector"]


class RowGroupSelectorBase:
    """What a selector has: the indexes it reads, and the row groups it picks from them."""

    def get_index_names(self) -> list[str]:
        raise NotImplementedError

    def select_row_groups(self, index_dict: dict[str, Any]) -> set[int]:
        raise NotImplementedError


class SingleIndexSelector(RowGroupSelectorBase):
    """The row groups holding any of ``values_list`` in the index ``index_name``."""

    def __init__(self, index_name: str, values_list: Sequence[Any]) -> None:
        self._index_name = index_name
        self._values_to_select = list(values_list)

    def get_index_names(self) -> list[str]:
        return [self._index_name]

    def select_row_groups(self, index_dict: dict[str, Any]) -> set[int]:
        indexer = index_dict[self._index_name]
        return set().union(*(indexer.get_row_group_indexes(v) for v in self._values_to_select))


class IntersectIndexSelector(RowGroupSelectorBase):
    """The row groups every one of ``single_index_selectors`` picks."""

    def __init__(self, single_index_selectors: Sequence[SingleIndexSelector]) -> None:
        self._selectors = list(single_index_selectors)

    def get_index_names(self) -> list[str]:
        return [name for s in self._selectors for name in s.get_index_names()]

    def select_row_groups(self, index_dict: dict[str, Any]) -> set[int]:
        return set.intersection(*(s.select_row_groups(index_dict) for s in self._selectors))


class UnionIndexSelector(RowGroupSelectorBase):
    """The row groups any of ``single_index_selectors`` picks."""

    def __init__(self, single_index_selectors: Sequence[SingleIndexSelector]) -> None:
        self._selectors = list(single_index_selectors)

    def get_index_names(self) -> list[str]:
        return [name for s in self._selectors for name in s.get_index_names()]

    def select_row_groups(self, index_dict: dict[str, Any]) -> set[int]:
        return set().union(*(s.select_row_groups(index_dict) for s in self._selectors))
