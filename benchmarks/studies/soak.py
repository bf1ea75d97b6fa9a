"""Soak: hundreds of epochs on small data, and whether resident memory, open file descriptors
and threads stay flat (docs/reliability.md shows the chart and the figures).

    python benchmarks/studies/soak.py run --epochs 300 --json soak.json
    python benchmarks/studies/soak.py chart soak.json docs/img/soak.png   # needs matplotlib

Every epoch picks, from a seeded generator, 1-8 threads, the disk cache on or off, and in
half the epochs a break at a random batch followed by a fresh Loader resumed from the state
dict; every tenth epoch also reads one epoch from a `stoker serve` child through a
RemoteLoader. Each epoch is checked (every row exactly once: count and sum of row ids), then
this process's and the server's resident bytes, descriptors and threads are sampled."""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median
from typing import Any

from stoker_devtools.bench import write_json

COLUMNS = ["row_id", "label", "I1", "C1"]
OPTIONS = {"batch_size": 512, "seed": 9, "shuffle_window": 4000}
ROWS = 20_000


def usage(pid: str | int = "self") -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))
    threads = int(re.search(r"^Threads:\s+(\d+)", status, re.MULTILINE).group(1))
    return {"rss": rss_kb * 1024, "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
            "threads": threads}


def start_server(source: Path) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "stoker", "serve", str(source), "--port", "0",
         "--batch-size", str(OPTIONS["batch_size"]), "--seed", str(OPTIONS["seed"]),
         "--shuffle-window", str(OPTIONS["shuffle_window"]), "--columns", ",".join(COLUMNS),
         "--num-threads", "2"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"listening on (\S+://[\d.]+:\d+)", server.stdout.readline())
    if not match:
        server.kill()
        raise RuntimeError("stoker serve did not start")
    return server, match.group(1)


def check_epoch(ids_count: int, ids_sum: int, epoch: int) -> None:
    expected_sum = ROWS * (ROWS - 1) // 2
    if (ids_count, ids_sum) != (ROWS, expected_sum):
        raise AssertionError(f"epoch {epoch}: {ids_count} rows with id sum {ids_sum}, "
                             f"expected {ROWS} and {expected_sum}")


def local_epoch(stoker: Any, source: Path, cache: Path, epoch: int,
                rng: random.Random) -> dict[str, Any]:
    threads = rng.randint(1, 8)
    cached = rng.random() < 0.5
    extra = {"num_threads": threads, "cache_dir": cache if cached else None}
    loader = stoker.Loader(source, columns=COLUMNS, **OPTIONS, **extra)
    loader.set_epoch(epoch)
    count = total = 0
    break_at = rng.randrange(len(loader)) if rng.random() < 0.5 else None
    it = iter(loader)
    for i, batch in enumerate(it):
        count += len(batch["row_id"])
        total += int(batch["row_id"].sum())
        if i == break_at:
            break
    if break_at is not None:  # a job stopped here; a new one resumes from its checkpoint
        state = loader.state_dict()
        del it, loader
        loader = stoker.Loader(source, columns=COLUMNS, **OPTIONS, **extra)
        loader.load_state_dict(state)
        for batch in loader:
            count += len(batch["row_id"])
            total += int(batch["row_id"].sum())
    check_epoch(count, total, epoch)
    return {"threads": threads, "cache": cached, "break_at": break_at}


def remote_epoch(stoker: Any, location: str, epoch: int) -> None:
    remote = stoker.RemoteLoader([location], **OPTIONS)
    remote.set_epoch(epoch)
    count = total = 0
    for batch in remote:
        count += len(batch["row_id"])
        total += int(batch["row_id"].sum())
    check_epoch(count, total, epoch)


def run(args: argparse.Namespace) -> dict[str, Any]:
    import stoker
    from stoker.cli import gen as _gen

    work = Path(tempfile.mkdtemp(prefix="stoker-soak-"))
    source = work / "data"
    _gen.generate(source, _gen.GenOptions(preset="criteo", rows=ROWS, files=4,
                                          row_group_size=1500), progress=False)
    server, location = start_server(source)
    rng = random.Random(args.seed)
    samples = []
    started = time.monotonic()
    try:
        for epoch in range(args.epochs):
            chosen = local_epoch(stoker, source, work / "cache", epoch, rng)
            remote = epoch % 10 == 0
            if remote:
                remote_epoch(stoker, location, epoch)
            samples.append({"epoch": epoch, **chosen, "remote": remote,
                            "seconds": round(time.monotonic() - started, 2),
                            "client": usage(), "server": usage(server.pid)})
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"epochs": args.epochs, "rows": ROWS, "seed": args.seed, "samples": samples,
            "summary": summarize(samples)}


def summarize(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Each measure's median over the first and the last tenth of the run (after a warm-up
    tenth, in which caches and pools fill), and the largest value seen."""
    n = len(samples)
    tenth = max(1, n // 10)
    out: dict[str, Any] = {}
    for who in ("client", "server"):
        for key in ("rss", "fds", "threads"):
            values = [s[who][key] for s in samples]
            out[f"{who}_{key}"] = {"early": median(values[tenth:2 * tenth] or values[:tenth]),
                                   "late": median(values[-tenth:]), "max": max(values)}
    return out


def chart(results: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = results["samples"]
    epochs = [s["epoch"] for s in samples]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, key, label, scale in zip(axes, ("rss", "fds", "threads"),
                                     ("resident memory, MB", "open descriptors", "threads"),
                                     (1e-6, 1, 1)):
        for who, color in (("client", "#1f77b4"), ("server", "#d62728")):
            ax.plot(epochs, [s[who][key] * scale for s in samples], color=color, label=who,
                    linewidth=1)
        ax.set_xlabel("epoch")
        ax.set_title(label)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"Soak: {results['epochs']} epochs of {results['rows']:,} rows "
                 "(threads 1-8, cache on/off, breaks and resumes; client = the trainer "
                 "process, server = stoker serve)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=130)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run")
    run_parser.add_argument("--epochs", type=int, default=300)
    run_parser.add_argument("--seed", type=int, default=1)
    run_parser.add_argument("--json", type=Path, required=True)
    chart_parser = sub.add_parser("chart")
    chart_parser.add_argument("json", type=Path)
    chart_parser.add_argument("png", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        results = run(args)
        write_json(args.json, results, indent=None)  # thousands of samples: one line
        print(json.dumps(results["summary"], indent=1))
    else:
        chart(json.loads(args.json.read_text()), args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
