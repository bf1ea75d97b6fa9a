"""engine_cpus: the engine's own threads (workers, I/O executor) run on the CPUs given, the
caller's thread keeps its mask, the CPU budget counts the given CPUs, and a CPU outside the
affinity mask is an error naming the option."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import stoker


def _masks() -> dict[int, tuple[str, set[int]]]:
    """Each thread of this process: its name and the CPUs it may run on."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            out[int(tid)] = (name, os.sched_getaffinity(int(tid)))
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            continue
    return out


needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                               reason="needs two CPUs in the affinity mask")


@needs_two
def test_engine_threads_run_on_engine_cpus_and_the_caller_keeps_its_mask(criteo: Path) -> None:
    caller_mask = os.sched_getaffinity(0)
    engine = [max(caller_mask)]
    before = set(_masks())
    loader = stoker.Loader(criteo, batch_size=1024, seed=3, num_threads=2, engine_cpus=engine)
    batches = iter(loader)
    next(batches)
    new = {tid: entry for tid, entry in _masks().items() if tid not in before}
    names = [name for name, _ in new.values()]
    assert names.count("stoker-worker") == 2, names
    assert names.count("stoker-engine") >= 1, names  # the I/O executor's threads
    # Every thread the engine started runs on engine_cpus; jemalloc's purging threads are
    # the allocator's, started by whichever thread its first arena came from.
    outside = {tid: entry for tid, entry in new.items()
               if entry[0] != "jemalloc_bg_thd" and entry[1] != set(engine)}
    assert outside == {}, outside
    assert os.sched_getaffinity(0) == caller_mask
    assert loader.stats()["cpu_budget"]["affinity"] == 1
    assert sum(len(b["label"]) for b in batches) > 0
    assert os.sched_getaffinity(0) == caller_mask


@needs_two
def test_unset_engine_cpus_leaves_the_threads_unpinned(criteo: Path) -> None:
    mask = os.sched_getaffinity(0)
    before = set(_masks())
    loader = stoker.Loader(criteo, batch_size=1024, seed=3, num_threads=2)
    batches = iter(loader)  # kept: the epoch's workers live as long as it
    next(batches)
    workers = [cpus for tid, (name, cpus) in _masks().items()
               if tid not in before and name == "stoker-worker"]
    assert workers and all(cpus == mask for cpus in workers)


@needs_two
def test_a_pinned_caller_thread_does_not_pin_the_engine_with_engine_cpus(criteo: Path) -> None:
    # The caller's own mask is its business: a thread pinned to one CPU that makes a loader
    # on the other may, when both are in its mask at Make.
    mask = sorted(os.sched_getaffinity(0))
    seen: dict[str, object] = {}

    def run() -> None:
        loader = stoker.Loader(criteo, batch_size=1024, seed=3, num_threads=1,
                               engine_cpus=[mask[-1]])
        os.sched_setaffinity(0, {mask[0]})  # the trainer's thread, after making the loader
        before = set(_masks())
        batches = iter(loader)
        next(batches)
        seen["workers"] = [cpus for tid, (name, cpus) in _masks().items()
                           if tid not in before and name == "stoker-worker"]
        seen["own"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen["workers"] == [{mask[-1]}]
    assert seen["own"] == {mask[0]}


def test_a_cpu_outside_the_mask_is_an_error_naming_the_option(criteo: Path) -> None:
    outside = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(ValueError, match=rf"engine_cpus: CPU {outside} is not in this thread's "
                                         r"affinity mask"):
        stoker.Loader(criteo, batch_size=1024, engine_cpus=[outside])
    with pytest.raises(ValueError, match="engine_cpus: CPU ids are >= 0, got -1"):
        stoker.Loader(criteo, batch_size=1024, engine_cpus=[-1])
    with pytest.raises(ValueError, match="engine_cpus: CPU 0 is listed twice"):
        stoker.Loader(criteo, batch_size=1024, engine_cpus=[0, 0])
