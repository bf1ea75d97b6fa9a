"""The shuffling queue of Petastorm's torch loaders (``shuffling_queue_capacity``): rows wait in
a buffer and leave it in random order, drawn from a seeded generator so that the order is
reproducible (Petastorm's draws from the global random state)."""

from __future__ import annotations

from typing import Any

import numpy as np


class ShufflingBuffer:
    """Petastorm's RandomShufflingBuffer with ``min_after_retrieve = capacity - 1``: once more
    than ``capacity - 1`` rows are held, each retrieval takes one of them uniformly at random;
    after ``finish()`` the rest leave in random order too. Its size is bounded by the rows added
    between retrievals (one reader item) plus ``capacity``."""

    def __init__(self, capacity: int, seed: Any) -> None:
        if capacity < 1:
            raise ValueError(f"shuffling_queue_capacity must be >= 1 to shuffle, got {capacity}")
        self._keep = capacity - 1  # rows kept back until finish(), to mix with later rows
        self._items: list[Any] = []
        self._finished = False
        self._random = np.random.default_rng(seed)

    def add_many(self, items: list[Any]) -> None:
        self._items.extend(items)

    def finish(self) -> None:
        self._finished = True

    def can_retrieve(self) -> bool:
        return len(self._items) > (0 if self._finished else self._keep)

    def retrieve(self) -> Any:
        """One held row, chosen uniformly; the last row takes its place (O(1))."""
        i = int(self._random.integers(len(self._items)))
        self._items[i], self._items[-1] = self._items[-1], self._items[i]
        return self._items.pop()
