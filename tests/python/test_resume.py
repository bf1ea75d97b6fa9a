"""Exact resume: a state_dict taken between any two batches continues with exactly the
batches the uninterrupted run would have produced, whatever the thread counts; elastic resume
across world sizes, in process and as real torchrun jobs; and the safety checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import stoker
from conftest import ROWS, assert_same_batches

OPTIONS = {"columns": ["row_id", "I1"], "batch_size": 700, "seed": 11, "shuffle_window": 4500}


def run_epoch(loader: stoker.Loader) -> list[dict]:
    return list(loader)


def ids_of(batches: list[dict]) -> list[int]:
    return [int(i) for b in batches for i in b["row_id"]]


@pytest.mark.parametrize("stop_after", [0, 1, 6, 14, 28])  # first, early, mid-window, last...
def test_resume_mid_epoch_gives_the_same_batches(criteo: Path, stop_after: int) -> None:
    full = stoker.Loader(criteo, num_threads=1, **OPTIONS)
    expected = run_epoch(full)
    assert len(expected) == 29

    first = stoker.Loader(criteo, num_threads=3, **OPTIONS)
    it = iter(first)
    head = [next(it) for _ in range(stop_after)]
    state = json.loads(json.dumps(first.state_dict()))  # through JSON, as a checkpoint is
    del it, first

    resumed = stoker.Loader(criteo, num_threads=2, **OPTIONS)
    resumed.load_state_dict(state)
    tail = run_epoch(resumed)
    assert_same_batches(head + tail, expected)
    assert resumed.stats()["delivered_digest"] == full.stats()["delivered_digest"]
    # The epoch after is the uninterrupted run's next epoch.
    assert_same_batches(run_epoch(resumed), run_epoch(full))


def test_resume_at_the_epoch_boundary_starts_the_next_epoch(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    run_epoch(loader)
    state = loader.state_dict()
    assert (state["epoch"], state["rounds"]) == (1, [])
    resumed = stoker.Loader(criteo, num_threads=1, **OPTIONS)
    resumed.load_state_dict(state)
    reference = stoker.Loader(criteo, **OPTIONS)
    reference.set_epoch(1)
    assert_same_batches(run_epoch(resumed), run_epoch(reference))


def test_resume_twice_in_one_epoch(criteo: Path) -> None:
    expected = run_epoch(stoker.Loader(criteo, **OPTIONS))
    got: list[dict] = []
    state = None
    for threads, steps in ((1, 4), (2, 9), (4, 100)):
        loader = stoker.Loader(criteo, num_threads=threads, **OPTIONS)
        if state is not None:
            loader.load_state_dict(state)
        it = iter(loader)
        for _ in range(steps):
            try:
                got.append(next(it))
            except StopIteration:
                break
        state = loader.state_dict()
    assert_same_batches(got, expected)


def test_state_is_small_and_does_not_grow_with_data_or_window(criteo: Path,
                                                              tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    shutil.copy(min(criteo.glob("*.parquet")), small / "a.parquet")
    sizes = []
    for source, window in ((small, 100), (criteo, 100), (criteo, 10**7)):
        loader = stoker.Loader(source, columns=["row_id"], batch_size=100, shuffle_window=window)
        it = iter(loader)
        next(it)
        state = loader.state_dict()
        json.dumps(state)
        sizes.append(len(json.dumps(state)))
    assert max(sizes) - min(sizes) <= 8  # digits of the numbers only
    assert max(sizes) < 600


@pytest.mark.parametrize("before, after", [(4, 3), (2, 5), (3, 1), (1, 4)])
def test_elastic_resume_sees_the_rest_once_with_equal_steps(criteo: Path, before: int,
                                                            after: int) -> None:
    steps = 3
    seen: list[int] = []
    states = []
    for rank in range(before):
        loader = stoker.Loader(criteo, rank=rank, world_size=before, **OPTIONS)
        it = iter(loader)
        seen += ids_of([next(it) for _ in range(steps)])
        states.append(loader.state_dict())
    assert all(s["rounds"] == states[0]["rounds"] for s in states)
    counts = set()
    for rank in range(after):
        loader = stoker.Loader(criteo, rank=rank, world_size=after, **OPTIONS)
        loader.load_state_dict(states[rank % before])
        batches = run_epoch(loader)
        counts.add(len(batches))
        seen += ids_of(batches)
        # Later epochs are ordinary epochs of the new world size.
        fresh = stoker.Loader(criteo, rank=rank, world_size=after, **OPTIONS)
        fresh.set_epoch(1)
        assert_same_batches(run_epoch(loader), run_epoch(fresh))
    assert len(counts) == 1, f"ranks took different numbers of steps: {counts}"
    assert len(seen) == len(set(seen)), "a row was delivered twice"
    assert ROWS - len(seen) <= after - 1


def test_state_from_another_dataset_or_options_is_refused(criteo: Path, tmp_path: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    it = iter(loader)
    next(it)
    state = loader.state_dict()

    changed = {
        "batch_size": dict(OPTIONS, batch_size=701),
        "seed": dict(OPTIONS, seed=12),
        "shuffle_window": dict(OPTIONS, shuffle_window=4501),
        "the column set": dict(OPTIONS, columns=["row_id"]),
        "shuffle": dict(OPTIONS, shuffle=False),
    }
    for what, options in changed.items():
        with pytest.raises(ValueError, match=f"{what} differs"):
            stoker.Loader(criteo, **options).load_state_dict(state)

    grown = tmp_path / "grown"
    shutil.copytree(criteo, grown)
    state_grown = stoker.Loader(grown, **OPTIONS).state_dict()
    shutil.copy(min(criteo.glob("*.parquet")), grown / "part-99999.parquet")
    with pytest.raises(ValueError, match=r"the dataset .* differs: saved 4 files / 20000 rows, "
                                         r"now 5 files"):
        stoker.Loader(grown, **OPTIONS).load_state_dict(state_grown)

    # The documented override loads it anyway, with a warning.
    other = stoker.Loader(criteo, **dict(OPTIONS, batch_size=350))
    with pytest.warns(UserWarning, match="batch_size differs"):
        other.load_state_dict(state, strict=False)
    assert sum(len(b["row_id"]) for b in other) == ROWS - 700


@pytest.mark.parametrize("bad, message", [
    ("nope", "must be a dict"),
    ({"epoch": 0}, "missing"),
])
def test_malformed_state(criteo: Path, bad: object, message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        stoker.Loader(criteo, **OPTIONS).load_state_dict(bad)  # type: ignore[arg-type]


def test_delivered_digest_compares_runs(criteo: Path) -> None:
    def digest(**kw) -> str:
        loader = stoker.Loader(criteo, **dict(OPTIONS, **kw))
        run_epoch(loader)
        return loader.stats()["delivered_digest"]

    assert digest(num_threads=1) == digest(num_threads=4)
    assert digest() != digest(seed=12)


def torchrun(nproc: int, *args: str, cwd: Path) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone",
         f"--nproc_per_node={nproc}", str(Path(__file__).with_name("elastic_job.py")), *args],
        capture_output=True, text=True, timeout=300, env=env, cwd=cwd, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("before, after", [(4, 3), (2, 5)])
def test_elastic_resume_with_real_torchrun_jobs(criteo: Path, tmp_path: Path, before: int,
                                                after: int) -> None:
    pytest.importorskip("torch.distributed")
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    batch, steps = 500, 4
    torchrun(before, "--data", str(criteo), "--out", str(first), "--batch-size", str(batch),
             "--steps", str(steps), cwd=tmp_path)
    phase1 = [json.loads((first / f"rank{r}.json").read_text()) for r in range(before)]
    assert [p["steps"] for p in phase1] == [steps] * before
    torchrun(after, "--data", str(criteo), "--out", str(second), "--batch-size", str(batch),
             "--resume", str(first / "state-rank0.json"), cwd=tmp_path)
    phase2 = [json.loads((second / f"rank{r}.json").read_text()) for r in range(after)]

    assert len({p["steps"] for p in phase2}) == 1, "every new rank takes the same steps"
    seen = [i for p in phase1 + phase2 for i in p["ids"]]
    assert len(seen) == len(set(seen)), "a row was seen twice"
    assert ROWS - len(seen) <= after - 1
    assert set(seen) <= set(range(ROWS))
    # The next epoch is an ordinary epoch of `after` ranks.
    for rank, p in enumerate(phase2):
        fresh = stoker.Loader(criteo, columns=["row_id"], batch_size=batch, seed=3,
                              shuffle_window=2000, rank=rank, world_size=after)
        fresh.set_epoch(1)
        assert p["next_epoch_ids"] == ids_of(list(fresh))
