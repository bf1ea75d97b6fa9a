"""Petastorm's readers against Stoker on the same Petastorm dataset, one with array and image
fields: Petastorm's make_reader (its row path, decoding each row's codecs in its worker
threads) and make_batch_reader (which does not decode codecs: a TransformSpec decodes them
with Petastorm's own codecs, what a user of that path must write) against
stoker.petastorm.make_reader (rows), stoker.petastorm.make_batch_reader (column batches) and
stoker.petastorm.make_loader (tensors, the fast path). The codecs run in every reader: the
delivered values are decoded tensors. Each run is a fresh process in the reader's own
environment, one epoch, no cache; medians of --repeats; the load average around each run.

    python benchmarks/petastorm_readers.py --petastorm-python .bench-petastorm-venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from stoker_devtools.bench import emit, interleaved, listed, run_json, write_json

FIELDS = ["id", "image", "depth", "embedding"]


def write_dataset(out: str, rows: int, row_group_rows: int) -> None:
    """In Petastorm's environment: a dataset of png images, compressed depth maps and float
    arrays, encoded by Petastorm's codecs and described by its Unischema."""
    import numpy as np
    from petastorm.codecs import (
        CompressedImageCodec,
        CompressedNdarrayCodec,
        NdarrayCodec,
        ScalarCodec,
    )
    from petastorm.unischema import Unischema, UnischemaField
    from pyspark.sql.types import IntegerType
    from stoker_devtools.petastorm_writer import image, write_with_codecs

    schema = Unischema("Bench", [
        UnischemaField("id", np.int32, (), ScalarCodec(IntegerType()), False),
        UnischemaField("image", np.uint8, (64, 64, 3), CompressedImageCodec("png"), False),
        UnischemaField("depth", np.float32, (32, 32), CompressedNdarrayCodec(), False),
        UnischemaField("embedding", np.float32, (128,), NdarrayCodec(), False),
    ])

    def row(i: int) -> dict:
        rng = np.random.default_rng(i)
        return {"id": np.int32(i), "image": image(rng, (64, 64, 3)),
                "depth": np.cumsum(rng.normal(size=(32, 32)), axis=1).astype(np.float32),
                "embedding": rng.normal(size=128).astype(np.float32)}

    write_with_codecs(Path(out), schema, row, rows=rows, files=4, row_group_rows=row_group_rows)


def run_petastorm(url: str, reader: str, threads: int) -> dict:
    import numpy as np
    from petastorm import make_batch_reader, make_reader
    from petastorm.etl.dataset_metadata import get_schema_from_dataset_url
    from petastorm.transform import TransformSpec

    started = time.perf_counter()
    rows = 0
    if reader == "make_reader":
        with make_reader(url, workers_count=threads, num_epochs=1, seed=1) as r:
            for _sample in r:
                rows += 1
    else:
        schema = get_schema_from_dataset_url(url)
        encoded = [f for f in schema.fields.values() if f.codec is not None
                   and type(f.codec).__name__ != "ScalarCodec"]

        def decode(frame):
            for field in encoded:
                frame[field.name] = [np.ascontiguousarray(field.codec.decode(field, v))
                                     for v in frame[field.name]]
            return frame

        # The decoded fields' types, which Petastorm checks each batch against.
        edits = [(f.name, f.numpy_dtype, f.shape, f.nullable) for f in encoded]
        with make_batch_reader(url, workers_count=threads, num_epochs=1, seed=1,
                               transform_spec=TransformSpec(decode, edit_fields=edits)) as r:
            for batch in r:
                assert batch.image.shape[1:] == (64, 64, 3), batch.image.shape
                rows += len(batch.id)
    return {"rows": rows, "seconds": time.perf_counter() - started}


def run_stoker(url: str, reader: str, threads: int) -> dict:
    import stoker.petastorm as sp

    started = time.perf_counter()
    rows = 0
    if reader == "make_reader":
        with sp.make_reader(url, workers_count=threads, num_epochs=1, seed=1) as r:
            for _sample in r:
                rows += 1
    elif reader == "make_batch_reader":
        with sp.make_batch_reader(url, workers_count=threads, num_epochs=1, seed=1) as r:
            for batch in r:
                rows += len(batch.id)
    else:
        for batch in sp.make_loader(url, batch_size=256, num_threads=threads, seed=1):
            rows += len(batch["id"])
    return {"rows": rows, "seconds": time.perf_counter() - started}


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--petastorm-python", required=True)
    parser.add_argument("--dataset", help="an existing dataset directory (else one is written)")
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--row-group-rows", type=int, default=1_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-python",
                        help="a Python whose stoker is another build (a before/after): its "
                             "three readers run beside this one's")
    parser.add_argument("--baseline-label", default="baseline",
                        help="what the tables call the baseline build")
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, url, reader = args.child
        if kind == "write":
            write_dataset(url, args.rows, args.row_group_rows)
            emit({"written": url})
            return
        run = run_petastorm if kind == "petastorm" else run_stoker
        emit(run(url, reader, args.threads))
        return

    def child(python: str, *what: str) -> dict:
        return run_json([python, __file__, "--petastorm-python", args.petastorm_python,
                         "--rows", str(args.rows), "--row-group-rows", str(args.row_group_rows),
                         "--threads", str(args.threads), "--child", *what])

    def run_case(url: str, kind: str, reader: str,
                 python: str) -> Callable[[int], tuple[dict, tuple]]:
        """One run in a fresh process, and the 1-minute load average before and after it."""
        def run(_: int) -> tuple[dict, tuple]:
            before = load()
            return child(python, kind, url, reader), (before, load())
        return run

    with tempfile.TemporaryDirectory() as tmp:
        dataset = args.dataset or os.path.join(tmp, "dataset")
        if args.dataset is None:
            child(args.petastorm_python, "write", dataset, "-")
        url = Path(dataset).resolve().as_uri()
        cases = [("petastorm", "petastorm", "make_reader", args.petastorm_python),
                 ("petastorm", "petastorm", "make_batch_reader", args.petastorm_python)]
        builds = [("stoker", sys.executable)]
        if args.baseline_python:
            builds.insert(0, (f"stoker ({args.baseline_label})", args.baseline_python))
        for reader in ("make_reader", "make_batch_reader", "make_loader"):
            cases += [(label, "stoker", reader, python) for label, python in builds]
        # Round robin: each repeat runs every case once, so drift in the machine's load
        # reaches every case alike.
        runs = interleaved({i: run_case(url, kind, reader, python)
                            for i, (_, kind, reader, python) in enumerate(cases)}, args.repeats)
        results = []
        for i, (label, _, reader, _) in enumerate(cases):
            rates = [run["rows"] / run["seconds"] for run, _ in runs[i]]
            results.append({"loader": label, "reader": reader, "rows": runs[i][-1][0]["rows"],
                            "rows_per_second": rates, "median": statistics.median(rates),
                            "load_average": [loads for _, loads in runs[i]]})
    print(f"{args.rows} rows (png 64x64x3, compressed float32 32x32, float32 128), "
          f"{args.threads} threads, {args.repeats} runs each, {os.cpu_count()} CPUs")
    print("| loader | reader | rows/s, median (runs) | 1-min load before → after each run |")
    print("| --- | --- | --- | --- |")
    for r in results:
        loads = ", ".join(f"{a:.1f}→{b:.1f}" for a, b in r["load_average"])
        print(f"| {r['loader']} | {r['reader']} | **{r['median']:,.0f}** "
              f"({listed(r['rows_per_second'], spec=',.0f')}) | {loads} |")
    if args.json:
        write_json(args.json, results)


if __name__ == "__main__":
    main()
