"""No hang on the way out: an exception in a batch_transform, a KeyboardInterrupt, an abandoned
iterator, and a fork after the loader started each end within a bounded time, with the
original error raised and the loader's threads gone. Each case runs in its own Python process
with a timeout, checked by its exit status and output."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TIMEOUT = 60  # seconds a case may take; a hang fails the test instead of the suite

# What every case starts with. A case reads one epoch with its loader before it measures the
# baseline (warm()), which the loader's threads must return to once the case's epoch is
# closed. The loader's threads are counted by name: the engine's workers (stoker-worker) and
# the batch_transform thread; the libraries' own pools (Arrow's I/O threads, the allocator's)
# grow on demand and are not the loader's to join.
PRELUDE = """
import gc, os, sys, threading, time
import stoker
from stoker.cli import procfs as _procfs

def threads():
    workers = sum(name == "stoker-worker" for name in _procfs.thread_names().values())
    pump = sum(t.name == "stoker-batch-transform" for t in threading.enumerate())
    return workers + pump

def settled(base, seconds=10):
    # Threads are joined synchronously; allow the OS a moment to reap the exited ones.
    deadline = time.monotonic() + seconds
    while threads() > base and time.monotonic() < deadline:
        time.sleep(0.05)
    return threads()

def warm(loader):
    for _ in loader:
        pass
    time.sleep(0.2)  # let the OS reap the threads of the epoch just closed
    return threads()

SOURCE = sys.argv[1]
OPTIONS = dict(batch_size=250, columns=["row_id", "I1"], num_threads=3, seed=1)
"""


def run_case(source: Path, body: str) -> subprocess.CompletedProcess:
    script = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script, str(source)], capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)


def test_an_error_in_batch_transform_is_raised_and_the_threads_are_joined(criteo: Path) -> None:
    result = run_case(criteo, """
        def transform(batch):
            transform.calls += 1
            if transform.calls == 3:
                raise ValueError("boom in batch 3")
            return batch
        transform.calls = -10**6  # the warm-up epoch passes
        loader = stoker.Loader(SOURCE, batch_transform=transform, **OPTIONS)
        base = warm(loader)
        transform.calls = 0
        try:
            for batch in loader:
                pass
        except ValueError as error:
            print("caught:", error)
        print("threads back:", settled(base) <= base)
        transform.calls = -10**6
        for batch in loader:  # the loader still works for the next epoch
            pass
        print("next epoch read")
        transform.calls = 0
        for batch in loader:  # uncaught: the original error ends the process
            pass
    """)
    assert result.returncode == 1, result.stderr
    assert "caught: boom in batch 3" in result.stdout
    assert "threads back: True" in result.stdout
    assert "next epoch read" in result.stdout
    assert result.stderr.rstrip().endswith("ValueError: boom in batch 3")


@pytest.mark.parametrize("transform", [False, True])
def test_keyboard_interrupt_ends_the_loop_and_the_process(criteo: Path, transform: bool) -> None:
    result = run_case(criteo, f"""
        import signal
        # A job started in the background of a non-interactive shell (nohup ... &) ignores
        # SIGINT, and a Python started so keeps ignoring it: take Python's own handler, as an
        # interactive run has.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        slow = lambda batch: (time.sleep(0.01), batch)[1]
        loader = stoker.Loader(SOURCE, batch_transform=slow if {transform} else None, **OPTIONS)
        base = warm(loader)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            while True:  # epoch after epoch until Ctrl-C
                for batch in loader:
                    pass
        except KeyboardInterrupt:
            print("interrupted")
        gc.collect()
        print("threads back:", settled(base) <= base)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        while True:  # uncaught this time: the process ends with it
            for batch in loader:
                pass
    """)
    assert "interrupted" in result.stdout, result.stderr
    assert "threads back: True" in result.stdout
    assert result.returncode in (-2, 130), result.returncode  # killed by SIGINT, as Python does
    assert "KeyboardInterrupt" in result.stderr


@pytest.mark.parametrize("transform", [False, True])
def test_an_abandoned_iterator_is_collected_and_joins_its_threads(criteo: Path,
                                                                  transform: bool) -> None:
    result = run_case(criteo, f"""
        loader = stoker.Loader(SOURCE, batch_transform=(lambda b: b) if {transform} else None,
                               **OPTIONS)
        base = warm(loader)
        it = iter(loader)
        next(it)
        time.sleep(0.3)  # the workers fill the prefetch queue and wait
        print("threads running:", threads() > base)
        del it
        gc.collect()
        print("threads back:", settled(base) <= base)
        it = iter(loader)  # abandoned and left to the interpreter's exit
        next(it)
    """)
    assert result.returncode == 0, result.stderr
    assert "threads running: True" in result.stdout
    assert "threads back: True" in result.stdout


FORK_CASE = """
loader = stoker.Loader(SOURCE, batch_transform={transform}, **OPTIONS)
it = iter(loader)
next(it)
pid = os.fork()
if pid == 0:
    try:
        next(it)
        print("child: the parent's epoch gave a batch", flush=True)
    except RuntimeError as error:
        print("child: clear error:", error, flush=True)
    print("child: new epoch of", sum(1 for _ in loader), "batches", flush=True)
    sys.exit(0)  # a normal exit: atexit closes the parent's epoch here too
_, status = os.waitpid(pid, 0)
print("parent: child exit", os.waitstatus_to_exitcode(status), flush=True)
print("parent: still reading,", sum(1 for _ in it), "more batches", flush=True)
"""


@pytest.mark.parametrize("transform", ["None", "lambda b: b"])
def test_a_fork_after_the_loader_started_neither_hangs_nor_crashes(criteo: Path,
                                                                   transform: str) -> None:
    result = run_case(criteo, FORK_CASE.format(transform=transform))
    assert result.returncode == 0, result.stderr
    assert "child: clear error: this epoch was started in process" in result.stdout
    assert "Start a new iter(loader) in the child" in result.stdout
    assert "child: new epoch of 80 batches" in result.stdout
    assert "parent: child exit 0" in result.stdout
    assert "parent: still reading, 79 more batches" in result.stdout
    # No error in either process. (With a batch_transform, nanobind may report objects the
    # child never freed: the parent's transform thread held them and does not exist there.)
    assert "Traceback" not in result.stderr and "Error" not in result.stderr


def test_multiprocessing_fork_workers_and_torch_dataloader_workers(criteo: Path) -> None:
    pytest.importorskip("torch")
    result = run_case(criteo, """
        import multiprocessing as mp
        import torch

        loader = stoker.Loader(SOURCE, **OPTIONS)
        it = iter(loader)
        next(it)

        def old_epoch(out):
            try:
                next(it)
                out.put("old epoch read")
            except RuntimeError as error:
                out.put("clear error" if "after a fork" in str(error) else repr(error))

        def new_epoch(out):
            out.put(sum(len(b["row_id"]) for b in loader))

        ctx = mp.get_context("fork")
        for target in (old_epoch, new_epoch):
            out = ctx.Queue()
            worker = ctx.Process(target=target, args=(out,))
            worker.start()
            print(target.__name__, out.get(timeout=30), flush=True)
            worker.join(30)
            print(target.__name__, "exit", worker.exitcode, flush=True)

        class Rows(torch.utils.data.IterableDataset):
            def __iter__(self):
                info = torch.utils.data.get_worker_info()
                for i, batch in enumerate(loader):
                    if i % info.num_workers == info.id:
                        yield batch["row_id"]

        rows = torch.utils.data.DataLoader(Rows(), batch_size=None, num_workers=2,
                                           multiprocessing_context="fork")
        ids = torch.cat(list(rows))
        print("dataloader rows", len(ids), "distinct", len(set(ids.tolist())), flush=True)
        print("parent epoch continues:", sum(1 for _ in it), flush=True)
    """)
    assert result.returncode == 0, result.stderr
    assert "old_epoch clear error" in result.stdout
    assert "old_epoch exit 0" in result.stdout
    assert "new_epoch 20000" in result.stdout and "new_epoch exit 0" in result.stdout
    assert "dataloader rows 20000 distinct 20000" in result.stdout
    assert "parent epoch continues: 79" in result.stdout
    assert "Traceback" not in result.stderr
