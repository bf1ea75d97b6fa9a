"""The bounded queue of batches in flight to a device, which both device stages share: each
``pull()`` starts the transfers of the next batches from the source until ``depth`` are in
flight, and hands out the oldest. Device memory is bounded by ``depth`` batches (plus the one
the consumer holds)."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any


class DeviceQueue:
    """Up to ``depth`` batches of ``source`` (which returns (planned rows, batch), or None at
    the end) in flight: ``start`` begins one batch's transfer and returns what ``finish`` needs
    to hand the batch out once it is the oldest."""

    def __init__(self, source: Callable[[], tuple[int, Any] | None], depth: int,
                 start: Callable[[int, Any], Any],
                 finish: Callable[[Any], tuple[int, Any]]) -> None:
        self._source, self._depth = source, max(1, depth)
        self._start, self._finish = start, finish
        self._in_flight: collections.deque = collections.deque()  # bound: depth batches
        self._ended = False

    def pull(self) -> tuple[int, Any] | None:
        while not self._ended and len(self._in_flight) < self._depth:
            item = self._source()
            if item is None:
                self._ended = True
            else:
                self._in_flight.append(self._start(*item))
        return self._finish(self._in_flight.popleft()) if self._in_flight else None
