"""Data-parallel training with PyTorch DDP, checkpointing the loader with the model.

    torchrun --nproc_per_node=2 examples/torch_ddp.py --data DIR --checkpoint ckpt.pt

Each rank reads its own rows (rank and world size from torchrun; threads from this rank's
share of the CPUs, which Stoker derives from LOCAL_WORLD_SIZE). Every --save-every steps
rank 0 saves the model, the optimizer and the loader's state_dict; started again with the
same --checkpoint, the job continues from there with exactly the batches it would have read
(also with a different --nproc_per_node). --stop-after N ends the run early, as a crash
would; --step-log writes each step's row ids per rank (the tests compare runs with it)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import stoker
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES = [f"I{i}" for i in range(1, 14)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="a criteo-preset dataset (stoker gen)")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--stop-after", type=int, default=-1, help="steps; -1: run to the end")
    parser.add_argument("--step-log", help="a folder: step-by-step row ids per rank (JSON lines)")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    loader = stoker.Loader(args.data, columns=["row_id", "label", *FEATURES],
                           batch_size=args.batch_size, seed=7, rank=rank, world_size=world,
                           output="torch",
                           transforms=[{"op": "log1p", "column": c} for c in FEATURES])
    model = DistributedDataParallel(torch.nn.Linear(len(FEATURES), 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    step = 0
    if Path(args.checkpoint).exists():
        saved = torch.load(args.checkpoint, weights_only=False)
        model.module.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])  # any rank's: lock-stepped ranks agree
        step = saved["step"]

    while loader.state_dict()["epoch"] < args.epochs:
        for batch in loader:
            features = torch.stack([batch[c] for c in FEATURES], dim=1)
            loss = torch.nn.functional.mse_loss(model(features).squeeze(1), batch["label"])
            optimizer.zero_grad()
            loss.backward()  # DDP's all-reduce keeps the ranks in lock step
            optimizer.step()
            step += 1
            if args.step_log:
                with open(Path(args.step_log, f"rank{rank}.jsonl"), "a") as log:
                    log.write(json.dumps({"step": step, "ids": batch["row_id"].tolist()}) + "\n")
            if step % args.save_every == 0 and rank == 0:
                save(args.checkpoint, model, optimizer, loader, step)
            if step == args.stop_after:
                dist.destroy_process_group()
                return
    if rank == 0:
        print(f"trained {step} steps on {world} ranks, "
              f"{loader.stats()['threads']} loader threads per rank, loss {loss.item():.4f}")
    dist.destroy_process_group()


def save(path: str, model, optimizer, loader: stoker.Loader, step: int) -> None:
    """Model, optimizer and loader saved together, atomically, so they always agree."""
    state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
             "loader": loader.state_dict(), "step": step}
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
