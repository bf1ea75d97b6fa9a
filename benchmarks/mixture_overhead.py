"""What mixing costs: a 3-source mixture against the same rows read as one source, and the
realized proportions of a weighted 3-source mixture against its weights (docs/mixtures.md).

    python benchmarks/mixture_overhead.py [--dir DIR] [--rows 3000000] [--batch-size 4096]
        [--repeats 5] [--threads N] [--out benchmarks/results/mixture.json]

Writes three criteo-preset datasets of 50%, 30% and 20% of --rows (once; kept in --dir). The
overhead: one epoch of ``Mixture`` of the three sources without weights (each read once: the
same rows) against one epoch of ``Loader([a, b, c])``, alternating, each loader built before
its clock starts, both with the same worker threads in all (--threads, or the default
budget; a mixture's num_threads is the total its sources share, and the table gives each
side's), the median rows/s of --repeats epochs each after one warm-up epoch; and the median
CPU seconds the process spent on each epoch (every thread's, user + system): on a shared
machine, whose other loads take wall-clock time from either loader at random, the CPU an
epoch costs is the steadier figure. The proportions: one epoch of the three at weights
0.5/0.3/0.2 with epoch_rows = --rows, rows per source against the weights, in binomial
standard deviations.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from pathlib import Path

import stoker
from stoker.cli import gen as _gen
from stoker_devtools.bench import epoch_rate, interleaved, listed, write_json

SHARES = (0.5, 0.3, 0.2)
NAMES = ("a", "b", "c")


def write_sources(root: Path, rows: int) -> list[Path]:
    paths = []
    for i, (name, share) in enumerate(zip(NAMES, SHARES)):
        path = root / name
        if not any(path.glob("*.parquet")):
            _gen.generate(path, _gen.GenOptions(preset="criteo", rows=int(rows * share),
                                                files=2, seed=i), progress=False)
        paths.append(path)
    return paths


def rate_and_cpu(loader) -> tuple[float, float]:
    """Rows per second of one epoch of `loader` (the consumer touches each batch's rows) and
    the CPU seconds the process spent on it."""
    cpu = time.process_time()
    rate = epoch_rate(loader, lambda batch: len(batch["label"]))
    return rate, time.process_time() - cpu


def overhead(paths: list[Path], options: dict, repeats: int) -> dict:
    def single():
        return stoker.Loader([str(p) for p in paths], **options)

    def mixture():
        return stoker.Loader(stoker.Mixture([stoker.Source(p, name=n)
                                             for p, n in zip(paths, NAMES)]), **options)

    makers = {"single": single, "mixture": mixture}
    workers = {}
    for name, make in makers.items():  # warm-up: page cache, allocator
        loader = make()
        rate_and_cpu(loader)
        workers[name] = loader.stats()["threads"]  # every worker thread of the loader
    # Alternating which goes first; each loader built before its clock starts.
    runs = interleaved({name: lambda _, make=make: rate_and_cpu(make())
                        for name, make in makers.items()}, repeats, rotate=True)
    rates = {name: [rate for rate, _ in figures] for name, figures in runs.items()}
    cpu = {name: [seconds for _, seconds in figures] for name, figures in runs.items()}
    single_rate = statistics.median(rates["single"])
    mixture_rate = statistics.median(rates["mixture"])
    single_cpu = statistics.median(cpu["single"])
    mixture_cpu = statistics.median(cpu["mixture"])
    return {"single_workers": workers["single"], "mixture_workers": workers["mixture"],
            "single_rows_per_s": rates["single"], "mixture_rows_per_s": rates["mixture"],
            "single_median": single_rate, "mixture_median": mixture_rate,
            "overhead": 1 - mixture_rate / single_rate,
            "single_cpu_seconds": cpu["single"], "mixture_cpu_seconds": cpu["mixture"],
            "single_cpu_median": single_cpu, "mixture_cpu_median": mixture_cpu,
            "cpu_overhead": mixture_cpu / single_cpu - 1}


def proportions(paths: list[Path], options: dict, rows: int) -> list[dict]:
    mixture = stoker.Mixture([stoker.Source(p, name=n, weight=w)
                              for p, n, w in zip(paths, NAMES, SHARES)], epoch_rows=rows)
    loader = stoker.Loader(mixture, **options)
    shares: dict[str, list[float]] = {name: [] for name in NAMES}  # per full batch
    before = dict.fromkeys(NAMES, 0)
    for batch in loader:
        now = loader.stats()["rows_per_source"]
        if len(batch["label"]) == options["batch_size"]:
            for name in NAMES:
                shares[name].append((now[name] - before[name]) / options["batch_size"])
        before = now
    realized = before
    total = sum(realized.values())
    table = []
    for name, weight in zip(NAMES, SHARES):
        expected = total * weight
        sigma = math.sqrt(total * weight * (1 - weight))
        table.append({"source": name, "weight": weight, "expected_rows": expected,
                      "rows": realized[name], "proportion": realized[name] / total,
                      "deviation_sigmas": (realized[name] - expected) / sigma,
                      "batch_share_std": statistics.pstdev(shares[name]),
                      "binomial_std": math.sqrt(weight * (1 - weight) / options["batch_size"])})
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="demo-data/mixture")
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default=None, help="write the results here as JSON")
    args = parser.parse_args()

    paths = write_sources(Path(args.dir), args.rows)
    options = {"batch_size": args.batch_size, "seed": 11, "num_threads": args.threads}
    cost = overhead(paths, options, args.repeats)
    table = proportions(paths, options, args.rows)
    load = os.getloadavg()  # over the last 1, 5 and 15 minutes: the run's, mostly

    print(f"{args.rows:,} criteo rows in 3 sources (50/30/20%), batch_size {args.batch_size}, "
          f"num_threads {args.threads or 'default'}, load average {load[0]:.2f}")
    print(f"| loader | worker threads in all | rows/s (median of {args.repeats}) | runs |")
    print("| --- | ---: | ---: | --- |")
    for name in ("single", "mixture"):
        runs = listed(cost[f"{name}_rows_per_s"], 1e-6, suffix="M")
        print(f"| {name} | {cost[f'{name}_workers']} | {cost[f'{name}_median'] / 1e6:.2f}M "
              f"| {runs} |")
    print(f"overhead of the mixture: {cost['overhead'] * 100:+.1f}% (target <= 5%)")
    print(f"| loader | CPU s per epoch (median of {args.repeats}) | runs |")
    print("| --- | ---: | --- |")
    for name in ("single", "mixture"):
        print(f"| {name} | {cost[f'{name}_cpu_median']:.2f} | "
              f"{listed(cost[f'{name}_cpu_seconds'])} |")
    print(f"CPU the mixture costs beyond one Loader: {cost['cpu_overhead'] * 100:+.1f}%")
    print()
    print("| source | weight | expected rows | realized rows | proportion | deviation (sigma) "
          "| per-batch share std | binomial std |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in table:
        print(f"| {row['source']} | {row['weight']:.2f} | {row['expected_rows']:,.0f} | "
              f"{row['rows']:,} | {row['proportion']:.5f} | {row['deviation_sigmas']:+.2f} | "
              f"{row['batch_share_std']:.4f} | {row['binomial_std']:.4f} |")
    if args.out:
        write_json(args.out, {"rows": args.rows, "batch_size": args.batch_size,
                              "threads": args.threads, "load_average": load, "overhead": cost,
                              "proportions": table})


if __name__ == "__main__":
    main()
