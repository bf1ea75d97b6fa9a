"""One epoch of an engine read from Python, what every loader over the engine shares (the
Loader, a MixtureLoader, a RemoteLoader's local share): batches taken from the engine and
counted in planned rows, the batch_transform thread, the device stage, and the epochs closed at
interpreter exit."""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pyarrow as pa

# Imported for its exit hook: pyarrow.fs registers Arrow's S3 finalization with atexit. The
# engine's S3 clients live in the same libarrow, and a process that read s3:// without it
# could crash at exit (AWS SDK teardown after its clients). Imported before the hook below,
# so live epochs are closed first (atexit runs last-registered first).
import pyarrow.fs

from stoker._device import cuda as _cuda
from stoker._device import jax_device as _jax_device
from stoker._loading import cursor as _cursor
from stoker._options import frameworks as _frameworks

# Batches the batch_transform thread keeps ready when prefetch is None.
TRANSFORMED_AHEAD = 2

# Epochs still running; closed at interpreter exit so no worker outlives the interpreter.
_live_epochs: weakref.WeakSet[EpochIterator] = weakref.WeakSet()


@atexit.register
def _close_live_epochs() -> None:
    for epoch in list(_live_epochs):
        epoch.close()


class _CapsuleBatch:
    """Hands Arrow C data interface (schema, array) capsules to pyarrow."""

    def __init__(self, capsules: tuple[Any, Any]) -> None:
        self._capsules = capsules

    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]:
        return self._capsules


class WaitClock:
    """The consumer's wall seconds waiting for batches, summed over epochs, where the engine
    does not count them itself (a MixtureLoader's reader)."""

    def __init__(self) -> None:
        self.seconds = 0.0


class EngineReader:
    """Takes one epoch's batches from the engine, counting the planned rows each stands for
    (what the state counts: the batch's rows plus those of units skipped under
    on_error="skip")."""

    def __init__(self, epoch: Any, output: str,
                 on_short: Callable[[], None] | None = None, torchrec: Any = None) -> None:
        self.epoch, self.output = epoch, output
        # output="torchrec": the stoker.torchrec.Maker of its batches from the engine's parts.
        self.torchrec = torchrec
        if torchrec is not None:
            epoch.use_kjt(torchrec.spec)
        self.planned = 0  # planned rows of the batches taken from the engine so far
        # Called when a batch holds fewer rows than planned (a unit was skipped).
        self.on_short = on_short

    def next(self, stop: threading.Event | None = None) -> tuple[int, Any] | None:
        """The next batch as (planned rows, batch); None at the end (or once `stop` is set)."""
        while not self.epoch.wait_ready():  # the GIL is free while it waits; Ctrl-C between
            if stop is not None and stop.is_set():
                return None
        batch = self.epoch.next()
        if batch is None:
            return None
        planned = self.epoch.planned_rows()
        rows, self.planned = planned - self.planned, planned
        if self.output == "arrow":
            batch = pa.record_batch(_CapsuleBatch(batch))
        elif self.torchrec is not None:
            batch = self.torchrec(batch)
        if self.on_short is not None and num_rows(batch) < rows:
            self.on_short()
        return rows, batch


def num_rows(batch: Any) -> int:
    """Rows of an engine batch: a RecordBatch, or a dict of arrays with rows first."""
    if isinstance(batch, pa.RecordBatch):
        return batch.num_rows
    if not isinstance(batch, dict):  # a TorchRec Batch
        return batch.sparse_features.stride()
    return len(next(iter(batch.values())))


class TransformPump:
    """The batch_transform thread's work: engine batches, transformed, into a bounded queue.
    It holds no reference to the iterator, so an abandoned iterator is collected (and closes
    the epoch) even while this thread waits on a full queue."""

    def __init__(self, reader: EngineReader, transform: Callable[[Any], Any],
                 prefetch: int) -> None:
        self.reader, self.transform = reader, transform
        self.queue: queue.Queue = queue.Queue(maxsize=prefetch)  # bound: prefetch batches
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                item = self.reader.next(self.stop)
                if item is not None:
                    item = (item[0], self.transform(item[1]))
                if not self._put(("ok", item)) or item is None:
                    return
        except BaseException as error:  # noqa: BLE001 (handed to the consumer, raised there)
            self._put(("error", error))

    def _put(self, entry: tuple[str, Any]) -> bool:
        """Queues `entry` unless stopped first; True if queued."""
        while not self.stop.is_set():
            try:
                self.queue.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


class EpochIterator(_cursor.EpochIterator):
    """Iterates one epoch of the engine; closing it (or dropping it) stops the workers.

    With a batch_transform, a background thread pulls batches from the engine and applies
    it, at most `prefetch` batches ahead, so the training thread only dequeues.

    After a fork, an epoch started in the parent cannot be read in the child (its threads
    are the parent's): reading it raises RuntimeError; closing it there frees nothing of the
    parent's."""

    def __init__(self, epoch: Any, output: str, progress: _cursor.Progress,
                 batch_transform: Callable[[Any], Any] | None, prefetch: int,
                 on_close: Callable[[], None] | None = None, device: Any = None,
                 device_prefetch: int = 2, on_short: Callable[[], None] | None = None,
                 torchrec: Any = None, clock: WaitClock | None = None) -> None:
        super().__init__(progress, epoch.num_batches())
        self._epoch = epoch
        self._clock = clock
        self._on_close = on_close
        self._reader = EngineReader(epoch, output, on_short, torchrec)
        self._pid = os.getpid()
        self._pump: TransformPump | None = None
        if batch_transform is not None:
            self._pump = TransformPump(self._reader, batch_transform, prefetch)
            self._thread = threading.Thread(target=self._pump.run,
                                            name="stoker-batch-transform", daemon=True)
            self._thread.start()
        self._device_stage: Any = None
        # Copies to the device ahead of the consumer, counted when taken.
        if device is not None and output == "jax":
            self._device_stage = _jax_device.DeviceStage(self._host_pull, device,
                                                         device_prefetch)
        elif device is not None:
            self._device_stage = _cuda.DeviceStage(self._host_pull, device, device_prefetch)
        _live_epochs.add(self)

    def _pull(self) -> tuple[int, Any] | None:
        if os.getpid() != self._pid:
            raise RuntimeError(
                f"this epoch was started in process {self._pid} and read after a fork in "
                f"process {os.getpid()}: its worker threads exist only in the parent. Start a "
                f"new iter(loader) in the child (or create the Loader there)")
        if self._clock is None:
            return self._next_item()
        started = time.perf_counter()
        try:
            return self._next_item()
        finally:
            self._clock.seconds += time.perf_counter() - started

    def _next_item(self) -> tuple[int, Any] | None:
        if self._device_stage is not None:
            return self._device_stage.pull()
        return self._host_pull()

    def _host_pull(self) -> tuple[int, Any] | None:
        if self._pump is None:
            return self._reader.next()
        kind, item = self._pump.queue.get()
        if kind == "error":
            self.close()
            raise item
        return item

    def _release(self) -> None:
        self._device_stage = None  # the batches in flight to the device
        epoch, self._epoch = self._epoch, None
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.stop.set()
            if self._thread is not threading.current_thread():
                while self._thread.is_alive():  # unblock a full queue, then let it see stop
                    try:
                        pump.queue.get(timeout=0.05)
                    except queue.Empty:
                        pass
        if epoch is not None:
            epoch.close()
            if self._on_close is not None and os.getpid() == self._pid:
                self._on_close()

    def __del__(self) -> None:
        self.close()


class EngineLoader(_cursor.EpochLoader):
    """What the loaders over the engine (Loader, MixtureLoader) show alike: the schema and the
    output kind of their batches."""

    _schema: pa.Schema
    _output: str

    @property
    def schema(self) -> pa.Schema:
        """The columns of every batch, as Arrow types (a mixture's: its first source's)."""
        return self._schema

    @property
    def output(self) -> str:
        """What each batch is: "numpy", "torch", "jax", "tensorflow", "arrow" or
        "torchrec"."""
        return self._output


def check_python_options(output: str, batch_transform: Any) -> None:
    """The options the engine never sees: the framework of `output` must be importable; a
    batch_transform must be callable."""
    _frameworks.check_output(output)
    if batch_transform is not None and not callable(batch_transform):
        raise TypeError(f"batch_transform must be callable, got {batch_transform!r}")
