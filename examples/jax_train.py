"""A few steps of a JAX model on Stoker batches, sharded over the devices of every process.

    python examples/jax_train.py --data DIR
    # several hosts: call jax.distributed.initialize() first; each process reads its rank's rows

Batches arrive as jax.Arrays over the engine's buffers (output="jax"); global_batches lays
each process's batch out across the mesh's "data" axis with
jax.make_array_from_process_local_data."""

from __future__ import annotations

import argparse
import json

import jax
import jax.numpy as jnp
import numpy as np
import stoker
import stoker.jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

FEATURES = [f"I{i}" for i in range(1, 14)]


def loss_fn(params: dict, features: jax.Array, label: jax.Array) -> jax.Array:
    prediction = features @ params["w"] + params["b"]
    return jnp.mean((prediction - label) ** 2)


@jax.jit
def train_step(params: dict, features: jax.Array, label: jax.Array) -> tuple[dict, jax.Array]:
    loss, grads = jax.value_and_grad(loss_fn)(params, features, label)
    return jax.tree.map(lambda p, g: p - 0.005 * g, params, grads), loss


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="a criteo-preset dataset (stoker gen)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()

    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    loader = stoker.Loader(args.data, columns=["label", *FEATURES], batch_size=args.batch_size,
                           seed=7, output="jax", drop_last=True, **stoker.jax.process_shard(),
                           transforms=[{"op": "log1p", "column": c} for c in FEATURES]
                           + [{"op": "stack", "columns": FEATURES, "output": "features"}])
    params = {"w": jnp.zeros(len(FEATURES)), "b": jnp.zeros(())}
    losses = []
    for _ in range(args.epochs):
        for batch in stoker.jax.global_batches(loader, sharding):
            params, loss = train_step(params, batch["features"], batch["label"])
            losses.append(float(loss))
    print(json.dumps({"steps": len(losses), "first_loss": losses[0], "last_loss": losses[-1],
                      "devices": len(jax.devices()), "processes": jax.process_count()}))


if __name__ == "__main__":
    main()
