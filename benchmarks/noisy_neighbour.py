"""The trainer's own cores: a training loop's step time on the main thread (a fixed
single-thread torch step), alone and with Stoker reading at full rate in the same process, p50
and p99 over `--steps` steps (docs/benchmarks.md, "The trainer's own cores").

The step is a matrix product chain sized to take about `--step-ms` on one thread, with
torch.set_num_threads(1), as a trainer's launch thread does its own work. "With Stoker": a
second Python thread drains a shuffled Loader epoch after epoch (the engine's workers at full
rate, num_threads as given, default the engine's CPU share) while the main thread steps; the
batches are dropped. The two cases alternate `--repeats` times. What SPDL's "noisy neighbour"
describes is the ratio of the p99s: the engine's threads taking the trainer's core at the wrong
moment.

    python benchmarks/noisy_neighbour.py [--data DIR] [--steps 3000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import stoker
import torch
from stoker.cli import gen
from stoker_devtools.bench import write_json


def make_step(step_ms: float) -> Any:
    """A step of about `step_ms` on one thread: a chain of products of a square matrix."""
    torch.set_num_threads(1)
    a = torch.randn(192, 192)

    def step(links: int) -> None:
        x = a
        for _ in range(links):
            x = torch.tanh(x @ a)

    links = 1
    while True:  # the links that take step_ms, measured once
        started = time.perf_counter()
        for _ in range(20):
            step(links)
        if (time.perf_counter() - started) / 20 * 1e3 >= step_ms:
            return lambda: step(links)
        links *= 2


def step_times(step: Any, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    return times


def with_stoker(step: Any, steps: int, data: Path, threads: int | None) -> dict[str, Any]:
    loader = stoker.Loader(data, batch_size=4096, seed=1, num_threads=threads)
    stop = threading.Event()
    rows = [0]

    def feed() -> None:
        epoch = 0
        while not stop.is_set():
            loader.set_epoch(epoch)
            for batch in loader:
                rows[0] += len(batch["label"])
                if stop.is_set():
                    break
            epoch += 1

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    time.sleep(1.0)  # the engine at full rate before the first step
    started = time.perf_counter()
    times = step_times(step, steps)
    seconds = time.perf_counter() - started
    stop.set()
    feeder.join()
    return {"times": times, "rows_per_s": rows[0] / seconds}


def quantiles(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50_ms": statistics.median(ordered) * 1e3,
            "p99_ms": ordered[int(0.99 * (len(ordered) - 1))] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("build/bench-noisy/criteo"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/results/noisy_neighbour.json"))
    args = parser.parse_args()
    if not (args.data / ".complete").exists():
        gen.generate(args.data, gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                     overwrite=True, progress=False)
        (args.data / ".complete").touch()
    step = make_step(args.step_ms)
    runs: dict[str, list[dict[str, Any]]] = {"alone": [], "with_stoker": []}
    for _ in range(args.repeats):
        runs["alone"].append(quantiles(step_times(step, args.steps)))
        fed = with_stoker(step, args.steps, args.data, args.threads)
        runs["with_stoker"].append({**quantiles(fed["times"]), "rows_per_s": fed["rows_per_s"]})
    results: dict[str, Any] = {"cores": len(os.sched_getaffinity(0)), "steps": args.steps,
                               "step_ms": args.step_ms, "threads": args.threads, "runs": runs}
    for case, case_runs in runs.items():
        results[case] = {key: statistics.median(r[key] for r in case_runs)
                         for key in case_runs[0]}
    results["p99_ratio"] = results["with_stoker"]["p99_ms"] / results["alone"]["p99_ms"]
    results["p50_ratio"] = results["with_stoker"]["p50_ms"] / results["alone"]["p50_ms"]
    results["load_average"] = os.getloadavg()
    print(f"alone:       p50 {results['alone']['p50_ms']:.2f} ms, p99 "
          f"{results['alone']['p99_ms']:.2f} ms")
    print(f"with stoker: p50 {results['with_stoker']['p50_ms']:.2f} ms, p99 "
          f"{results['with_stoker']['p99_ms']:.2f} ms, the engine at "
          f"{results['with_stoker']['rows_per_s'] / 1e6:.2f}M rows/s")
    print(f"p99 with ÷ alone: {results['p99_ratio']:.2f} (p50 {results['p50_ratio']:.2f}) on "
          f"{results['cores']} cores")
    write_json(args.out, results)


if __name__ == "__main__":
    main()
