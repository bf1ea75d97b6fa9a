"""Row accounting of evaluation mode: for 1-5 ranks on a dataset whose row count no world size
divides, each rank's rows, real rows, padded rows and steps (mode="eval", with and without
pad_to_equal_steps), and the rows training mode leaves out, for comparison. Every figure is
counted from the batches delivered, and the ranks' real rows are checked to be the dataset,
each row once (by the row_id column and by _file_index/_row_in_file).

    python benchmarks/studies/eval_accounting.py [DATASET] [--rows 100003] [--batch-size 4096]

Without DATASET, a criteo-preset dataset of --rows rows in 3 files is written to a temporary
directory.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import stoker
from stoker.cli import gen as _gen


def read_rank(source: str, batch_size: int, world: int, rank: int, mode: str,
              pad: bool) -> dict[str, int | np.ndarray]:
    """One rank's epoch, counted: delivered rows, real rows, steps, and the real rows' ids and
    origins."""
    eval_options = {"pad_to_equal_steps": pad, "with_row_origin": True} if mode == "eval" else {}
    loader = stoker.Loader(source, columns=["row_id"], batch_size=batch_size, shuffle=False,
                           rank=rank, world_size=world, mode=mode, **eval_options)
    rows = steps = 0
    ids, origins = [], []
    for batch in loader:
        steps += 1
        rows += len(batch["row_id"])
        valid = batch["_valid"] if pad else np.ones(len(batch["row_id"]), dtype=bool)
        ids.append(batch["row_id"][valid])
        if mode == "eval":
            origins.append(np.stack([batch["_file_index"][valid],
                                     batch["_row_in_file"][valid]], axis=1))
    real = sum(len(i) for i in ids)
    return {"rows": rows, "real": real, "padded": rows - real, "steps": steps,
            "ids": np.concatenate(ids) if ids else np.zeros(0, np.int64),
            "origins": np.concatenate(origins) if origins else np.zeros((0, 2), np.int64)}


def check_exactly_once(ranks: list[dict], total: int) -> str:
    ids = np.concatenate([r["ids"] for r in ranks])
    origins = np.concatenate([r["origins"] for r in ranks])
    once_by_id = len(ids) == total and np.array_equal(np.sort(ids), np.arange(total))
    once_by_origin = len(np.unique(origins, axis=0)) == total == len(origins)
    return "yes" if once_by_id and once_by_origin else "NO"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?")
    parser.add_argument("--rows", type=int, default=100_003)
    parser.add_argument("--batch-size", type=int, default=4096)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        source = args.source
        if source is None:
            source = str(Path(scratch) / "criteo")
            _gen.generate(Path(source), _gen.GenOptions(preset="criteo", rows=args.rows, files=3,
                                                        row_group_size=10_000), progress=False)
        total = stoker.Loader(source, columns=["row_id"], batch_size=1).dataset_info()["rows"]
        print(f"dataset {source}: {total:,} rows, batch_size {args.batch_size}")
        header = (f"{'world':>5} {'rank':>4} | {'eval rows':>9} {'steps':>5} | "
                  f"{'padded: rows':>12} {'real':>7} {'padded':>6} {'steps':>5} | "
                  f"{'train rows':>10} {'steps':>5}")
        print(header)
        print("-" * len(header))
        for world in range(1, 6):
            plain, padded, train = ([read_rank(source, args.batch_size, world, rank, mode, pad)
                                     for rank in range(world)]
                                    for mode, pad in (("eval", False), ("eval", True),
                                                      ("train", False)))
            for rank in range(world):
                p, q, t = plain[rank], padded[rank], train[rank]
                print(f"{world:>5} {rank:>4} | {p['rows']:>9,} {p['steps']:>5} | "
                      f"{q['rows']:>12,} {q['real']:>7,} {q['padded']:>6,} {q['steps']:>5} | "
                      f"{t['rows']:>10,} {t['steps']:>5}")
            left_out = total - sum(t["rows"] for t in train)
            print(f"{world:>5}  all | {sum(p['rows'] for p in plain):>9,}       | "
                  f"{sum(q['rows'] for q in padded):>12,} "
                  f"{sum(q['real'] for q in padded):>7,} "
                  f"{sum(q['padded'] for q in padded):>6,}       | "
                  f"{sum(t['rows'] for t in train):>10,}       "
                  f"(train leaves {left_out} out; eval every row once: "
                  f"{check_exactly_once(plain, total)} plain, "
                  f"{check_exactly_once(padded, total)} padded)")


if __name__ == "__main__":
    main()
