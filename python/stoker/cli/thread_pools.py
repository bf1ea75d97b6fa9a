"""The threads of this process that compete for its CPUs: Stoker's workers, Arrow's pools,
torch's intra-op threads, OpenMP and MKL settings, and whatever else ran during a measured
run (`stoker doctor`)."""

from __future__ import annotations

import os
import sys
from typing import Any

from stoker.cli import procfs as _procfs

# Stoker's named threads (src/exec/task_pool.h, src/telemetry/fault_probe.h).
STOKER_WORKER = "stoker-worker"
STOKER_PROBE = "stoker-probe"
# A thread that ran this share of the time it was observed counts as busy.
BUSY_SHARE = 0.2
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def pools(threads: list[dict[str, Any]], *, stoker_threads: int) -> dict[str, Any]:
    """What competes for the CPUs, from the per-thread readings of a run
    (`RunQueueSampler.per_thread`) and the loader's configured worker count:

    ``stoker_workers`` (threads named stoker-worker seen), ``stoker_threads`` (configured),
    ``arrow_cpu_pool`` / ``arrow_io_pool`` (the capacity of pyarrow's pools, whose threads
    are unnamed), ``torch_intra_op`` (``torch.get_num_threads()`` when torch is imported, else
    None), ``env`` (OMP_NUM_THREADS and friends as set), ``other_busy`` (other threads that ran
    at least BUSY_SHARE of the time they were seen, with their names), ``threads_seen``,
    ``by_name`` (threads seen per name, numbered pools counted together) and
    ``compute_threads``: Stoker's workers + torch's intra-op threads + the other busy threads,
    the threads that want a CPU at once.
    """
    import pyarrow as pa

    own = {STOKER_WORKER, STOKER_PROBE}
    other_busy = sorted(
        (thread["name"] for thread in threads
         if thread["name"] not in own and thread["run_seconds"] >= BUSY_SHARE * thread["seconds"]),
    )
    torch_threads = _torch_threads()
    workers_seen = sum(thread["name"] == STOKER_WORKER for thread in threads)
    return {
        "stoker_workers": workers_seen,
        "stoker_threads": stoker_threads,
        "arrow_cpu_pool": pa.cpu_count(),
        "arrow_io_pool": pa.io_thread_count(),
        "torch_intra_op": torch_threads,
        "env": {name: os.environ[name] for name in THREAD_ENV if name in os.environ},
        "other_busy": other_busy,
        "threads_seen": len(threads),
        "by_name": _procfs.thread_census({t["tid"]: t["name"] for t in threads}),
        "compute_threads": max(workers_seen, stoker_threads) + (torch_threads or 0)
        + len(other_busy),
    }


def _torch_threads() -> int | None:
    """torch's intra-op threads, when the program imported torch (never imported here)."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None
