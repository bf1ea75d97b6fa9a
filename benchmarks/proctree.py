"""A process and everything it started, read from /proc: the measurements' CPU time and memory
cover a loader's worker processes (PyTorch DataLoader workers, Ray's raylet and workers), not
just the process that iterates."""

from __future__ import annotations

import os
import resource

__all__ = ["CLOCK_TICKS", "descendants", "process_table", "rss_bytes", "tree_cpu_seconds"]

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process, its reaped children, and every live
    descendant."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    table = process_table()
    below = descendants(os.getpid(), table)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime + sum(
        table[pid][1] for pid in below
    )


def process_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds so far) for every live process, from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = _read_stat(int(name))
            if stat is not None:
                # Fields 4, 14 and 15 of /proc/PID/stat: ppid, utime, stime.
                table[int(name)] = (int(stat[1]), (int(stat[11]) + int(stat[12])) / CLOCK_TICKS)
    return table


def descendants(root: int, table: dict[int, tuple[int, float]] | None = None) -> list[int]:
    """Every live process below `root`, from the parent ids of `table` (default: now)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in (process_table() if table is None else table).items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        below = children.get(todo.pop(), [])
        found += below
        todo += below
    return found


def rss_bytes(pid: int) -> int:
    """The process's resident memory (/proc/PID/statm), 0 if it is gone. Pages shared between
    processes (libraries, a forked parent's pages, shared memory) count in each of them."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_BYTES
    except (OSError, IndexError):
        return 0


def _read_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat from the state on (field 3: state, ppid, ...), or None if
    the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()
