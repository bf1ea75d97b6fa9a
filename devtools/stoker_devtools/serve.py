"""`stoker serve` in a child process on a loopback ephemeral port, for the serve tests; and a
live process's resident memory, descriptors and threads, read from /proc."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

COLUMNS = ["row_id", "label", "I1", "C1"]
OPTIONS = {"batch_size": 700, "seed": 21, "shuffle_window": 4000}


class Server:
    """`stoker serve` in a child process."""

    def __init__(self, source: Path | str, *extra: str, port: int = 0,
                 mixture: bool = False) -> None:
        """`source` with the COLUMNS; with `mixture`, no source and no columns (`extra` gives
        --mixture and its spec, whose sources choose their columns)."""
        what = [] if mixture else [str(source), "--columns", ",".join(COLUMNS)]
        self.args = [sys.executable, "-m", "stoker", "serve", *what, "--port", str(port),
                     "--batch-size", str(OPTIONS["batch_size"]), "--seed", str(OPTIONS["seed"]),
                     "--shuffle-window", str(OPTIONS["shuffle_window"]), "--num-threads", "1",
                     "--chunk-batches", "3", *extra]
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"listening on (\S+)://([\d.]+):(\d+)", line)
        assert match, line + self.process.stderr.read()
        self.scheme, self.host, self.port = match.group(1), match.group(2), int(match.group(3))
        self.args[self.args.index("--port") + 1] = str(self.port)  # a restart reuses it

    @property
    def location(self) -> str:
        host = "localhost" if self.scheme == "grpc+tls" else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


def spawn(source: str, *flags: str, prefix: Sequence[str] = ()) -> tuple[subprocess.Popen, str]:
    """`stoker serve SOURCE --port 0 FLAGS` after `prefix` (e.g. taskset -c 1), for the
    benchmarks: the process and its location, once it listens."""
    process = subprocess.Popen(
        [*prefix, sys.executable, "-m", "stoker", "serve", source, "--port", "0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"listening on (\S+)", process.stdout.readline())
    assert match, "server did not start"
    return process, match.group(1)


def process_usage(pid: int) -> dict[str, int]:
    """Resident bytes, open descriptors, threads, and Stoker's worker threads (named
    stoker-worker) of a live process, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE).group(1))
    workers = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            workers += (task / "comm").read_text().strip() == "stoker-worker"
        except FileNotFoundError:  # the thread ended while we looked
            pass
    return {"rss": rss_kb * 1024, "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
            "threads": threads, "workers": workers}
