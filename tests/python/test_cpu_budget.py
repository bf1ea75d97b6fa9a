"""num_threads=None is this rank's share of the CPUs the process may use: the affinity mask
and the cgroup quota, divided by the ranks on the node that the launcher names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from stoker import _core

# A child process reports its budget, the loader's threads and Arrow's CPU pool after a Loader.
_PROBE = """
import json, sys
import pyarrow as pa
import stoker
from stoker import _core
loader = stoker.Loader(sys.argv[1], batch_size=512)
sum(1 for _ in loader)
print(json.dumps({"budget": _core.read_cpu_budget(), "stats": loader.stats()["cpu_budget"],
                  "threads": loader.stats()["threads"], "arrow_cpu": pa.cpu_count()}))
"""

_LAUNCHER_VARS = ("LOCAL_WORLD_SIZE", "HOROVOD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                  "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                  "SLURM_NODEID")


def _probe(data: Path, env: dict[str, str] | None = None, cpus: str | None = None,
           preexec=None) -> dict:
    child_env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    child_env.update(env or {})
    command = [sys.executable, "-c", _PROBE, str(data)]
    if cpus is not None:
        command = ["taskset", "-c", cpus, *command]
    out = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=120,
                         preexec_fn=preexec, check=False)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_taskset_one_cpu_gives_one_thread(criteo: Path) -> None:
    report = _probe(criteo, cpus="0")
    assert report["budget"]["affinity"] == 1
    assert report["threads"] == 1
    assert report["stats"] == report["budget"]
    assert report["arrow_cpu"] == 1  # Arrow's global pool cut to the share as well


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_ranks_per_node_divide_the_cpus(criteo: Path) -> None:
    alone = _probe(criteo, cpus="0,1")
    assert alone["budget"]["affinity"] == 2 and alone["budget"]["ranks_per_node"] == 1
    assert alone["budget"]["ranks_from"] is None
    assert alone["budget"]["own_cpus"] is (os.cpu_count() > 2)  # all the host's: shared
    for name in ("LOCAL_WORLD_SIZE", "HOROVOD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                 "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"):
        shared = _probe(criteo, {name: "2"}, cpus="0,1")
        assert shared["budget"]["ranks_per_node"] == 2, name
        assert shared["budget"]["ranks_from"] == name
        assert shared["threads"] == 1 and shared["arrow_cpu"] == 1, name


def test_more_ranks_than_cpus_still_get_one_thread(criteo: Path) -> None:
    report = _probe(criteo, {"LOCAL_WORLD_SIZE": "64"}, cpus="0")
    assert report["budget"]["ranks_per_node"] == 64
    assert report["threads"] == 1


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_rank_pinned_to_cpus_of_its_own_keeps_them(criteo: Path) -> None:
    """A launcher that binds each rank to its own CPUs (numactl, Slurm's --cpu-bind) already
    split the node: the rank's CPUs are not divided by the ranks again."""
    report = _probe(criteo, {"LOCAL_WORLD_SIZE": "2"}, cpus="1")
    assert report["budget"]["own_cpus"] is True
    assert report["budget"]["cpus"] == 1 and report["threads"] == 1


def test_slurm_tasks_per_node_is_read_for_this_node(criteo: Path) -> None:
    # "2(x3),1": nodes 0-2 run 2 tasks, node 3 runs 1.
    for node, ranks in (("0", 2), ("2", 2), ("3", 1)):
        env = {"SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": node}
        report = _probe(criteo, env, cpus="0")
        assert report["budget"]["ranks_per_node"] == ranks, node
        assert report["budget"]["ranks_from"] == "SLURM_TASKS_PER_NODE"


def test_invalid_launcher_values_are_ignored(criteo: Path) -> None:
    report = _probe(criteo, {"LOCAL_WORLD_SIZE": "zero", "HOROVOD_LOCAL_SIZE": "-3"}, cpus="0")
    assert report["budget"]["ranks_per_node"] == 1
    assert report["budget"]["ranks_from"] is None


def test_explicit_num_threads_is_kept(criteo: Path) -> None:
    import stoker
    loader = stoker.Loader(criteo, batch_size=512, num_threads=3)
    assert loader.stats()["threads"] == 3


def test_cgroup_v2_quota_from_a_tree_of_its_own(tmp_path: Path) -> None:
    """A cgroup v2 hierarchy laid out like /sys/fs/cgroup: the process's own cgroup is the
    root here (as in a container with a cgroup namespace)."""
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    budget = _core.read_cpu_budget(str(tmp_path))
    assert budget["cgroup_quota"] == pytest.approx(1.5)
    assert budget["cpus"] == 1  # the whole CPUs 1.5 allows
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert _core.read_cpu_budget(str(tmp_path))["cgroup_quota"] is None


def test_cgroup_v1_quota_from_a_tree_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _core.read_cpu_budget(str(tmp_path))["cgroup_quota"] is None
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    budget = _core.read_cpu_budget(str(tmp_path))
    assert budget["cgroup_quota"] == pytest.approx(0.5)
    assert budget["cpus"] == 1 and budget["threads"] == 1  # never fewer than one


def _writable_cpu_cgroup() -> Path | None:
    """A fresh cgroup v1 "cpu" group when this process may make one (root, v1 mounted)."""
    root = Path("/sys/fs/cgroup/cpu")
    if not (root / "cpu.cfs_quota_us").exists() or os.geteuid() != 0:
        return None
    group = root / f"stoker-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_real_cgroup_quota_limits_the_threads(criteo: Path) -> None:
    """A real cgroup with a 1-CPU quota (cgroup v1 as this machine mounts it): the child
    moved into it sees both CPUs in its affinity mask but gets one thread."""
    group = _writable_cpu_cgroup()
    if group is None:
        pytest.skip("no writable cgroup v1 cpu controller here (needs root)")
    try:
        (group / "cpu.cfs_quota_us").write_text("100000")  # period 100000: one CPU
        procs = str(group / "cgroup.procs")

        def enter() -> None:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        report = _probe(criteo, cpus="0,1", preexec=enter)
    finally:
        group.rmdir()
    assert report["budget"]["affinity"] == 2
    assert report["budget"]["cgroup_quota"] == pytest.approx(1.0)
    assert report["threads"] == 1
