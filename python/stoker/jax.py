"""JAX: batches as ``jax.Array`` and, across hosts, as global arrays.

    loader = stoker.Loader("data/", batch_size=1024, output="jax", **stoker.jax.process_shard())
    for batch in stoker.jax.global_batches(loader, sharding):
        state = train_step(state, batch)   # each array sharded over every host's devices

``output="jax"`` hands each column to JAX through DLPack over the engine's buffer (no copy on
CPU). On several hosts each process loads its own rank's rows (``process_shard()`` gives
``rank=jax.process_index(), world_size=jax.process_count()``) and ``global_batches`` joins
them into arrays whose leading dimension is ``batch_size * process_count`` with
``jax.make_array_from_process_local_data`` (docs/frameworks.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax

__all__ = ["global_batches", "process_shard"]


def process_shard() -> dict[str, int]:
    """``rank`` and ``world_size`` for this JAX process, as Loader keywords."""
    return {"rank": jax.process_index(), "world_size": jax.process_count()}


def global_batches(loader: Any, sharding: jax.sharding.Sharding) -> Iterator[dict[str, jax.Array]]:
    """One epoch of `loader` (this process's rows), each batch a dict of global arrays laid out
    by `sharding` (for example ``NamedSharding(mesh, PartitionSpec("data"))``): this process's
    batch becomes its addressable shards. Every process must call it in step, with loaders
    of the same batch_size (Stoker gives every rank the same number of batches)."""
    if loader.output not in ("jax", "numpy"):
        raise ValueError(f'stoker.jax.global_batches needs a loader with output="jax" or '
                         f'"numpy", got output="{loader.output}"')
    for batch in loader:
        yield {name: _global(sharding, column) for name, column in batch.items()}


def _global(sharding: jax.sharding.Sharding, local: Any) -> jax.Array:
    global_shape = (local.shape[0] * jax.process_count(), *local.shape[1:])
    return jax.make_array_from_process_local_data(sharding, local, global_shape)
