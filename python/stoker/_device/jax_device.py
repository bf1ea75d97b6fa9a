"""output="jax": where batches are placed. On JAX's default device unless ``device=`` names
another ("cpu", "gpu", "tpu", "cuda:1", …). A batch bound for the host's CPU is handed over as
the engine built it (through DLPack, no copy); one bound for an accelerator is put there with
``jax.device_put`` — asynchronous, so the copy overlaps the consumer's step — ``depth``
batches ahead of the consumer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stoker._device.queue import DeviceQueue


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
    """Keeps up to ``depth`` batches in flight to ``device`` (queue.py): each is put there with
    ``jax.device_put``, handed out as it is."""

    def __init__(self, source: Callable[[], tuple[int, Any] | None], device: Any,
                 depth: int) -> None:
        import jax

        def start(rows: int, host: Any) -> tuple[int, Any]:
            return rows, jax.device_put(host, device)

        self._queue = DeviceQueue(source, depth, start, lambda entry: entry)

    def pull(self) -> tuple[int, Any] | None:
        return self._queue.pull()
