"""Lance's PyTorch loader on multi-hot rows: the peer a recommender team would pick instead.

The peer the issue names: Lance's PyTorch loader (``lance.torch.data.LanceDataset``) reads
multi-hot rows, after a one-time conversion of the Parquet files to Lance, unshuffled and with
its batch-level shuffle. This measures both, on the same rows that Stoker reads from Parquet
(``stoker gen --preset multihot``: label, I1..I13 float32, C1..C26 list<int32>), so the rates
compare with benchmarks/torchrec_batches.py's:

- conversion: PARQUET_DIR's files streamed once through a pyarrow scanner into
  ``lance.write_dataset`` at --lance-dir (skipped when a dataset with as many rows is there);
- unshuffled: ``LanceDataset(uri, batch_size, columns)``, its default full scan in fragment
  order;
- shuffled: the same with ``sampler=ShardedBatchSampler(0, 1, randomize=True, seed=epoch)``,
  the shuffle LanceDataset offers without a filter: the rows cut into batch-size ranges whose
  order is shuffled, each range read whole (a new seed each epoch, since that sampler ignores
  ``set_epoch`` when there is no filter).

Lance's own batch-to-tensor conversion handles numeric and fixed-size list columns only (a
variable-length list<int32> raises ValueError), so the batches go through a ``to_tensor_fn``
that keeps Lance's conversion for the dense columns and gives each list column as a values
tensor and an ``<name>_offsets`` tensor: the jagged form a trainer builds a KeyedJaggedTensor
from, and the shape of Stoker's ragged output. Every column's tensors of every batch are then
checked against the batch's row count, as a trainer would touch them. Batches are iterated in
the process (no DataLoader workers; Lance reads ahead on its own Rust threads); each rate is
the best of --epochs timed epochs after a warm one.

    python benchmarks/lance_peer.py PARQUET_DIR --lance-dir DIR [--batch-size 4096]
        [--epochs 3] [--json out.json]

Runs in .bench-lance-venv (benchmarks/requirements-lance.txt).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import warnings
from collections.abc import Callable
from typing import Any

import lance
import pyarrow as pa
import pyarrow.dataset as pads
import torch
from lance.sampler import ShardedBatchSampler
from lance.torch.data import LanceDataset
from lance.torch.data import _to_tensor as lance_to_tensor  # LanceDataset's default
from stoker_devtools.bench import best_rate, timed, write_json

# Rows per batch the Parquet scanner hands to the Lance writer: bounds the conversion's memory
# to a few such batches (the writer streams them into its files).
CONVERSION_BATCH_ROWS = 65536

SHUFFLE_MODE = ("batch-level: ShardedBatchSampler(rank=0, world_size=1, randomize=True, "
                "seed=epoch) cuts the rows into batch-size ranges, shuffles their order and reads "
                "each range whole, so a batch holds consecutive rows in file order")


def parquet_source(parquet_dir: str) -> pads.Dataset:
    files = sorted(glob.glob(os.path.join(parquet_dir, "*.parquet")))
    if not files:
        raise SystemExit(f"{parquet_dir}: no *.parquet files")
    return pads.dataset(files, format="parquet")


def ensure_lance(source: pads.Dataset, lance_dir: str) -> float | None:
    """Converts `source` into a Lance dataset at `lance_dir` unless one with as many rows is
    there; returns the conversion's seconds, None when it was already there."""
    rows = source.count_rows()
    if os.path.exists(lance_dir):
        try:
            existing = lance.dataset(lance_dir).count_rows()
        except (OSError, ValueError) as e:
            raise SystemExit(f"{lance_dir}: exists but is no Lance dataset ({e}); remove it") from e
        if existing != rows:
            raise SystemExit(f"{lance_dir}: {existing} rows, the Parquet files have {rows}; "
                             "remove it to convert again")
        return None
    def convert() -> None:
        lance.write_dataset(source.scanner(batch_size=CONVERSION_BATCH_ROWS).to_reader(),
                            lance_dir)

    return timed(convert)[1]


def feature_columns(schema: pa.Schema) -> tuple[list[str], list[str]]:
    """(dense, sparse): label and the I* columns, then the C* list columns, in schema order."""
    dense = [f.name for f in schema if f.name == "label" or re.fullmatch(r"I\d+", f.name)]
    sparse = [f.name for f in schema if re.fullmatch(r"C\d+", f.name)]
    if "label" not in dense or not sparse:
        raise SystemExit(f"expected label, I* and C* columns, got {schema.names}")
    for name in sparse:
        if not pa.types.is_list(schema.field(name).type):
            raise SystemExit(f"column {name}: expected list<int32>, got "
                             f"{schema.field(name).type}")
    return dense, sparse


def jagged_to_tensor(dense: list[str], sparse: list[str]) -> Callable[..., dict[str, Any]]:
    """A LanceDataset to_tensor_fn: Lance's own conversion for the dense columns, values and
    offsets tensors for each list column."""
    def convert(batch: pa.RecordBatch, **kwargs: Any) -> dict[str, Any]:
        out = lance_to_tensor(batch.select(dense), **kwargs)
        if isinstance(out, torch.Tensor):  # Lance returns a bare tensor for one column
            out = {dense[0]: out}
        for name in sparse:
            column = batch.column(name)
            # flatten() honours a sliced array's offset; its offsets start where it does.
            offsets = column.offsets.to_numpy()
            if offsets[0]:
                offsets = offsets - offsets[0]
            out[name] = torch.from_numpy(column.flatten().to_numpy())
            out[f"{name}_offsets"] = torch.from_numpy(offsets)
        return out
    return convert


def touch(batch: dict[str, Any], dense: list[str], sparse: list[str]) -> int:
    """Reads every column's tensors as a trainer would; returns the batch's rows."""
    rows = batch["label"].shape[0]
    for name in dense:
        if batch[name].shape[0] != rows:
            raise RuntimeError(f"column {name}: {batch[name].shape[0]} rows, label has {rows}")
    for name in sparse:
        offsets = batch[f"{name}_offsets"]
        if offsets.shape[0] != rows + 1 or int(offsets[-1]) != batch[name].shape[0]:
            raise RuntimeError(f"column {name}: offsets do not match {rows} rows of values")
    return rows


def lance_reader(dataset: lance.LanceDataset, batch_size: int, dense: list[str],
                 sparse: list[str], shuffle: bool) -> Callable[[int], int]:
    to_tensor = jagged_to_tensor(dense, sparse)
    def epoch(e: int) -> int:
        sampler = ShardedBatchSampler(0, 1, randomize=True, seed=e) if shuffle else None
        loader = LanceDataset(dataset, batch_size=batch_size, columns=[*dense, *sparse],
                              sampler=sampler, to_tensor_fn=to_tensor)
        return sum(touch(b, dense, sparse) for b in loader)
    return epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parquet_dir")
    parser.add_argument("--lance-dir", required=True,
                        help="where the Lance copy lives (written on the first run)")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--epochs", type=int, default=3, help="timed epochs after a warm one")
    parser.add_argument("--json")
    args = parser.parse_args()
    # Lance's own noise: its dense columns become read-only tensors (nothing here writes to
    # them), and ShardedBatchSampler warns that it has no row ids whenever LanceDataset passes
    # with_row_id, even as False.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
    warnings.filterwarnings("ignore", message="with_row_id is not supported")

    source = parquet_source(args.parquet_dir)
    conversion = ensure_lance(source, args.lance_dir)
    if conversion is None:
        print(f"conversion   reused {args.lance_dir}")
    else:
        print(f"conversion   {conversion:.2f} s to {args.lance_dir}")
    dataset = lance.dataset(args.lance_dir)
    dense, sparse = feature_columns(dataset.schema)
    rows = dataset.count_rows()

    results: dict[str, Any] = {"lance_version": lance.__version__,
                               "conversion_seconds": conversion,
                               "rows": rows, "batch_size": args.batch_size,
                               "epochs": args.epochs, "shuffle_mode": SHUFFLE_MODE,
                               "load_before": os.getloadavg()[0]}
    for name, shuffle in (("unshuffled", False), ("shuffled", True)):
        reader = lance_reader(dataset, args.batch_size, dense, sparse, shuffle)
        results[name] = best_rate(reader, args.epochs, expected=rows)
        print(f"{name:12s} {results[name] / 1e6:.3f}M rows/s")
    results["load_after"] = os.getloadavg()[0]
    if args.json:
        write_json(args.json, results, indent=1)


if __name__ == "__main__":
    main()
