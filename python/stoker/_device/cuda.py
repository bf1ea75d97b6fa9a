"""device="cuda": batches copied to the GPU ahead of the consumer. The engine assembles each
batch in pinned host memory (LoaderOptions::pinned_output); here each column is copied to the
device on a side stream, a few batches ahead, and the consumer's stream waits on the copy's
event before it uses the batch — no pageable copy, no synchronisation of the whole device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stoker._device.queue import DeviceQueue


def check_device(device: str | None, output: str) -> Any:
    """The torch.device for `device` (None: none); errors name what is missing."""
    if device is None:
        return None
    if output not in ("torch", "torchrec"):
        raise ValueError(f'device="{device}" places torch or JAX batches: set output="torch" '
                         f'or output="jax" (or "torchrec"; got output="{output}")')
    import torch
    target = torch.device(device)
    if target.type != "cuda":
        raise ValueError(f'device must be "cuda" or "cuda:N" (or None for host memory), '
                         f'got "{device}"')
    if not torch.cuda.is_available():
        raise RuntimeError(f'device="{device}": torch sees no CUDA device '
                           f"(torch.cuda.is_available() is False; torch {torch.__version__})")
    # Before the engine's first pinned block: torch initialises CUDA lazily, and until it has,
    # Tensor.is_pinned() is False for every pointer (at::Context::isPinnedPtr asks nothing of
    # the runtime before the lazy init), so torch would take the engine's page-locked batches
    # for pageable memory. Initialising it here also loads torch's libcudart, the runtime the
    # engine's pinned pool then finds already loaded and uses (src/assemble/pinned_pool.cc).
    torch.cuda.init()
    return target


class DeviceStage:
    """Keeps up to `depth` batches in flight to `device` (queue.py): each copied on a side
    stream, handed out with its event waited on by the current stream."""

    def __init__(self, source: Callable[[], tuple[int, Any] | None], device: Any,
                 depth: int) -> None:
        import torch
        self._torch = torch
        self._device = device
        self._stream = torch.cuda.Stream(device=device)
        self._queue = DeviceQueue(source, depth, self._start_copy, self._hand_out)

    def pull(self) -> tuple[int, Any] | None:
        return self._queue.pull()

    def _hand_out(self, entry: tuple[int, Any, Any, Any]) -> tuple[int, Any]:
        rows, host, on_device, event = entry
        # The pinned buffers go back to the engine's pool (and into a later batch) once `host`
        # is dropped, and torch does not guard memory it did not allocate: wait for this
        # batch's copy first. Started `depth` batches ago, it has normally long finished.
        event.synchronize()
        del host
        consumer = self._torch.cuda.current_stream(self._device)
        consumer.wait_event(event)
        # The allocator keeps the device memory until the consumer is done with it.
        if isinstance(on_device, dict):
            for tensor in on_device.values():
                tensor.record_stream(consumer)
        else:  # a TorchRec Batch (Pipelineable)
            on_device.record_stream(consumer)
        return rows, on_device

    def _start_copy(self, rows: int, host: Any) -> tuple[int, Any, Any, Any]:
        with self._torch.cuda.stream(self._stream):
            if isinstance(host, dict):
                on_device = {name: t.to(self._device, non_blocking=True)
                             for name, t in host.items()}
            else:  # a TorchRec Batch: its own to() moves its tensors and its KJT's
                on_device = host.to(self._device, non_blocking=True)
            event = self._torch.cuda.Event()
            event.record(self._stream)
        return rows, host, on_device, event
