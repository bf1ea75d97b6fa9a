"""Ray Train with Stoker: a TorchTrainer of CPU workers (gloo) reading the ranks' batches,
with the loader's state in Ray Train's checkpoints (docs/ray.md).

    python examples/ray_train.py --data DIR --storage /tmp/ray-results [--workers 2]
    python examples/ray_train.py --data DIR --storage /tmp/ray-results --servers 2

Each worker reads the batches of the rank Ray Train gives it: from a local stoker.Loader, or
with --servers N from a stoker.ray.Fleet of N Flight servers this script starts (through
stoker.RemoteLoader; each server reserves one CPU of the cluster beside one per worker, so
--servers 2 with 2 workers waits for CPUs forever on a 2-CPU machine's own Ray). Every
--save-every steps each worker puts its loader's state_dict in the checkpoint it reports
(rank 0 adds the model and optimizer). When a worker dies, Ray Train
(FailureConfig(max_failures)) starts the workers again from the last checkpoint and the data
continues with exactly the batches an uninterrupted run reads. --resume-from CHECKPOINT starts
a run, with any --workers, from another run's checkpoint: the elastic rule splits what is left
of the epoch among the new workers (docs/determinism.md).

To show the recovery: --crash-once-at STEP kills rank 0's process right after the checkpoint
of that step, on the first attempt only; --stop-after N ends the run after step N (a job that
is stopped); --step-log writes each step's row ids per rank (the tests compare runs with it).
The last line printed is a JSON summary."""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import ray
import ray.train
import stoker
import stoker.ray
import torch
from ray.train.torch import TorchTrainer

FEATURES = [f"I{i}" for i in range(1, 14)]


def loader_options(batch_size: int) -> dict[str, Any]:
    return {"columns": ["row_id", "label", *FEATURES], "batch_size": batch_size, "seed": 7,
            "transforms": [{"op": "log1p", "column": c} for c in FEATURES]}


def train_loop(config: dict[str, Any]) -> None:
    """What each Ray Train worker runs."""
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    if config["fleet"]:
        loader = stoker.RemoteLoader(config["fleet"], rank=rank, world_size=world,
                                     output="torch")
    else:
        loader = stoker.Loader(config["data"], rank=rank, world_size=world, output="torch",
                               **loader_options(config["batch_size"]))
    net = torch.nn.Linear(len(FEATURES), 1)
    model = ray.train.torch.prepare_model(net)  # DDP with more than one worker
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    step, loss = 0, torch.tensor(float("nan"))
    checkpoint = ray.train.get_checkpoint()  # set when Ray Train restarts this run
    if checkpoint is None and config["resume_from"]:
        checkpoint = ray.train.Checkpoint(config["resume_from"])
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            step = restore(Path(folder), rank, net, optimizer, loader)

    while loader.state_dict()["epoch"] < config["epochs"]:
        for batch in loader:
            features = torch.stack([batch[c] for c in FEATURES], dim=1)
            loss = torch.nn.functional.mse_loss(model(features).squeeze(1), batch["label"])
            optimizer.zero_grad()
            loss.backward()  # DDP's all-reduce keeps the workers in lock step
            optimizer.step()
            step += 1
            if config["step_log"]:
                with open(Path(config["step_log"], f"rank{rank}.jsonl"), "a") as log:
                    log.write(json.dumps({"step": step, "time": time.time(),
                                          "ids": batch["row_id"].tolist()}) + "\n")
            if step % config["save_every"] == 0 or step == config["stop_after"]:
                save(step, loss.item(), rank, net, optimizer, loader)
                if step == config["crash_once_at"] and rank == 0:
                    crash_once(Path(config["storage"], "crashed-once"))
            if step == config["stop_after"]:
                return
    save(step, loss.item(), rank, net, optimizer, loader)


def save(step: int, loss: float, rank: int, net: Any, optimizer: Any, loader: Any) -> None:
    """Reports a checkpoint: every worker's loader state (each rank's file), and rank 0's
    model and optimizer. ray.train.report waits for every worker."""
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, f"loader-rank{rank}.json").write_text(json.dumps(loader.state_dict()))
        if rank == 0:
            torch.save({"model": net.state_dict(),
                        "optimizer": optimizer.state_dict(), "step": step},
                       Path(folder, "model.pt"))
        ray.train.report({"step": step, "loss": loss},
                         checkpoint=ray.train.Checkpoint.from_directory(folder))


def restore(folder: Path, rank: int, net: Any, optimizer: Any, loader: Any) -> int:
    """Loads a checkpoint; returns its step. The loader takes this rank's state when the
    checkpoint has one, rank 0's otherwise (lock-stepped ranks agree on the position; a
    different number of workers splits the rest of the epoch by the elastic rule)."""
    saved = torch.load(folder / "model.pt", weights_only=False)
    net.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    own = folder / f"loader-rank{rank}.json"
    state = own if own.exists() else folder / "loader-rank0.json"
    loader.load_state_dict(json.loads(state.read_text()))
    return saved["step"]


def crash_once(marker: Path) -> None:
    """Kills this process (as a lost machine would) unless an earlier attempt did."""
    if not marker.exists():
        marker.write_text(f"{time.time()}\n")
        os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, help="a criteo-preset dataset (stoker gen)")
    parser.add_argument("--storage", required=True, help="Ray Train's storage_path")
    parser.add_argument("--name", default="stoker-ray-train")
    parser.add_argument("--address", help="the Ray cluster (default: RAY_ADDRESS or a new one)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--servers", type=int, default=0,
                        help="read from a stoker.ray.Fleet of this many servers, one CPU each "
                             "(0: locally)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--save-every", type=int, default=5)
    parser.add_argument("--max-failures", type=int, default=2)
    parser.add_argument("--resume-from", help="a checkpoint folder of another run")
    parser.add_argument("--crash-once-at", type=int, default=-1)
    parser.add_argument("--stop-after", type=int, default=-1, help="steps; -1: run to the end")
    parser.add_argument("--step-log", help="a folder: step-by-step row ids per rank (JSON lines)")
    args = parser.parse_args()

    ray.init(address=args.address)
    fleet = None
    if args.servers:
        fleet = stoker.ray.Fleet.start(args.data, num_servers=args.servers,
                                       **loader_options(args.batch_size))
    config = {"data": args.data, "fleet": fleet.name if fleet else None,
              "batch_size": args.batch_size, "epochs": args.epochs,
              "save_every": args.save_every, "storage": args.storage,
              "resume_from": args.resume_from, "crash_once_at": args.crash_once_at,
              "stop_after": args.stop_after, "step_log": args.step_log}
    trainer = TorchTrainer(
        train_loop, train_loop_config=config,
        scaling_config=ray.train.ScalingConfig(num_workers=args.workers, use_gpu=False),
        run_config=ray.train.RunConfig(
            name=args.name, storage_path=args.storage,
            failure_config=ray.train.FailureConfig(max_failures=args.max_failures)))
    result = trainer.fit()
    if fleet is not None:
        fleet.shutdown()
    print(json.dumps({"workers": args.workers, "step": result.metrics["step"],
                      "loss": result.metrics["loss"], "checkpoint": result.checkpoint.path}))


if __name__ == "__main__":
    main()
