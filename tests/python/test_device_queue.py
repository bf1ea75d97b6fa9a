"""The bounded queue both device stages (CUDA, JAX) keep their batches in flight in: every
batch once, in order, never more than `depth` started ahead of the consumer."""

from __future__ import annotations

import pytest
from stoker._device.queue import DeviceQueue


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_every_batch_once_in_order_at_most_depth_ahead(depth: int) -> None:
    batches = iter([(10 + i, f"batch-{i}") for i in range(7)])
    started: list[str] = []
    handed: list[str] = []

    def start(rows: int, host: str) -> tuple[int, str]:
        started.append(host)
        return rows, host.upper()

    def finish(entry: tuple[int, str]) -> tuple[int, str]:
        handed.append(entry[1])
        return entry

    queue = DeviceQueue(lambda: next(batches, None), depth, start, finish)
    out = []
    while (item := queue.pull()) is not None:
        out.append(item)
        assert len(started) - len(handed) <= depth  # in flight beyond the consumer's
    assert out == [(10 + i, f"BATCH-{i}") for i in range(7)]
    assert started == [f"batch-{i}" for i in range(7)]
    assert queue.pull() is None  # stays ended


def test_a_depth_below_one_still_moves_one_batch_at_a_time() -> None:
    batches = iter([(1, "a"), (1, "b")])
    queue = DeviceQueue(lambda: next(batches, None), 0, lambda r, h: (r, h), lambda e: e)
    assert [queue.pull(), queue.pull(), queue.pull()] == [(1, "a"), (1, "b"), None]
