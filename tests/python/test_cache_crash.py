"""Crash safety of the disk cache, repeated: a process filling the cache is SIGKILLed at random
moments, 100 times, and a later epoch still delivers exactly the batches of a cache-less run,
with no entry found damaged.

The writer is forked from a process that has already imported Stoker (and has started no
engine threads), so each of the 100 rounds costs a fork, not an interpreter start."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import stoker
from conftest import assert_same_batches

KW = {"columns": ["row_id", "label", "I1", "C1"], "batch_size": 500, "seed": 3,
      "shuffle_window": 3000, "num_threads": 2}
ROUNDS = int(os.environ.get("STOKER_CRASH_ROUNDS", "100"))

# Reads a line per round from stdin, forks a writer that loops over epochs filling the cache
# (its limit is half the data, so LRU evicts and rewrites units all the time), prints the
# writer's pid, and reaps it once the test has killed it.
ZYGOTE = """
    import os, sys, stoker
    source, cache, limit, kw = sys.argv[1], sys.argv[2], int(sys.argv[3]), eval(sys.argv[4])
    for line in sys.stdin:
        pid = os.fork()
        if pid == 0:
            epoch = 0
            while True:
                loader = stoker.Loader(source, cache_dir=cache, cache_limit_bytes=limit, **kw)
                loader.set_epoch(epoch)
                for _ in loader:
                    pass
                epoch += 1
        print(pid, flush=True)
        os.waitpid(pid, 0)
"""


def cache_bytes(cache: Path) -> int:
    return sum(p.stat().st_size for p in cache.rglob("*.stkc"))


@pytest.mark.slow
def test_writer_killed_at_random_moments_never_leaves_a_wrong_entry(criteo: Path,
                                                                    tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    list(stoker.Loader(criteo, cache_dir=tmp_path / "full", **KW))
    limit = cache_bytes(tmp_path / "full") // 2
    zygote = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(ZYGOTE), str(criteo), str(cache), str(limit),
         repr(KW)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rng = random.Random(2024)
    try:
        for _ in range(ROUNDS):
            zygote.stdin.write("go\n")
            zygote.stdin.flush()
            pid = int(zygote.stdout.readline())
            time.sleep(rng.uniform(0.0, 0.3))
            os.kill(pid, signal.SIGKILL)
    finally:
        zygote.stdin.close()
        zygote.wait(timeout=60)
    assert zygote.returncode == 0
    assert cache_bytes(cache) > 0, "the writers never wrote an entry"

    # Two epochs over what the killed writers left: every batch exact, nothing damaged.
    for epoch in range(2):
        plain = stoker.Loader(criteo, **KW)
        plain.set_epoch(epoch)
        loader = stoker.Loader(criteo, cache_dir=cache, **KW)
        loader.set_epoch(epoch)
        assert_same_batches(list(plain), list(loader))
        stats = loader.stats()
        assert stats["cache_corrupt"] == 0, stats
        assert stats["cache_hits"] > 0
