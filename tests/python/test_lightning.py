"""Stoker under a real lightning.Trainer (CPU): a checkpoint taken mid-epoch, at an epoch's
last step or by the default end-of-epoch checkpoint resumes with exactly the batches the
uninterrupted run trained on (the row ids of every step compared), Lightning's discarded
iter() uses up no epoch, and `stoker state` finds the loader's state in the checkpoint; the
same under 2-process DDP (lightning_ddp_job.py), rank 0's checkpoint resuming both ranks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from stoker.cli import state as _state_cli

torch = pytest.importorskip("torch")
lightning = pytest.importorskip("lightning")

ROWS, BATCH, EPOCHS = 600, 50, 3
STEPS_PER_EPOCH = ROWS // BATCH  # 12


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lightning")
    for part in range(2):
        ids = np.arange(part * ROWS // 2, (part + 1) * ROWS // 2, dtype=np.int64)
        table = pa.table({"row_id": ids, "x": ids.astype(np.float32) / ROWS})
        pq.write_table(table, out / f"part-{part}.parquet", row_group_size=75)
    return out


class Recorder(lightning.LightningModule):
    """A one-weight model that records the row ids of every training step."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.steps: list[list[int]] = []

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        self.steps.append(batch["row_id"].tolist())
        return ((batch["x"] - self.weight) ** 2).mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(rows: Path) -> stoker.Loader:
    return stoker.Loader(rows, batch_size=BATCH, seed=5, shuffle_window=150, output="torch",
                         num_threads=1)


def trainer(callbacks: list, root: Path) -> lightning.Trainer:
    return lightning.Trainer(accelerator="cpu", devices=1, max_epochs=EPOCHS,
                             default_root_dir=root, logger=False, enable_progress_bar=False,
                             enable_model_summary=False, callbacks=callbacks)


@pytest.fixture(scope="module")
def uninterrupted(rows: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list, Path]:
    """The steps of an uninterrupted run, with a checkpoint after every step and every
    epoch (Lightning's default end-of-epoch checkpoint)."""
    out = tmp_path_factory.mktemp("checkpoints")
    every_step = lightning.pytorch.callbacks.ModelCheckpoint(
        dirpath=out, filename="step-{step}", every_n_train_steps=1, save_top_k=-1)
    every_epoch = lightning.pytorch.callbacks.ModelCheckpoint(
        dirpath=out, filename="epoch-{epoch}", save_top_k=-1, save_on_train_epoch_end=True)
    model = Recorder()
    trainer([every_step, every_epoch], out).fit(model, train_dataloaders=loader(rows))
    return model.steps, out


def test_lightning_trains_the_loaders_epochs_in_order(rows: Path, uninterrupted) -> None:
    steps, _ = uninterrupted
    plain = loader(rows)
    expected = [b["row_id"].tolist() for _ in range(EPOCHS) for b in plain]
    assert steps == expected  # Lightning's check-and-drop iter() used up no epoch
    assert len(steps) == EPOCHS * STEPS_PER_EPOCH


@pytest.mark.parametrize("checkpoint", ["step-step=5", "step-step=12", "step-step=19",
                                        "step-step=24", "epoch-epoch=0", "epoch-epoch=1"])
def test_a_resumed_run_trains_exactly_the_uninterrupted_runs_remaining_batches(
        rows: Path, uninterrupted, checkpoint: str, tmp_path: Path) -> None:
    steps, out = uninterrupted
    path = out / f"{checkpoint}.ckpt"
    at = int(torch.load(path, weights_only=False)["global_step"])
    model = Recorder()
    trainer([], tmp_path).fit(model, train_dataloaders=loader(rows), ckpt_path=path)
    assert at in (5, 12, 19, 24)
    assert model.steps == steps[at:]


def test_stoker_state_finds_the_state_in_a_lightning_checkpoint(uninterrupted) -> None:
    _, out = uninterrupted
    text = _state_cli.show(out / "step-step=19.ckpt", as_json=False)
    assert "epoch            1" in text
    assert f"consumed         7 batches of {BATCH}" in text


DDP_JOB = Path(__file__).with_name("lightning_ddp_job.py")


def ddp(rows: Path, out: Path, checkpoint: Path | None = None) -> list[dict]:
    """Runs the 2-process job; each rank's {"world_size", "steps"}."""
    argv = [sys.executable, str(DDP_JOB), str(rows), str(out)]
    if checkpoint is not None:
        argv.append(str(checkpoint))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = checkpoint.stem if checkpoint is not None else "full"
    return [json.loads((out / f"steps-{run}-rank{r}.json").read_text()) for r in (0, 1)]


@pytest.mark.slow
def test_ddp_ranks_share_the_epoch_and_resume_exactly(rows: Path, tmp_path: Path) -> None:
    full = ddp(rows, tmp_path)
    per_rank = STEPS_PER_EPOCH // 2  # 6 steps per epoch on each of the 2 ranks
    for r in (0, 1):
        assert full[r]["world_size"] == 2
        # Lightning's launcher counts no ranks per node: the CPU budget takes its WORLD_SIZE.
        assert full[r]["ranks_per_node"] == [2, "WORLD_SIZE"]
        assert len(full[r]["steps"]) == 2 * per_rank
    # The ranks' rows are disjoint and cover each epoch: the loader took rank and world size
    # from the trainer.
    for epoch in range(2):
        seen = [row for r in (0, 1)
                for step in full[r]["steps"][epoch * per_rank:(epoch + 1) * per_rank]
                for row in step]
        assert sorted(seen) == list(range(ROWS))
    # Mid-epoch, at the first epoch's last step, mid-second-epoch: rank 0's checkpoint
    # resumes both ranks at exactly the uninterrupted run's next batches.
    for at in (3, 6, 9):
        resumed = ddp(rows, tmp_path, tmp_path / "ckpt" / f"step-step={at}.ckpt")
        for r in (0, 1):
            assert resumed[r]["steps"] == full[r]["steps"][at:], (at, r)
