"""The trainer's own cores: a training loop's step time on the main thread (a fixed
single-thread torch step), alone and with Stoker reading at full rate in the same process, p50
and p99 over `--steps` steps (docs/benchmarks.md, "The trainer's own cores").

The modes, alternated in each repeat: "alone"; "unpinned" (the engine's threads anywhere);
"pinned" (the engine on `engine_cpus` = every CPU but the trainer's, the main thread pinned to
the trainer's CPU, the first of the mask, and the feeding thread left where the mask lets it);
"pinned_feeder" (the same with the feeding Python thread on the engine's CPUs too).

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
import sys
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

    step(8)  # torch's first products pay its one-time set-up, not a step's time
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


def with_stoker(step: Any, steps: int, data: Path, threads: int | None, mode: str,
                trainer_cpu: int) -> dict[str, Any]:
    mask = os.sched_getaffinity(0)
    engine_cpus = sorted(mask - {trainer_cpu}) if mode != "unpinned" else None
    loader = stoker.Loader(data, batch_size=4096, seed=1, num_threads=threads,
                           engine_cpus=engine_cpus)
    stop = threading.Event()
    rows = [0]

    def feed() -> None:
        if mode == "pinned_feeder":
            os.sched_setaffinity(0, set(engine_cpus or mask))
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
    if mode != "unpinned":
        os.sched_setaffinity(0, {trainer_cpu})  # this thread alone: the trainer's
    try:
        time.sleep(1.0)  # the engine at full rate before the first step
        started = time.perf_counter()
        times = step_times(step, steps)
        seconds = time.perf_counter() - started
    finally:
        os.sched_setaffinity(0, mask)
        stop.set()
        feeder.join()
    return {"times": times, "rows_per_s": rows[0] / seconds}


MODES = ("alone", "unpinned", "pinned", "pinned_feeder")


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
    parser.add_argument("--switch-interval-ms", type=float, default=None,
                        help="sys.setswitchinterval for the run (Python's default: 5 ms): how "
                             "long the feeding thread may hold the GIL the trainer waits for")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/results/noisy_neighbour.json"))
    args = parser.parse_args()
    if not (args.data / ".complete").exists():
        gen.generate(args.data, gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                     overwrite=True, progress=False)
        (args.data / ".complete").touch()
    if args.switch_interval_ms is not None:
        sys.setswitchinterval(args.switch_interval_ms / 1e3)
    step = make_step(args.step_ms)
    modes = [mode for mode in args.modes.split(",") if mode]
    mask = os.sched_getaffinity(0)
    trainer_cpu = min(mask)
    if len(mask) < 2:
        modes = [mode for mode in modes if mode in ("alone", "unpinned")]
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):
        for mode in modes:
            if mode == "alone":
                runs[mode].append(quantiles(step_times(step, args.steps)))
                continue
            fed = with_stoker(step, args.steps, args.data, args.threads, mode, trainer_cpu)
            runs[mode].append({**quantiles(fed["times"]), "rows_per_s": fed["rows_per_s"]})
    results: dict[str, Any] = {"cores": len(mask), "steps": args.steps, "trainer_cpu": trainer_cpu,
                               "switch_interval_ms": sys.getswitchinterval() * 1e3,
                               "step_ms": args.step_ms, "threads": args.threads, "runs": runs}
    for case, case_runs in runs.items():
        results[case] = {key: statistics.median(r[key] for r in case_runs)
                         for key in case_runs[0]}
    results["load_average"] = os.getloadavg()
    alone = results.get("alone")
    for mode in modes:
        line = f"{mode:14s} p50 {results[mode]['p50_ms']:.2f} ms, p99 {results[mode]['p99_ms']:.2f} ms"
        if "rows_per_s" in results[mode]:
            line += f", the engine at {results[mode]['rows_per_s'] / 1e6:.2f}M rows/s"
        if alone is not None and mode != "alone":
            results[mode]["p99_ratio"] = results[mode]["p99_ms"] / alone["p99_ms"]
            results[mode]["p50_ratio"] = results[mode]["p50_ms"] / alone["p50_ms"]
            line += (f"; p99 ÷ alone {results[mode]['p99_ratio']:.2f}"
                     f" (p50 {results[mode]['p50_ratio']:.2f})")
        print(line)
    print(f"on {len(mask)} cores, load average {results['load_average'][0]:.2f}")
    write_json(args.out, results)


if __name__ == "__main__":
    main()
