"""Cost of a checkpoint: microseconds per ``loader.state_dict()`` call (and per ``skip``) at
several dataset sizes and at several steps into an epoch. Both must stay flat: the state is a
few integers and digests, never a function of the rows or the step.

    python benchmarks/studies/state_cost.py [--rows 10000,100000,1000000] [--steps 0,10,100,1000]
                                    [--calls 20000] [--out DIR]

Datasets are generated under --out (default: a temporary directory) with `stoker gen`'s
criteo preset; each step is reached by reading batches (not by skip), so the engine holds a
live epoch while state_dict() is timed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import stoker
from stoker.cli import gen as _gen
from stoker_devtools.bench import per_call_us

BATCH_SIZE = 256


def measure(source: Path, steps: list[int], calls: int) -> list[dict]:
    out = []
    for step in steps:
        loader = stoker.Loader(source, batch_size=BATCH_SIZE, seed=3, columns=["label", "I1"])
        it = iter(loader)
        taken = 0
        while taken < step:  # across epochs when the dataset is small
            if next(it, None) is None:
                it = iter(loader)
                continue
            taken += 1
        state_us = per_call_us(loader.state_dict, calls)
        size = len(json.dumps(loader.state_dict()))

        def skip_one(loader: stoker.Loader = loader) -> None:
            loader.skip(1)

        skip_us = per_call_us(skip_one, calls // 10)
        out.append({"step": step, "state_dict_us": state_us, "skip_us": skip_us,
                    "state_bytes": size})
        del it
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000,1000000")
    parser.add_argument("--steps", default="0,10,100,1000")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--out", help="where to write the datasets (default: a temp dir)")
    args = parser.parse_args()
    sizes = [int(r) for r in args.rows.split(",")]
    steps = [int(s) for s in args.steps.split(",")]

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.out or tmp)
        print(f"{'rows':>10} {'step':>6} {'state_dict() us':>16} {'skip(1) us':>11} "
              f"{'state bytes':>12}")
        for rows in sizes:
            source = root / f"criteo-{rows}"
            if not source.exists():
                _gen.generate(source, _gen.GenOptions(preset="criteo", rows=rows, files=4,
                                                      row_group_size=10000), progress=False)
            for row in measure(source, steps, args.calls):
                print(f"{rows:>10,} {row['step']:>6} {row['state_dict_us']:>16.2f} "
                      f"{row['skip_us']:>11.2f} {row['state_bytes']:>12}")


if __name__ == "__main__":
    main()
