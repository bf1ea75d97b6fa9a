"""The Python examples run as a user runs them: torchrun DDP with a crash and a resume, Keras
on all three backends, JAX sharded over two CPU devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*command: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(command, capture_output=True, text=True, timeout=400, check=False,
                            env=dict(os.environ, OMP_NUM_THREADS="1", **(env or {})))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def torchrun(nproc: int, *args: str) -> str:
    return run(sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={nproc}", str(EXAMPLES / "torch_ddp.py"), *args)


def steps(log: Path) -> dict[tuple[int, int], list[int]]:
    """(rank, step) -> row ids; a step run twice (after the crash, again after the resume)
    keeps its last run's ids."""
    out = {}
    for rank_log in log.glob("rank*.jsonl"):
        rank = int(rank_log.stem[4:])
        for line in rank_log.read_text().splitlines():
            entry = json.loads(line)
            out[(rank, entry["step"])] = entry["ids"]
    return out


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_torch_ddp_crash_and_resume_reads_what_an_uninterrupted_run_reads(
        criteo: Path, tmp_path: Path) -> None:
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    whole.mkdir(), broken.mkdir()
    common = ["--data", str(criteo), "--batch-size", "1000", "--save-every", "4"]
    out = torchrun(2, *common, "--checkpoint", str(whole / "ckpt.pt"), "--step-log", str(whole))
    assert "trained 20 steps on 2 ranks" in out  # 2 epochs x 10 steps of 2 x 1000 rows
    # Killed after step 14 (last checkpoint at step 12), then started again.
    torchrun(2, *common, "--checkpoint", str(broken / "ckpt.pt"), "--step-log", str(broken),
             "--stop-after", "14")
    torchrun(2, *common, "--checkpoint", str(broken / "ckpt.pt"), "--step-log", str(broken))
    expected, got = steps(whole), steps(broken)
    assert len(expected) == 40
    assert got == expected  # every step of both epochs on both ranks: the same rows


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_keras_fit_on_every_backend(criteo: Path, backend: str) -> None:
    out = run(sys.executable, str(EXAMPLES / "keras_fit.py"), "--data", str(criteo),
              env={"KERAS_BACKEND": backend})
    report = json.loads(out.strip().splitlines()[-1])
    assert report["backend"] == backend
    assert report["loader_epoch"] == 2 and len(report["loss"]) == 2
    assert report["loss"][1] < report["loss"][0]


def test_jax_train_over_two_devices(criteo: Path) -> None:
    out = run(sys.executable, str(EXAMPLES / "jax_train.py"), "--data", str(criteo),
              "--batch-size", "1000",
              env={"XLA_FLAGS": "--xla_force_host_platform_device_count=2",
                   "JAX_PLATFORMS": "cpu"})
    report = json.loads(out.strip().splitlines()[-1])
    assert report["devices"] == 2 and report["steps"] == 40
    assert report["last_loss"] < report["first_loss"]
