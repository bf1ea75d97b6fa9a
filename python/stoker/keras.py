"""Keras 3: a ``keras.utils.PyDataset`` over a Loader, so ``model.fit`` reads Stoker's batches
on any backend (TensorFlow, JAX, PyTorch).

    loader = stoker.Loader("data/", batch_size=4096, seed=7)
    model.fit(stoker.keras.PyDataset(loader, label="label"), epochs=3)

Keras asks for batches by index (in a shuffled order, with ``fit``'s default shuffle=True);
Stoker streams an epoch in its own deterministic shuffled order. So the index is not a
position: the k-th batch Keras asks for in an epoch is the epoch's k-th batch. Keep Keras's
``workers`` at 1: the loader's C++ threads already read ahead."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import keras

from stoker._loading import passes as _passes

__all__ = ["PyDataset"]


class PyDataset(keras.utils.PyDataset):
    """The loader's epochs as a Keras PyDataset: each Keras epoch is the loader's next epoch
    (an epoch Keras leaves early, as when it peeks at the first batches for their spec, is
    read again from its start).

    Args:
        loader: a Loader or RemoteLoader with output "numpy" (any backend), "jax",
            "tensorflow" or "torch" (that backend's tensors, zero-copy).
        label: the column (or columns) Keras's ``y`` is; the other columns are ``x`` (a
            dict, as a functional model with named inputs takes it). None: batches are
            dicts and the model's ``train_step`` takes them apart.
        features: the columns ``x`` holds (None: all but the label).
    """

    def __init__(self, loader: Any, *, label: str | Sequence[str] | None = None,
                 features: Sequence[str] | None = None, **kwargs: Any) -> None:
        if kwargs.get("workers", 1) != 1 or kwargs.get("use_multiprocessing", False):
            raise ValueError("stoker.keras.PyDataset: leave workers=1 and "
                             "use_multiprocessing=False (the loader's own threads read ahead; "
                             "Keras's workers would each take a share of one stream)")
        super().__init__(**kwargs)
        if loader.output == "arrow":
            raise ValueError('stoker.keras.PyDataset needs tensors: create the loader with '
                             'output="numpy" (or "jax", "tensorflow", "torch")')
        self._labels = [label] if isinstance(label, str) else list(label or [])
        self._features = list(features) if features is not None else None
        for name in self._labels + (self._features or []):
            if name not in loader.schema.names:
                raise ValueError(f"no column '{name}' in the loader's batches "
                                 f"(columns: {', '.join(loader.schema.names)})")
        self._single_label = isinstance(label, str)
        self._length = len(loader)
        self._passes = _passes.Passes(loader)
        self._batches: Iterator[Any] | None = None
        self._served = 0

    def __len__(self) -> int:
        return self._length

    @property
    def num_batches(self) -> int:
        return self._length

    def __getitem__(self, index: int) -> Any:
        """The epoch's next batch, whatever `index` (see the module's doc)."""
        if not 0 <= index < self._length:
            raise IndexError(f"batch {index} is outside the epoch's {self._length} batches")
        if self._served == self._length:
            raise IndexError(f"all {self._length} batches of this epoch were served; Keras "
                             f"calls on_epoch_end() before the next epoch")
        if self._batches is None:
            self._batches = self._passes.next_pass()
        self._served += 1
        return self._split(next(self._batches))

    def on_epoch_end(self) -> None:
        """Ends the epoch: a complete one is done, one left early is read again next time."""
        if self._batches is not None and self._served == self._length:
            for _ in self._batches:  # past the last batch: marks the pass finished
                pass
        self._batches, self._served = None, 0

    def _split(self, batch: dict[str, Any]) -> Any:
        if not self._labels:
            return batch if self._features is None else {k: batch[k] for k in self._features}
        names = self._features or [k for k in batch if k not in self._labels]
        x = {k: batch[k] for k in names}
        y = batch[self._labels[0]] if self._single_label else {k: batch[k] for k in self._labels}
        return x, y
