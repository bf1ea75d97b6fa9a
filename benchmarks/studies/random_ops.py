"""The random transform ops, checked at scale: does an epoch replay (1 thread vs many, a cold
vs a warm disk cache, 1 rank vs the union of 2), does another epoch draw anew, and how far are
the draws from their distributions (chi-square for randint and bernoulli_mask,
Kolmogorov-Smirnov for uniform, the kept share for dropout), against critical values at
significance 0.001. Also the cost: an epoch's seconds with and without the ops.

    python benchmarks/studies/random_ops.py [--rows 1000000] [--threads 4] [--seed 11] [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import stoker
from stoker_devtools.bench import timed

SPEC = [
    {"op": "bernoulli_mask", "column": "mask", "p": 0.15, "dtype": "int8"},
    {"op": "uniform", "column": "noise", "low": -1.0, "high": 1.0, "dtype": "float64"},
    {"op": "randint", "column": "negatives", "low": 0, "high": 100, "size": 4},
    {"op": "dropout", "column": "items", "p": 0.2},
    {"op": "ragged", "column": "items"},
]
DRAWN = ("mask", "noise", "negatives", "items", "items_offsets")
# Chi-square quantiles 0.999 (standard tables) and the KS coefficient sqrt(-ln(0.0005) / 2):
# a statistic above them rejects the distribution at significance 0.001.
CHI2_0_999 = {1: 10.828, 99: 148.230}
KS_0_001 = 1.9495


def write_dataset(out: Path, rows: int) -> None:
    """Row ids, a float feature and variable lists of 0..19 item ids, in 4 files."""
    rng = np.random.default_rng(0)
    out.mkdir(parents=True, exist_ok=True)
    per_file = rows // 4
    for f in range(4):
        first = f * per_file
        n = rows - first if f == 3 else per_file
        lengths = rng.integers(0, 20, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        items = pa.ListArray.from_arrays(offsets, pa.array(rng.integers(0, 10**6, offsets[-1]),
                                                           pa.int64()))
        table = pa.table({"row_id": np.arange(first, first + n), "x": rng.random(n), "items": items})
        pq.write_table(table, out / f"part-{f}.parquet", row_group_size=50_000)


def read_epoch(source: Path, epoch: int, **options) -> tuple[dict[str, np.ndarray], float]:
    loader = stoker.Loader(source, batch_size=8192, **options)
    loader.set_epoch(epoch)
    batches, seconds = timed(list, loader)
    if not batches or "mask" not in batches[0]:
        return {}, seconds
    columns = {name: [b[name] for b in batches] for name in ("row_id", *DRAWN[:3])}
    columns["items_kept"] = [np.diff(b["items_offsets"]) for b in batches]
    order = np.argsort(np.concatenate(columns["row_id"]))
    return {name: np.concatenate(parts)[order] for name, parts in columns.items()}, seconds


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def ks_uniform(values: np.ndarray, low: float, high: float) -> float:
    u = np.sort((values - low) / (high - low))
    ranks = np.arange(1, len(u) + 1)
    return float(max((ranks / len(u) - u).max(), (u - (ranks - 1) / len(u)).max()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", help="where to write the dataset (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.out or tmp)
        source = root / f"lists-{args.rows}"
        if not source.exists():
            write_dataset(source, args.rows)
        base = {"seed": args.seed, "transforms": SPEC}
        reference, seconds = read_epoch(source, 0, num_threads=args.threads, **base)
        _, plain_seconds = read_epoch(source, 0, num_threads=args.threads, seed=args.seed,
                                      transforms=[{"op": "ragged", "column": "items"}])
        one_thread, _ = read_epoch(source, 0, num_threads=1, **base)
        cache = root / "cache"
        cold, _ = read_epoch(source, 0, cache_dir=cache, num_threads=args.threads, **base)
        warm1, _ = read_epoch(source, 1, cache_dir=cache, num_threads=args.threads, **base)
        warm0, _ = read_epoch(source, 0, cache_dir=cache, num_threads=args.threads, **base)
        epoch1, _ = read_epoch(source, 1, num_threads=args.threads, **base)
        ranks = [read_epoch(source, 0, rank=r, world_size=2, num_threads=args.threads, **base)[0]
                 for r in range(2)]
        union = {k: np.concatenate([ranks[0][k], ranks[1][k]]) for k in ranks[0]}
        order = np.argsort(union["row_id"])
        union = {k: v[order] for k, v in union.items()}
        in_union = np.isin(reference["row_id"], union["row_id"])
        two_ranks = same({k: v[in_union] for k, v in reference.items()}, union)

        n = len(reference["row_id"])
        print(f"{n:,} rows, seed {args.seed}, {args.threads} threads")
        print("replay (same epoch, same draws):")
        print(f"{f'  1 thread vs {args.threads}:':<31}{same(reference, one_thread)}")
        print(f"  cold cache vs no cache:      {same(reference, cold)}")
        print(f"  warm cache, epoch 0:         {same(reference, warm0)}")
        print(f"  warm cache, epoch 1:         {same(epoch1, warm1)}")
        print(f"  union of 2 ranks vs 1 rank:  {two_ranks} ({len(union['row_id']):,} rows)")
        print("epoch 1 vs epoch 0, share of rows drawing the same value (chance level):")
        print(f"  mask      {np.mean(reference['mask'] == epoch1['mask']):.4f} "
              f"({0.15**2 + 0.85**2:.4f})")
        print(f"  noise     {np.mean(reference['noise'] == epoch1['noise']):.4f} (0)")
        print(f"  negatives {np.mean((reference['negatives'] == epoch1['negatives']).all(1)):.6f}"
              f" (1e-08)")

        print("distributions (reject at significance 0.001 when above the critical value):")
        mask = reference["mask"]
        ones = int(mask.sum())
        stat = chi_square(np.array([ones, n - ones]), np.array([0.15, 0.85]) * n)
        print(f"  bernoulli_mask p=0.15: share {ones / n:.5f}, chi-square {stat:.3f} "
              f"(df 1, critical {CHI2_0_999[1]})")
        negatives = reference["negatives"].ravel()
        counts = np.bincount(negatives, minlength=100)
        stat = chi_square(counts, np.full(100, len(negatives) / 100))
        print(f"  randint [0, 100) x4: chi-square {stat:.3f} (df 99, critical "
              f"{CHI2_0_999[99]})")
        d = ks_uniform(reference["noise"], -1.0, 1.0)
        print(f"  uniform [-1, 1): KS D_n {d:.6f} (critical {KS_0_001 / math.sqrt(n):.6f})")
        kept = int(reference["items_kept"].sum())
        total = int(sum(len(x) for x in
                        pq.read_table(source, columns=["items"]).column("items").to_pylist()))
        sigma = math.sqrt(0.8 * 0.2 / total)
        print(f"  dropout p=0.2: kept {kept / total:.5f} of {total:,} items (expected 0.8, "
              f"{abs(kept / total - 0.8) / sigma:.2f} standard deviations)")
        print(f"cost: epoch {seconds:.3f} s with the random ops, {plain_seconds:.3f} s without")


if __name__ == "__main__":
    main()
