"""A share of one CPU for some threads of a process: a cgroup v1 `cpu` group with a CFS quota,
made on entry and removed on exit, and a watcher that keeps a process's threads in it — all
but those it spares (the main thread, say). It stands in for a host whose CPUs have little
time left for loading: the loader's threads run at most `share` of each 10 ms period, summed,
while the training loop's thread runs as it would.

    with CpuQuota(0.4) as quota:
        child = subprocess.Popen([...])
        quota.hold(child.pid, spare={child.pid})  # every thread but the main one
        child.wait()

The watcher moves the threads it finds every 20 ms, so a thread started later runs outside
the quota for at most that long. It works from outside the process (from /proc), so the
process may run in another mount namespace (`ip netns exec` hides /sys/fs/cgroup). Moving
single threads needs cgroup v1's cpu controller (v2 moves whole processes unless in threaded
mode, which this does not set up); needs root. `available()` says why a quota cannot be made
here, or None. The standard library only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Set as AbstractSet
from pathlib import Path
from types import TracebackType
from typing import Self

__all__ = ["CpuQuota", "available"]

PERIOD_US = 10_000  # short periods: a throttled thread waits at most the rest of 10 ms
WATCH_S = 0.02
_V1 = Path("/sys/fs/cgroup/cpu")


def available() -> str | None:
    """Why a per-thread CPU quota cannot be made on this machine, or None."""
    if os.geteuid() != 0:
        return "needs root (a cgroup of its own)"
    if not (_V1 / "cpu.cfs_quota_us").exists():
        return "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu (single threads cannot be " \
               "moved into a v2 cgroup that is not threaded)"
    if not os.access(_V1, os.W_OK):
        return f"{_V1} is not writable"
    return None


class CpuQuota:
    """A cgroup whose threads get `share` (0 < share <= 64) CPUs' worth of time, summed."""

    def __init__(self, share: float, name: str | None = None) -> None:
        if not 0 < share <= 64:
            raise ValueError(f"share: a CPU share in (0, 64], got {share}")
        self.share = share
        self.name = name or f"stoker-quota-{os.getpid()}"
        self.path: Path | None = None
        self._stop = threading.Event()
        self._watchers: list[threading.Thread] = []

    def open(self) -> Self:
        why = available()
        if why is not None:
            raise RuntimeError(f"CpuQuota: {why}")
        self.path = _V1 / self.name
        self.path.mkdir(exist_ok=True)
        (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (self.path / "cpu.cfs_quota_us").write_text(str(max(1000, round(self.share * PERIOD_US))))
        return self

    def hold(self, pid: int, spare: AbstractSet[int] = frozenset()) -> None:
        """Keeps process `pid`'s threads, but those in `spare`, in the quota until it ends."""
        if self.path is None:
            raise RuntimeError("CpuQuota: open it first")
        tasks = self.path / "tasks"
        held: set[int] = set()

        def watch() -> None:
            while not self._stop.is_set():
                try:
                    threads = {int(t) for t in os.listdir(f"/proc/{pid}/task")}
                except (FileNotFoundError, ProcessLookupError):
                    return
                for tid in sorted(threads - held - set(spare)):
                    try:
                        tasks.write_text(str(tid))
                        held.add(tid)
                    except OSError:  # the thread ended meanwhile
                        pass
                held.intersection_update(threads)
                self._stop.wait(WATCH_S)

        watcher = threading.Thread(target=watch, name=f"quota-watch-{pid}", daemon=True)
        watcher.start()
        self._watchers.append(watcher)

    def throttled(self) -> dict[str, float]:
        """How often the quota held its threads back: periods, throttled periods, seconds."""
        if self.path is None:
            return {}
        stat = dict(line.split() for line in (self.path / "cpu.stat").read_text().splitlines())
        return {"periods": int(stat.get("nr_periods", 0)),
                "throttled_periods": int(stat.get("nr_throttled", 0)),
                "throttled_seconds": round(int(stat.get("throttled_time", 0)) / 1e9, 3)}

    def close(self) -> None:
        """Stops the watchers and removes the cgroup (a thread still in it is moved back to
        the root group first: a cgroup with a task cannot be removed)."""
        self._stop.set()
        for watcher in self._watchers:
            watcher.join()
        self._watchers.clear()
        if self.path is None:
            return
        for tid in (self.path / "tasks").read_text().split():
            try:
                (_V1 / "tasks").write_text(tid)
            except OSError:
                pass
        try:
            self.path.rmdir()
        except OSError:
            pass
        self.path = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
