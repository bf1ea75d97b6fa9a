"""PyTorch: a Loader where PyTorch code expects a ``torch.utils.data.IterableDataset``.

    loader = stoker.Loader("data/", batch_size=4096, output="torch", rank=rank, world_size=world)
    for batch in loader:                    # the usual way: the Loader is the DataLoader
        ...
    data = torch.utils.data.DataLoader(stoker.torch.IterableDataset(loader), batch_size=None)

The Loader batches, shuffles, shards and runs its own threads, so it is used in place of
``torch.utils.data.DataLoader``. ``IterableDataset`` is for code that insists on a torch
dataset or a ``DataLoader``: each pass over it is one epoch of the loader, the same batches
(``batch_size=None`` keeps them whole; numpy columns become tensors by torch's
``default_convert``). Worker processes are refused: each would read every row with threads
of its own (docs/pytorch.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["IterableDataset"]


class IterableDataset(torch.utils.data.IterableDataset):
    """The batches of `loader` (a Loader, MixtureLoader or RemoteLoader), one epoch per pass,
    for ``torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0)``. Its
    ``len``, ``set_epoch``, ``state_dict`` and ``load_state_dict`` are the loader's."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __iter__(self) -> Iterator[Any]:
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "stoker.torch.IterableDataset runs in the main process only: the Loader reads "
                "with its own threads, and each DataLoader worker process would read every "
                "row again. Pass num_workers=0 (set num_threads= on the Loader for more "
                "reading threads)")
        return iter(self.loader)

    def __len__(self) -> int:
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        self.loader.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)
