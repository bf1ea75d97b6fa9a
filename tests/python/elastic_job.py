"""A data-parallel "training" job for the elastic-resume test, launched by torchrun.

Each rank reads its shard with stoker, takes lock-stepped steps (an all_reduce per batch, as
DDP does), stops after --steps steps (or at the end of the epoch) and writes the row ids it
saw, its step count and its state_dict. With --resume it first loads a saved state_dict (any
rank's: lock-stepped ranks have the same) and, after finishing that epoch, reads the next
epoch in full to show that later epochs run normally with the new world size.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import stoker
import torch
import torch.distributed as dist


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--steps", type=int, default=-1)
    parser.add_argument("--resume")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    loader = stoker.Loader(args.data, columns=["row_id"], batch_size=args.batch_size, seed=3,
                           shuffle_window=2000, rank=rank, world_size=world, num_threads=1)
    if args.resume:
        loader.load_state_dict(json.loads(Path(args.resume).read_text()))

    ids: list[int] = []
    steps = 0
    for batch in loader:
        step = torch.tensor([float(len(batch["row_id"]))])
        dist.all_reduce(step)  # the lock-step a DDP backward pass imposes
        ids.extend(batch["row_id"].tolist())
        steps += 1
        if steps == args.steps:
            break
    # What a training script saves beside its model checkpoint: this rank's state_dict.
    Path(args.out, f"state-rank{rank}.json").write_text(json.dumps(loader.state_dict()))
    result = {"ids": ids, "steps": steps}
    if args.resume:
        result["next_epoch_ids"] = [int(i) for b in loader for i in b["row_id"]]
    Path(args.out, f"rank{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
