"""A 2-process DDP run under a real lightning.Trainer (CPU, gloo), for test_lightning.py.

    python lightning_ddp_job.py DATA OUT [CHECKPOINT]

Each rank reads its share (rank and world size from the trainer), records the row ids of
every training step into OUT/steps-<run>-rank<r>.json, and the uninterrupted run (no
CHECKPOINT) saves a checkpoint after every step into OUT/ckpt. With CHECKPOINT, the run
resumes from it. Lightning's launcher runs this script again for rank 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import lightning
import stoker
import torch

BATCH, EPOCHS = 50, 2


class Recorder(lightning.LightningModule):
    def __init__(self, data: str) -> None:
        super().__init__()
        self.data = data
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.steps: list[list[int]] = []
        self.budget: dict = {}

    def train_dataloader(self) -> stoker.Loader:
        # The CPU budget a loader with num_threads=None would take, read while the launcher's
        # variables are set (Lightning's teardown removes WORLD_SIZE after fit).
        self.budget = stoker.Loader(self.data, batch_size=BATCH).stats()["cpu_budget"]
        return stoker.Loader(self.data, batch_size=BATCH, seed=5, shuffle_window=150,
                             output="torch", num_threads=1, rank=self.trainer.global_rank,
                             world_size=self.trainer.world_size)

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        self.steps.append(batch["row_id"].tolist())
        return ((batch["x"] - self.weight) ** 2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> None:
    data, out = sys.argv[1], Path(sys.argv[2])
    checkpoint = sys.argv[3] if len(sys.argv) > 3 else None
    callbacks = [] if checkpoint else [lightning.pytorch.callbacks.ModelCheckpoint(
        dirpath=out / "ckpt", filename="step-{step}", every_n_train_steps=1, save_top_k=-1)]
    trainer = lightning.Trainer(accelerator="cpu", devices=2, strategy="ddp",
                                max_epochs=EPOCHS, default_root_dir=out, logger=False,
                                enable_progress_bar=False, enable_model_summary=False,
                                callbacks=callbacks)
    model = Recorder(data)
    trainer.fit(model, ckpt_path=checkpoint)
    run = Path(checkpoint).stem if checkpoint else "full"
    path = out / f"steps-{run}-rank{trainer.global_rank}.json"
    path.write_text(json.dumps({"world_size": trainer.world_size, "steps": model.steps,
                                "ranks_per_node": [model.budget["ranks_per_node"],
                                                   model.budget["ranks_from"]]}))


if __name__ == "__main__":
    main()
