"""The CPUs this process may use and this rank's share of them, as the engine reads them
(stoker/cpu_budget.h): what ``num_threads=None`` resolves to."""

from __future__ import annotations

from typing import Any

from stoker import _core


def cpu_budget() -> dict[str, Any]:
    """``affinity``: CPUs in the affinity mask; ``cgroup_quota``: the cgroup's CPU quota in
    CPUs (None: none); ``cpus``: the whole CPUs both allow; ``ranks_per_node`` and
    ``ranks_from``: the ranks sharing this node and the launcher variable that said so
    (``LOCAL_WORLD_SIZE``, ``HOROVOD_LOCAL_SIZE``, ``OMPI_COMM_WORLD_LOCAL_SIZE``,
    ``MPI_LOCALNRANKS``, ``SLURM_NTASKS_PER_NODE``, ``SLURM_TASKS_PER_NODE``, or where a
    launcher set ``LOCAL_RANK`` but no count — Lightning's — ``WORLD_SIZE``, an upper bound;
    None: none);
    ``own_cpus``: the affinity mask is narrower than the host's CPUs, so the launcher gave
    this rank CPUs of its own; ``threads``: ``cpus`` then, else ``cpus // ranks_per_node``,
    at least 1."""
    return _core.read_cpu_budget()
