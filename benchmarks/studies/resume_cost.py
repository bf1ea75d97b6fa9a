"""Cost of a resume: seconds from load_state_dict() to the first batch, mid-epoch, against the
first batch of a fresh epoch, on the same dataset and options.

    python benchmarks/studies/resume_cost.py DATASET [--batch-size 4096] [--at 0.5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics

import stoker
from stoker_devtools.bench import listed, timed


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

    def resume_first_batch(resumed: stoker.Loader) -> None:
        resumed.load_state_dict(state)
        next(iter(resumed))

    construct, resume, fresh = [], [], []
    for _ in range(args.repeats):
        resumed, seconds = timed(stoker.Loader, args.source, **options)
        construct.append(seconds)
        resume.append(timed(resume_first_batch, resumed)[1])
        fresh.append(timed(lambda: next(iter(stoker.Loader(args.source, **options))))[1])
    print(f"resume at batch {stop:,} of {total:,}: "
          f"load_state_dict -> first batch {statistics.median(resume):.3f} s (median of "
          f"{args.repeats}: {listed(resume, spec='.3f')}); Loader construction "
          f"{statistics.median(construct):.3f} s; fresh epoch construction + first batch "
          f"{statistics.median(fresh):.3f} s")


if __name__ == "__main__":
    main()
