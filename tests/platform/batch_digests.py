"""The same batches on every platform: digests of a fixed set of epochs, compared across builds.

    python tests/platform/batch_digests.py data DIR          write the dataset (once, on one host)
    python tests/platform/batch_digests.py digest DIR OUT    digest every case's batches into OUT
    python tests/platform/batch_digests.py compare A.json B.json ...

CI writes the dataset on Debian 12, copies the same files into the Debian 13 root, digests the
cases with each platform's build and compares: the plan, the gather, the hashes and every
transform op (random ones included) must give the same bits whatever the compiler, libstdc++,
glibc or Python. Exit status 1 names the cases that differ.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROWS = 30_000
FILES = 3
ROW_GROUP = 2_500


def write_data(out: Path) -> None:
    """Columns for every transform op: ints, floats with nulls and a wide range (log1p and
    standardize see values from 0 to 1e12), strings, a list column, a timestamp."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261127)
    ids = np.arange(ROWS, dtype=np.int64)
    dense = rng.lognormal(mean=2.0, sigma=4.0, size=ROWS).astype(np.float32)
    wide = np.concatenate([rng.uniform(0, 1e-6, ROWS // 3), rng.uniform(0, 1, ROWS // 3),
                           rng.uniform(0, 1e12, ROWS - 2 * (ROWS // 3))])
    rng.shuffle(wide)
    lengths = rng.integers(0, 9, ROWS)
    items = [rng.integers(0, 10_000, n).tolist() for n in lengths]
    countries = np.array(["de", "fr", "us", "br", "jp", "zz"])[rng.integers(0, 6, ROWS)]
    table = pa.table({
        "row_id": ids,
        "age": rng.integers(0, 90, ROWS),
        "user_id": rng.integers(0, 2**62, ROWS),
        "I1": pa.array(dense, mask=rng.random(ROWS) < 0.05),
        "I2": rng.integers(-50, 5_000, ROWS).astype(np.int32),
        "F": wide,
        "country": pa.array(countries, mask=rng.random(ROWS) < 0.03),
        "clicked_items": pa.array(items, pa.list_(pa.int64())),
        "label": (rng.random(ROWS) < 0.3).astype(np.int8),
        "ts": pa.array(ids * 1_000_000, pa.timestamp("us")),
    })
    for i, start in enumerate(range(0, ROWS, ROWS // FILES)):
        pq.write_table(table.slice(start, ROWS // FILES), out / f"part-{i:05d}.parquet",
                       row_group_size=ROW_GROUP)
    (out / "vocab").mkdir(exist_ok=True)
    (out / "vocab" / "country.txt").write_text("de\nfr\nus\njp\n")


def every_op(data: Path) -> list[dict]:
    """A spec with every op, the random ones included."""
    return [
        {"op": "cast", "column": "I2", "dtype": "int64"},
        {"op": "fill_null", "column": "I1", "value": 0},
        {"op": "fill_null", "column": "country", "value": "unknown"},
        {"op": "clip", "column": "I1", "min": 0, "max": 1e6},
        {"op": "log1p", "column": "I1"},
        {"op": "standardize", "column": "I1", "mean": 2.31, "std": 1.07},
        {"op": "log1p", "column": "F"},
        {"op": "standardize", "column": "F", "mean": 9.5, "std": 3.25},
        {"op": "bucketize", "column": "age", "boundaries": [18, 25, 35, 50, 65]},
        {"op": "hash", "column": "user_id", "num_buckets": 1_000_003},
        {"op": "vocabulary", "column": "country", "path": str(data / "vocab" / "country.txt"),
         "default": 0},
        {"op": "stack", "columns": ["I1", "F"], "output": "dense"},
        {"op": "rename", "column": "label", "to": "y"},
        {"op": "drop", "columns": ["ts"]},
        {"op": "dropout", "column": "clicked_items", "p": 0.1, "key": "user_id"},
        {"op": "pad", "column": "clicked_items", "length": 6, "value": 0},
        {"op": "bernoulli_mask", "column": "mask", "p": 0.15},
        {"op": "uniform", "column": "noise", "low": -0.01, "high": 0.01},
        {"op": "randint", "column": "negatives", "low": 0, "high": 1_000_000, "size": 4},
    ]


def cases(data: Path) -> dict[str, dict]:
    """Loader options of each compared case (two epochs each)."""
    base = {"batch_size": 1_000, "num_threads": 3,
            "columns": ["row_id", "F", "age", "I2", "user_id"]}
    return {
        "plain": {**base, "shuffle": False},
        "shuffled": {**base, "seed": 7, "shuffle_window": 6_000},
        "sharded": {**base, "seed": 7, "shuffle_window": 6_000, "world_size": 3, "rank": 1},
        "every_op": {"batch_size": 1_000, "num_threads": 3, "seed": 5,
                     "shuffle_window": 6_000, "transforms": every_op(data)},
    }


def _digest_batch(batch: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(batch):
        value = np.asarray(batch[name])
        h.update(f"{name}|{value.dtype.str}|{value.shape}|".encode())
        h.update(repr(value.tolist()).encode() if value.dtype == object
                 else np.ascontiguousarray(value).tobytes())
    return h.hexdigest()


def digest(data: Path) -> dict:
    import stoker  # the build under test
    out: dict = {"platform": {"python": sys.version.split()[0], "libc": platform.libc_ver(),
                              "machine": platform.machine(), "stoker": stoker.__file__},
                 "cases": {}}
    for name, options in cases(data).items():
        loader = stoker.Loader(str(data), **options)
        epochs = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            epochs.append([_digest_batch(b) for b in loader])
        out["cases"][name] = {"batches": sum(map(len, epochs)),
                              "digest": hashlib.sha256(json.dumps(epochs).encode()).hexdigest(),
                              "per_batch": epochs}
    return out


def compare(paths: list[Path]) -> int:
    runs = [json.loads(p.read_text()) for p in paths]
    first, status = runs[0], 0
    for path, run in zip(paths[1:], runs[1:]):
        for name, case in first["cases"].items():
            other = run["cases"].get(name)
            if other is None or other["digest"] != case["digest"]:
                differ = [] if other is None else [
                    (e, b) for e, (x, y) in enumerate(zip(case["per_batch"], other["per_batch"]))
                    for b, (u, v) in enumerate(zip(x, y)) if u != v]
                print(f"DIFFERENT {name}: {paths[0]} vs {path}: "
                      f"{len(differ)} batches differ, first (epoch, batch): {differ[:3]}")
                status = 1
            else:
                print(f"same {name}: {case['batches']} batches, {case['digest'][:16]}")
    for path, run in zip(paths, runs):
        print(f"  {path}: {run['platform']}")
    return status


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "data":
        write_data(Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "digest":
        Path(argv[2]).write_text(json.dumps(digest(Path(argv[1]).resolve())))
        return 0
    if len(argv) >= 3 and argv[0] == "compare":
        return compare([Path(p) for p in argv[1:]])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
