"""The CPUs this process may use: its affinity mask and its cgroup's CPU quota."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any


def cgroup_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """CPUs the process's cgroup may use (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us``
    over ``cpu.cfs_period_us``); None when unlimited or unknown."""
    try:
        line = (root / _own_cgroup() / "cpu.max").read_text().split()
        if line and line[0] != "max":
            return int(line[0]) / int(line[1])
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return quota / period if quota > 0 else None
    except (OSError, ValueError):
        return None


def _own_cgroup() -> str:
    # "0::/path" on cgroup v2.
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return line[3:].lstrip("/")
    return ""


def cpu_budget() -> dict[str, Any]:
    """``affinity``: CPUs in the affinity mask; ``cgroup_quota``: the cgroup's CPU quota
    (None: none); ``cpus``: the whole CPUs both allow."""
    affinity = len(os.sched_getaffinity(0))
    quota = cgroup_quota()
    cpus = affinity if quota is None else max(1, min(affinity, math.floor(quota)))
    return {"affinity": affinity, "cgroup_quota": quota, "cpus": cpus}
