"""Multi-hot rows as TorchRec consumes them (issue 46; docs/torchrec.md, "What it costs").

One process, one dataset (`stoker gen --preset multihot`), each reader timed over whole
epochs after a warm one, the best of `--epochs` kept, in the same run so ratios compare:

- pyarrow: ``ParquetFile.iter_batches`` of the same columns, file by file (the floor: no
  shuffle, no batching across files, no tensors);
- ragged: ``stoker.Loader`` with every list column ragged, numpy output, shuffled and not;
- kjt parts: the engine's KeyedJaggedTensor parts (``output="torchrec"`` without TorchRec's
  constructor), shuffled and not;
- torchrec: ``output="torchrec"`` (TorchRec's Batch), shuffled, when TorchRec is installed;
  and the Python time per batch of building the KeyedJaggedTensor from the parts, against
  the conversion a user writes from the ragged numpy columns.

    python benchmarks/torchrec_batches.py DATA [--epochs 3] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
from typing import Any

import pyarrow.parquet as pq
import stoker
from stoker import _core
from stoker_devtools.bench import best_rate, per_call_us, write_json

BATCH = 4096


def columns(path: str) -> tuple[list[str], list[str]]:
    schema = pq.read_schema(min(glob.glob(os.path.join(path, "*.parquet"))))
    sparse = [f.name for f in schema if f.name.startswith("C")]
    dense = [f.name for f in schema if f.name.startswith("I")]
    return sparse, dense


def pyarrow_floor(path: str, names: list[str]) -> Any:
    files = sorted(glob.glob(os.path.join(path, "*.parquet")))
    def epoch(_: int) -> int:
        return sum(b.num_rows for f in files
                   for b in pq.ParquetFile(f).iter_batches(batch_size=BATCH, columns=names))
    return epoch


def ragged(path: str, names: list[str], sparse: list[str], shuffle: bool, threads: int) -> Any:
    loader = stoker.Loader(path, columns=names, batch_size=BATCH, shuffle=shuffle,
                           num_threads=threads,
                           transforms=[{"op": "ragged", "column": c} for c in sparse])
    def epoch(e: int) -> int:
        loader.set_epoch(e)
        return sum(len(b["label"]) for b in loader)
    return epoch


def kjt_parts(path: str, names: list[str], sparse: list[str], dense: list[str],
              threads: int, shuffle: bool = True) -> Any:
    probe = stoker.Loader(path, columns=names, batch_size=BATCH, output="arrow",
                          num_threads=threads, shuffle=shuffle)
    engine = _core.Loader(probe._options, "torchrec")
    spec = _core.KjtSpec(sparse, [], dense, ["label"], "int32")
    def epoch(e: int) -> int:
        stream = engine.start_epoch(e, [])
        stream.use_kjt(spec)
        rows = 0
        while True:
            while not stream.wait_ready():
                pass
            parts = stream.next()
            if parts is None:
                return rows
            rows += parts[-1]
    return epoch


def torchrec_loader(path: str, names: list[str], sparse: list[str], dense: list[str],
                    threads: int) -> Any:
    loader = stoker.Loader(path, columns=names, batch_size=BATCH, num_threads=threads,
                           output="torchrec",
                           torchrec={"sparse": sparse, "dense": dense, "labels": ["label"]})
    def epoch(e: int) -> int:
        loader.set_epoch(e)
        return sum(b.sparse_features.stride() for b in loader)
    return epoch


def python_costs(path: str, names: list[str], sparse: list[str], dense: list[str]) -> dict:
    """Median µs per batch: stoker.torchrec's KJT + Batch from the engine's parts, and the
    conversion a user writes from ragged numpy columns (TorchRec installed)."""
    import numpy as np
    import torch
    from stoker.torchrec import Features, Maker
    from torchrec.datasets.utils import Batch
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    probe = stoker.Loader(path, columns=names, batch_size=BATCH, output="arrow")
    maker = Maker(Features.of({"sparse": sparse, "dense": dense, "labels": ["label"]})
                  .check(probe.schema))
    arrow_batch = next(iter(probe))
    parts = _core.to_kjt_parts(arrow_batch, maker.spec)
    numpy_batch = _core.to_tensors(arrow_batch, "numpy", sparse)

    def user_conversion(b: dict) -> Any:
        values = torch.from_numpy(np.concatenate([b[k] for k in sparse]))
        lengths = torch.from_numpy(np.concatenate(
            [np.diff(b[f"{k}_offsets"]).astype(np.int32) for k in sparse]))
        kjt = KeyedJaggedTensor.from_lengths_sync(keys=sparse, values=values, lengths=lengths)
        dense_t = torch.from_numpy(np.stack([b[c] for c in dense], axis=1))
        return Batch(dense_features=dense_t, sparse_features=kjt,
                     labels=torch.from_numpy(b["label"]))

    # The median of 200 single calls.
    return {"stoker_kjt_us": per_call_us(lambda: maker(parts), calls=1, rounds=200),
            "user_conversion_us": per_call_us(lambda: user_conversion(numpy_batch), calls=1,
                                              rounds=200)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--json")
    args = parser.parse_args()
    sparse, dense = columns(args.data)
    names = ["label", *dense, *sparse]
    readers = {
        "pyarrow": pyarrow_floor(args.data, names),
        "ragged_shuffled": ragged(args.data, names, sparse, True, args.threads),
        "ragged_unshuffled": ragged(args.data, names, sparse, False, args.threads),
        "kjt_parts_shuffled": kjt_parts(args.data, names, sparse, dense, args.threads),
        "kjt_parts_unshuffled": kjt_parts(args.data, names, sparse, dense, args.threads,
                                          shuffle=False),
    }
    try:
        import torchrec  # noqa: F401
        readers["torchrec_shuffled"] = torchrec_loader(args.data, names, sparse, dense,
                                                       args.threads)
    except ImportError:
        pass
    results: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    for name, reader in readers.items():
        results[name] = best_rate(reader, args.epochs)
        print(f"{name:22s} {results[name] / 1e6:.3f}M rows/s")
    floor = results["pyarrow"]
    results["ratios"] = {
        "shuffled/floor": results["ragged_shuffled"] / floor,
        "unshuffled/floor": results["ragged_unshuffled"] / floor,
        "shuffled/unshuffled": results["ragged_shuffled"] / results["ragged_unshuffled"],
        "kjt_parts/ragged (shuffled)": results["kjt_parts_shuffled"]
                                       / results["ragged_shuffled"],
        "kjt_parts shuffled/floor": results["kjt_parts_shuffled"] / floor,
        "kjt_parts unshuffled/floor": results["kjt_parts_unshuffled"] / floor,
    }
    if "torchrec_shuffled" in results:
        results["ratios"]["torchrec/ragged (shuffled)"] = (results["torchrec_shuffled"]
                                                          / results["ragged_shuffled"])
        results["python"] = python_costs(args.data, names, sparse, dense)
    results["load_after"] = os.getloadavg()[0]
    print(json.dumps({k: results[k] for k in ("ratios", "python", "load_before", "load_after")
                      if k in results}, indent=1))
    if args.json:
        write_json(args.json, results, indent=1)


if __name__ == "__main__":
    main()
