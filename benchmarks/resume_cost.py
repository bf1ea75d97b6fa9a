"""Cost of a resume: seconds from load_state_dict() to the first batch, mid-epoch, against the
first batch of a fresh epoch, on the same dataset and options.

    python benchmarks/resume_cost.py DATASET [--batch-size 4096] [--at 0.5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import stoker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--at", type=float, default=0.5, help="fraction of the epoch done")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    options = {"batch_size": args.batch_size, "seed": 5}
    loader = stoker.Loader(args.source, **options)
    total = len(loader)
    stop = int(total * args.at)
    it = iter(loader)
    for _ in range(stop):
        next(it)
    state = loader.state_dict()
    del it, loader

    construct, resume, fresh = [], [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        resumed = stoker.Loader(args.source, **options)
        construct.append(time.perf_counter() - started)
        started = time.perf_counter()
        resumed.load_state_dict(state)
        next(iter(resumed))
        resume.append(time.perf_counter() - started)
        started = time.perf_counter()
        next(iter(stoker.Loader(args.source, **options)))
        fresh.append(time.perf_counter() - started)
    print(f"resume at batch {stop:,} of {total:,}: "
          f"load_state_dict -> first batch {statistics.median(resume):.3f} s (median of "
          f"{args.repeats}: {', '.join(f'{t:.3f}' for t in resume)}); Loader construction "
          f"{statistics.median(construct):.3f} s; fresh epoch construction + first batch "
          f"{statistics.median(fresh):.3f} s")


if __name__ == "__main__":
    main()
