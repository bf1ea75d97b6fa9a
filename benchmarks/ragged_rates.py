"""Multi-hot rows (or user histories) as ragged numpy batches, shuffled and not, against PyArrow's floor: the
figures a build's list path is judged by (docs/benchmarks.md, "Multi-hot rows and TorchRec").

``--package-dir`` reads with another build of Stoker (a ``pip install --target DIR`` of an
older commit, with DIR/pyarrow linked to this venv's pyarrow), so a before/after is measured
with one script on the same data; run the two alternately.

    python benchmarks/ragged_rates.py DATA [--package-dir DIR] [--epochs 3]
"""

from __future__ import annotations

import argparse
import glob
import os
import sys

from stoker_devtools.bench import best_rate, emit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--package-dir")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.package_dir:
        sys.path.insert(0, args.package_dir)
    import pyarrow as pa
    import pyarrow.parquet as pq
    import stoker
    files = sorted(glob.glob(os.path.join(args.data, "*.parquet")))
    schema = pq.read_schema(files[0])
    # Every column but the row ids; the lists ragged (multihot's C1..C26, sequences' history
    # lists).
    names = [f.name for f in schema if f.name != "row_id"]
    sparse = [f.name for f in schema
              if pa.types.is_list(f.type) or pa.types.is_large_list(f.type)]
    out = {"stoker": stoker.__file__, "pyarrow": best_rate(lambda _: sum(
        b.num_rows for f in files
        for b in pq.ParquetFile(f).iter_batches(batch_size=4096, columns=names)), args.epochs)}
    for shuffle in (True, False):
        loader = stoker.Loader(args.data, columns=names, batch_size=4096, shuffle=shuffle,
                               num_threads=args.threads,
                               transforms=[{"op": "ragged", "column": c} for c in sparse])
        def epoch(e: int, loader: stoker.Loader = loader) -> int:
            loader.set_epoch(e)
            return sum(len(b["label"]) for b in loader)
        name = "shuffled" if shuffle else "unshuffled"
        out[name] = best_rate(epoch, args.epochs)
        stats = loader.stats()
        out[name + "_stats"] = {k: stats[k] for k in ("decode_seconds", "assemble_seconds",
                                                      "read_seconds")}
    out["load"] = os.getloadavg()[0]
    emit(out)


if __name__ == "__main__":
    main()
