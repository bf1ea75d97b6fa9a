"""What the kernel says about this process and its host, read from /proc and /sys for
`stoker doctor`: its threads by name and their run-queue delay, its page faults, pressure
stall information (PSI), swap and transparent huge pages. Linux only; every reader returns
None (or leaves a value out) where the kernel lacks the file."""

from __future__ import annotations

import collections
import re
import time
from pathlib import Path
from typing import Any

PROC = Path("/proc")
PRESSURE_RESOURCES = ("cpu", "memory", "io")
THP = Path("/sys/kernel/mm/transparent_hugepage")


def thread_names() -> dict[int, str]:
    """This process's threads: id -> name (/proc/self/task/*/comm); a thread that ends while
    being read is left out."""
    names = {}
    for task in (PROC / "self" / "task").iterdir():
        try:
            names[int(task.name)] = (task / "comm").read_text().strip()
        except (OSError, ValueError):
            continue
    return names


def thread_census(names: dict[int, str]) -> dict[str, int]:
    """Threads per name, with trailing numbers and separators dropped so that pools whose
    threads are numbered (`pool-3`, `worker_12`) count together; most numerous first."""
    counts = collections.Counter(re.sub(r"[-_.:#0-9]+$", "", name) or name
                                 for name in names.values())
    return dict(counts.most_common())


def run_queue_waits() -> dict[int, tuple[str, int, int]]:
    """Each thread's id -> (name, ns it has run, ns it has waited runnable on a run queue),
    from /proc/self/task/*/schedstat (the run-queue delay); empty when the kernel lacks
    schedstat."""
    out = {}
    for tid, name in thread_names().items():
        try:
            fields = (PROC / "self" / "task" / str(tid) / "schedstat").read_text().split()
            out[tid] = (name, int(fields[0]), int(fields[1]))
        except (OSError, ValueError, IndexError):
            continue
    return out


class RunQueueSampler:
    """Samples every thread's schedstat now and then (`sample`), keeping each thread's first
    and last reading, so threads that start and end during the run (an epoch's workers) are
    measured over the part of it they lived."""

    def __init__(self, interval: float = 0.1) -> None:
        self._interval = interval
        self._next = 0.0
        # tid -> (name, first (t, run, wait), last (t, run, wait))
        self._threads: dict[int, tuple[str, tuple[float, int, int], tuple[float, int, int]]] = {}

    def sample(self, *, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now < self._next:
            return
        self._next = now + self._interval
        for tid, (name, run, wait) in run_queue_waits().items():
            seen = self._threads.get(tid)
            reading = (now, run, wait)
            self._threads[tid] = (name, seen[1] if seen else reading, reading)

    def per_thread(self) -> list[dict[str, Any]]:
        """Each thread seen twice or more: name, tid, seconds observed, run and run-queue wait
        seconds in that time, and wait_share (wait / seconds observed)."""
        out = []
        for tid, (name, first, last) in self._threads.items():
            seconds = last[0] - first[0]
            if seconds <= 0:
                continue
            wait = (last[2] - first[2]) / 1e9
            out.append({"tid": tid, "name": name, "seconds": seconds,
                        "run_seconds": (last[1] - first[1]) / 1e9, "wait_seconds": wait,
                        "wait_share": wait / seconds})
        return out


def page_faults() -> tuple[int, int]:
    """(minor, major) page faults of this process so far (/proc/self/stat fields 10 and 12)."""
    stat = (PROC / "self" / "stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[7]), int(fields[9])


def pressure(root: Path = PROC / "pressure") -> dict[str, dict[str, float]] | None:
    """Pressure stall information: resource -> {"some": total µs, "full": total µs} (time
    some / all non-idle tasks were stalled on it since boot); None when the kernel lacks PSI
    (CONFIG_PSI off, or booted with psi=0)."""
    out = {}
    for resource in PRESSURE_RESOURCES:
        try:
            lines = (root / resource).read_text().splitlines()
        except OSError:
            continue
        totals = {}
        for line in lines:
            kind, *fields = line.split()
            values = dict(field.split("=", 1) for field in fields)
            totals[kind] = float(values["total"])
        out[resource] = totals
    return out or None


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out = {}
    for line in (PROC / "meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        parts = value.split()
        if parts:
            out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


def swap_pages() -> tuple[int, int]:
    """(pages swapped in, pages swapped out) since boot (/proc/vmstat pswpin, pswpout)."""
    counts = dict(line.split() for line in (PROC / "vmstat").read_text().splitlines())
    return int(counts.get("pswpin", 0)), int(counts.get("pswpout", 0))


def transparent_huge_pages() -> dict[str, str | None]:
    """The selected modes of /sys/kernel/mm/transparent_hugepage/{enabled,defrag} ("always",
    "madvise", "never", ...); None where the file is missing."""
    out: dict[str, str | None] = {}
    for name in ("enabled", "defrag"):
        try:
            selected = re.search(r"\[(\S+)\]", (THP / name).read_text())
            out[name] = selected.group(1) if selected else None
        except OSError:
            out[name] = None
    return out
