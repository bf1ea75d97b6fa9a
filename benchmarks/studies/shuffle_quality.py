"""How well does a shuffle mix a dataset stored sorted? Stoker's windowed shuffle against a
true uniform permutation and a Petastorm-style shuffle (row groups in random order, rows fed
through a random shuffling buffer), across window / buffer sizes.

The dataset is stored sorted twice over: by time (row_id) and by label (the last 25% of rows
are the positives). Metrics over one epoch, batch by batch, each given as a ratio to what a
uniform permutation scores (1.00 = indistinguishable from uniform):

- spread: the mean standard deviation of row_id / N within a batch (how much of the time
  range a batch spans; uniform ~ 0.289).
- label error: the mean |positive share of a batch - 0.25| (uniform: binomial noise). Lower
  is better, so the ratio is uniform / method (1.00 = as good as uniform).
Each figure is the mean over 5 seeds.

- order correlation: Pearson correlation between delivery position and row_id (uniform ~ 0);
  reported raw.

    python benchmarks/studies/shuffle_quality.py [--rows 1000000] [--json out.json]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import stoker
from stoker_devtools.bench import timed, write_json

BATCH = 1024
SEEDS = (1, 2, 3, 4, 5)  # metrics are averaged over these epochs' seeds
POSITIVE_SHARE = 0.25


def write_sorted_dataset(out: Path, rows: int, row_group: int) -> None:
    ids = np.arange(rows, dtype=np.int64)
    pq.write_table(pa.table({"row_id": ids}), out / "sorted.parquet", row_group_size=row_group)


def petastorm_order(rows: int, row_group: int, buffer: int, seed: int) -> np.ndarray:
    """Petastorm 0.13's recipe: shuffle_row_groups=True, then a RandomShufflingBuffer of
    `buffer` rows (fill, then emit a random resident row and replace it with the next)."""
    rng = np.random.default_rng(seed)
    groups = rng.permutation(int(np.ceil(rows / row_group)))
    stream = np.concatenate([np.arange(g * row_group, min((g + 1) * row_group, rows))
                             for g in groups])
    out = np.empty(rows, dtype=np.int64)
    resident = list(stream[:buffer])
    n = 0
    for row in stream[buffer:]:
        k = rng.integers(len(resident))
        out[n], resident[k] = resident[k], row
        n += 1
    for k in rng.permutation(len(resident)):  # drain
        out[n] = resident[k]
        n += 1
    return out


def stoker_order(source: Path, window: int, seed: int, plan_version: int) -> np.ndarray:
    loader = stoker.Loader(source, columns=["row_id"], batch_size=BATCH, seed=seed,
                           shuffle_window=window, plan_version=plan_version)
    return np.concatenate([b["row_id"] for b in loader])


def metrics(order: np.ndarray, rows: int) -> dict[str, float]:
    usable = len(order) // BATCH * BATCH
    batches = order[:usable].reshape(-1, BATCH)
    spread = float(np.mean(np.std(batches / rows, axis=1)))
    positive = batches >= rows * (1 - POSITIVE_SHARE)
    label_error = float(np.mean(np.abs(positive.mean(axis=1) - POSITIVE_SHARE)))
    corr = float(np.corrcoef(np.arange(len(order)), order)[0, 1])
    return {"spread": spread, "label_error": label_error, "order_corr": corr}


def mean_metrics(orders: list[np.ndarray], rows: int) -> dict[str, float]:
    each = [metrics(order, rows) for order in orders]
    return {key: float(np.mean([m[key] for m in each])) for key in each[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--row-group", type=int, default=20_000)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--windows", help="comma-separated window sizes in rows (default: one "
                        "row group, 5%%, 10%%, 25%%, 50%% and all of the rows)")
    parser.add_argument("--plan-version", type=int, default=stoker._core.LATEST_PLAN_VERSION,
                        help="the plan Stoker follows (default %(default)s)")
    args = parser.parse_args()
    rows, row_group = args.rows, args.row_group
    windows = ([int(w) for w in args.windows.split(",")] if args.windows
               else [row_group, rows // 20, rows // 10, rows // 4, rows // 2, rows])

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp)
        write_sorted_dataset(source, rows, row_group)
        uniform = mean_metrics([np.random.default_rng(s).permutation(rows) for s in SEEDS],
                               rows)
        results = {"rows": rows, "row_group": row_group, "batch_size": BATCH,
                   "plan_version": args.plan_version,
                   "uniform": uniform, "stoker": {}, "petastorm": {}}
        def measure(window: int) -> None:
            results["stoker"][window] = mean_metrics(
                [stoker_order(source, window, seed, args.plan_version) for seed in SEEDS], rows)
            results["petastorm"][window] = mean_metrics(
                [petastorm_order(rows, row_group, window, seed) for seed in SEEDS], rows)

        for window in windows:
            print(f"window {window:>9,} rows done ({timed(measure, window)[1]:.1f} s)",
                  flush=True)

    print(f"\n{rows:,} rows stored sorted, row groups of {row_group:,}, batches of {BATCH}, "
          f"plan version {args.plan_version}; "
          "ratios to a uniform permutation (1.00 = as good as uniform)\n")
    print(f"{'window/buffer rows':>18} | {'stoker spread':>13} {'label':>6} {'corr':>6} | "
          f"{'petastorm spread':>16} {'label':>6} {'corr':>6}")
    for window in windows:
        s, p = results["stoker"][window], results["petastorm"][window]
        print(f"{window:>18,} | {s['spread'] / uniform['spread']:>13.2f} "
              f"{uniform['label_error'] / s['label_error']:>6.2f} {s['order_corr']:>6.2f} | "
              f"{p['spread'] / uniform['spread']:>16.2f} "
              f"{uniform['label_error'] / p['label_error']:>6.2f} {p['order_corr']:>6.2f}")
    print(f"{'uniform':>18} | spread {uniform['spread']:.3f}, label error "
          f"{uniform['label_error']:.4f}, corr {uniform['order_corr']:.3f}")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
