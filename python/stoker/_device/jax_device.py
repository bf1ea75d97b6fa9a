"""output="jax": where batches are placed. On JAX's default device unless ``device=`` names
another ("cpu", "gpu", "tpu", "cuda:1", …). A batch bound for the host's CPU is handed over as
the engine built it (through DLPack, no copy); one bound for an accelerator is put there with
``jax.device_put`` — asynchronous, so the copy overlaps the consumer's step — ``depth``
batches ahead of the consumer."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any


def target(device: str | None) -> Any | None:
    """The jax.Device batches go to, or None for the host's CPU (no transfer). ``device``:
    None for JAX's default device, a platform ("cpu", "gpu", "cuda", "rocm", "tpu") for its
    first device, or "<platform>:<index>"."""
    import jax

    if device is None:
        chosen = jax.devices()[0]
    else:
        platform, _, index = device.partition(":")
        try:
            devices = jax.devices(platform)
        except RuntimeError as error:
            raise ValueError(f'device="{device}": JAX sees no {platform} device ({error})') \
                from None
        if index and not (index.isdigit() and int(index) < len(devices)):
            raise ValueError(f'device="{device}": JAX has {len(devices)} {platform} device(s)')
        chosen = devices[int(index) if index else 0]
    return None if chosen.platform == "cpu" else chosen


class DeviceStage:
    """Keeps up to ``depth`` batches in flight to ``device``: each ``pull()`` dispatches the
    copies of the next batches from ``source`` and hands out the oldest. Device memory is
    bounded by ``depth`` batches (plus the one the consumer holds)."""

    def __init__(self, source: Callable[[], tuple[int, Any] | None], device: Any,
                 depth: int) -> None:
        import jax

        self._put = jax.device_put
        self._source, self._device, self._depth = source, device, max(1, depth)
        self._in_flight: collections.deque = collections.deque()  # bound: depth batches
        self._ended = False

    def pull(self) -> tuple[int, Any] | None:
        while not self._ended and len(self._in_flight) < self._depth:
            item = self._source()
            if item is None:
                self._ended = True
            else:
                rows, host = item
                self._in_flight.append((rows, self._put(host, self._device)))
        return self._in_flight.popleft() if self._in_flight else None
