"""The controller that sizes the loader (docs/autotune.md): the batches never depend on it,
its moves stay within the CPU share and today's prefetch, each is shown with its reason, it
shrinks a loader the training step does not need, and bad options name themselves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import stoker
from conftest import assert_same_batches


def epochs(path: Path, n: int = 2, step: float = 0.0, **options) -> tuple[list, stoker.Loader]:
    loader = stoker.Loader(path, batch_size=256, seed=5, shuffle_window=4000, **options)
    batches = []
    for _ in range(n):  # each iter() reads the next epoch
        for batch in loader:
            batches.append(batch)
            if step:
                time.sleep(step)
    return batches, loader


@pytest.mark.parametrize("shuffle", [True, False])
def test_the_same_batches_fixed_auto_and_moved_at_every_batch(criteo: Path, shuffle: bool) -> None:
    fixed, _ = epochs(criteo, shuffle=shuffle, num_threads=2, prefetch=4)
    off, _ = epochs(criteo, shuffle=shuffle, autotune=False)
    auto, _ = epochs(criteo, shuffle=shuffle)
    assert_same_batches(fixed, off)
    assert_same_batches(fixed, auto)
    for seed in (1, 2):
        moved, loader = epochs(criteo, shuffle=shuffle, autotune={"random_moves": seed})
        assert_same_batches(fixed, moved)
        tune = loader.stats()["autotune"]
        # A move after (nearly) every batch of both epochs: the most the controller could do.
        assert tune["decisions"] > 0.9 * len(moved) * (1 - 1 / (tune["max_threads"] *
                                                               tune["max_prefetch"]))
        for decision in tune["recent"]:
            assert decision["action"] == "random"
            assert all(1 <= t <= tune["max_threads"] for t in decision["threads"])
            assert all(1 <= p <= tune["max_prefetch"] for p in decision["prefetch"])
            assert all(0 <= r <= tune["max_read_ahead"] for r in decision["read_ahead"])
        # The read-ahead moved too (row groups read beyond the workers' count).
        assert any(decision["read_ahead"][1] > 0 for decision in tune["recent"])


def test_the_same_batches_with_one_knob_fixed_and_for_other_ranks(criteo: Path) -> None:
    for rank in (0, 1):
        fixed, _ = epochs(criteo, n=1, rank=rank, world_size=2, num_threads=1, prefetch=2)
        threads_fixed, loader = epochs(criteo, n=1, rank=rank, world_size=2, num_threads=1,
                                       autotune={"random_moves": 3})
        assert_same_batches(fixed, threads_fixed)
        tune = loader.stats()["autotune"]
        assert tune["tuned"] == ["prefetch", "read_ahead"]
        assert all(d["threads"] == (1, 1) for d in tune["recent"])
        prefetch_fixed, loader = epochs(criteo, n=1, rank=rank, world_size=2, prefetch=2,
                                        autotune={"random_moves": 4})
        assert_same_batches(fixed, prefetch_fixed)
        assert loader.stats()["autotune"]["tuned"] == ["threads", "read_ahead"]


def test_both_knobs_given_or_autotune_off_means_no_controller(criteo: Path) -> None:
    loader = stoker.Loader(criteo, batch_size=256, num_threads=2, prefetch=3)
    assert loader.stats()["autotune"] == {"enabled": False}
    loader = stoker.Loader(criteo, batch_size=256, autotune=False)
    assert loader.stats()["autotune"] == {"enabled": False}
    assert loader.stats()["threads"] == loader.stats()["cpu_budget"]["threads"]


def test_auto_starts_at_the_cpu_share_and_todays_prefetch(criteo: Path) -> None:
    loader = stoker.Loader(criteo, batch_size=256, num_threads="auto")
    tune = loader.stats()["autotune"]
    share = loader.stats()["cpu_budget"]["threads"]
    assert tune["enabled"] and tune["tuned"] == ["threads", "prefetch", "read_ahead"]
    # No row group read beyond the workers' count until the workers idle while the consumer
    # waits; then at most as many as the I/O executor reads at once (16 on local disks).
    assert (tune["read_ahead"], tune["max_read_ahead"]) == (0, loader.stats()["io_threads"])
    assert (tune["threads"], tune["max_threads"]) == (share, share)
    assert (tune["prefetch"], tune["max_prefetch"]) == (2 * share, 2 * share)
    assert tune["target_stall"] == 0.01 and tune["decisions"] == 0


def test_a_slow_step_lets_it_shrink_and_says_why(criteo: Path, tmp_path: Path) -> None:
    """A 4 ms step over batches the loader makes in well under that: the consumer never
    waits, so the controller takes prefetch (and workers, where there are several) down,
    each move with the window's figures, and a new epoch starts where the last left off."""
    options = {"target_stall": 0.2, "window_batches": 4, "window_seconds": 0.0}
    _, loader = epochs(criteo, n=1, step=0.004, autotune=options, trace_events=100_000)
    tune = loader.stats()["autotune"]
    downs = [d for d in tune["recent"] if d["action"].endswith(" down")]
    assert downs, tune
    first = downs[0]
    assert "< 5.0% for 3 windows" in first["reason"]
    assert first["stall"] < 0.05 and 0.0 <= first["busy"] <= 1.0
    assert (first["threads"][1], first["prefetch"][1]) < (first["threads"][0],
                                                          first["prefetch"][0])
    assert tune["windows"] >= 3
    assert (tune["threads"], tune["prefetch"]) < (tune["max_threads"], tune["max_prefetch"])
    # The next epoch's stream starts at the setting the last decision left (its first batch
    # makes no decision: it is not counted), as the trace's last setting shows.
    epoch = iter(loader)
    next(epoch)
    loader.write_trace(tmp_path / "t.json")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    settings = [e["args"] for e in events if e["ph"] == "C" and e["name"] == "autotune"]
    assert settings[0] == {"threads": tune["max_threads"], "prefetch": tune["max_prefetch"]}
    assert settings[-1] == {"threads": tune["threads"], "prefetch": tune["prefetch"]}
    assert loader.stats()["autotune"]["decisions"] == tune["decisions"]
    del epoch


def test_the_trace_shows_each_setting(criteo: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    loader = stoker.Loader(criteo, batch_size=256, trace=trace, autotune={"random_moves": 9})
    list(loader)
    events = json.loads(trace.read_text())["traceEvents"]
    settings = [e["args"] for e in events if e["ph"] == "C" and e["name"] == "autotune"]
    assert len(settings) > 10
    tune = loader.stats()["autotune"]
    assert all(1 <= s["threads"] <= tune["max_threads"] for s in settings)
    assert all(1 <= s["prefetch"] <= tune["max_prefetch"] for s in settings)


@pytest.mark.parametrize("value, error, message", [
    ({"target_stall": 0}, ValueError, "autotune target_stall must be between 0 and 1"),
    ({"target_stall": 1.5}, ValueError, "autotune target_stall must be between 0 and 1"),
    ({"window_batches": 0}, ValueError, "autotune window_batches must be >= 1"),
    ({"window_seconds": -1.0}, ValueError, "autotune window_seconds must be >= 0"),
    ({"target": 0.1}, ValueError, "autotune: unknown key(s) target; it takes target_stall"),
    ({"enabled": False}, ValueError, "autotune: unknown key(s) enabled"),
    ({"window_batches": "4"}, TypeError, "autotune: window_batches must be an int"),
    ("yes", TypeError, "autotune must be True, False or a dict"),
])
def test_bad_autotune_options_name_themselves(criteo: Path, value, error, message) -> None:
    with pytest.raises(error) as raised:
        stoker.Loader(criteo, batch_size=256, autotune=value)
    assert message in str(raised.value)


def test_num_threads_takes_auto_or_a_count(criteo: Path) -> None:
    with pytest.raises(TypeError, match="num_threads must be"):
        stoker.Loader(criteo, batch_size=256, num_threads="many")


def _rank(path: Path, local_rank: int, run_id: str, seconds: float, step_ms: float):
    env = {**os.environ, "LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": str(local_rank),
           "TORCHELASTIC_RUN_ID": run_id}
    env.pop("STOKER_NODE_SHARE", None)
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "node_share_job.py"), str(path),
         str(seconds), str(step_ms)], env=env, stdout=subprocess.PIPE, text=True)


def test_ranks_on_a_node_share_cpus_by_need(criteo: Path) -> None:
    """Two real ranks of one job on this node (torchrun's variables): each starts at its
    equal share; the one that stalls while the other idles (a 20 ms step) grows past its
    share into the CPUs the idle one leaves, and each sees what the other uses."""
    run_id = f"autotune-test-{os.getpid()}-{time.monotonic_ns()}"
    idle = _rank(criteo, 1, run_id, seconds=5.0, step_ms=20.0)
    time.sleep(1.0)  # the idle rank has published before the busy one starts
    busy = _rank(criteo, 0, run_id, seconds=3.0, step_ms=0.0)
    busy_out, _ = busy.communicate(timeout=120)
    idle_out, _ = idle.communicate(timeout=120)
    assert busy.returncode == 0 and idle.returncode == 0
    busy_tune, idle_tune = json.loads(busy_out), json.loads(idle_out)
    for tune, rank in ((busy_tune, 0), (idle_tune, 1)):
        node = tune["node"]
        assert node["job_from"] == "TORCHELASTIC_RUN_ID"
        assert (node["local_rank"], node["ranks"]) == (rank, 2)
        assert node["share"] == max(node["cpus"] // 2, 1)
        assert tune["max_threads"] == node["cpus"]  # a pool of the node's CPUs, most parked
    share = busy_tune["node"]["share"]
    grown = [d for d in busy_tune["recent"]
             if d["action"] == "threads up" and d["threads"][1] > share]
    assert grown, busy_tune["recent"]
    # The busy rank saw the idle one's use, and the idle one saw the busy one's.
    assert 0 < busy_tune["others_seen"] < 1.0
    assert idle_tune["others_seen"] > 0.5
