"""The loaders under test: the ways a user could feed PyTorch from Parquet, each set up as its
own documentation recommends, each delivering dicts of torch tensors of the same columns and
batch size.

A loader is a `Loader`: `convert(spec)` writes the loader's own copy of a dataset when it reads
another format (Mosaic Streaming's MDS), once, beside the dataset, in a process of its own
before any measurement; `prepare(spec)` does once-per-process setup outside the clock (starting
Ray: a training job starts its cluster once, not per epoch); `batches(spec)` returns the
iterator of batches and the clock runs from that call; `close(spec)` tears down after the clock
stops. Frameworks are imported inside these functions, so this module loads in each of the
benchmark's environments (Petastorm's has an older pyarrow and no Stoker; Streaming's and
Grain's have no Stoker either).

With `Spec.output == "arrow"` (the criteo-nulls data: tensors cannot hold nulls or strings) a
loader delivers what it has for such columns: Arrow record batches where it can, else dicts of
arrays (NumPy with NaN for nulls, object arrays for strings).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LOADERS", "SETTINGS", "Loader", "NotAvailable", "Spec"]

Batch = dict[str, Any]  # column name -> torch.Tensor


class NotAvailable(Exception):
    """The loader cannot run this measurement: a feature it lacks or a type it cannot read."""


@dataclasses.dataclass(frozen=True)
class Spec:
    """One measurement, as the harness passes it (JSON) to a fresh child process."""

    loader: str  # A key of LOADERS.
    dataset: str  # Absolute path of a directory of part-*.parquet files.
    columns: list[str]  # Every loader delivers exactly these, in any order.
    batch_size: int
    settings: dict[str, Any]  # The loader's own knobs: one entry of SETTINGS[loader].
    seed: int = 0
    shuffle_rows: int = 262_144  # Rows mixed by the shuffling loaders (Stoker's default window).
    step_rows_per_s: float | None = None  # Simulated accelerator speed R; None: no step.
    max_rows: int | None = None  # Stop after this many rows (stall runs); None: one epoch.
    output: str = "torch"  # "torch": dicts of tensors; "arrow": Arrow where the loader can.


@dataclasses.dataclass(frozen=True)
class Loader:
    module: str  # Imported to tell whether this environment can run the loader.
    batches: Callable[[Spec], Iterator[Batch]]
    prepare: Callable[[Spec], None] | None = None
    close: Callable[[Spec], None] | None = None
    convert: Callable[[Spec], None] | None = None  # Raises NotAvailable if it cannot.
    # Loaders that handle each row in Python (Streaming, Grain) take minutes per epoch: their
    # throughput runs stop after this many rows (None: the whole epoch), and they are left out
    # of the stall runs, where their throughput alone bounds the stall share (1 - rows/s / R).
    max_rows: int | None = None
    stall: bool = True


def parquet_files(dataset: str) -> list[str]:
    """The dataset's files in sorted path order, as Stoker and `stoker gen` name them."""
    names = sorted(name for name in os.listdir(dataset) if name.endswith(".parquet"))
    return [os.path.join(dataset, name) for name in names]


# --- Stoker ----------------------------------------------------------------------------------


def _stoker_batches(spec: Spec) -> Iterator[Batch]:
    import stoker

    # Passed only when set: a Stoker without a cache has no cache_dir option.
    options = {"cache_dir": spec.settings["cache_dir"]} if "cache_dir" in spec.settings else {}
    loader = stoker.Loader(
        spec.dataset,
        columns=spec.columns,
        batch_size=spec.batch_size,
        shuffle=spec.settings.get("shuffle", True),
        seed=spec.seed,
        shuffle_window=spec.settings.get("shuffle_window", spec.shuffle_rows),
        num_threads=spec.settings.get("num_threads"),
        output=spec.output,
        **options,
    )
    return iter(loader)


def _stoker_warm_prepare(spec: Spec) -> None:
    """Fills a fresh disk cache (docs/cache.md) with one epoch outside the clock, so the
    measured epoch reads every row group from the cache: what every epoch after the first
    costs. The cache lives beside the dataset, in the page cache like the dataset itself."""
    import tempfile

    import stoker

    if "cache_dir" not in inspect.signature(stoker.Loader).parameters:
        raise NotAvailable("this Stoker has no cache (no cache_dir option)")
    # Settings are this process's copy: the measured epoch finds the cache there.
    spec.settings["cache_dir"] = tempfile.mkdtemp(
        prefix=os.path.basename(spec.dataset) + ".stoker-cache-", dir=os.path.dirname(spec.dataset)
    )
    for _ in _stoker_batches(dataclasses.replace(spec, seed=spec.seed + 1)):
        pass


def _stoker_warm_close(spec: Spec) -> None:
    shutil.rmtree(spec.settings.pop("cache_dir", ""), ignore_errors=True)


# --- plain PyArrow: the decode floor ---------------------------------------------------------


def _pyarrow_batches(spec: Spec) -> Iterator[Batch]:
    """`ParquetFile.iter_batches` + `to_numpy`, files in order, no shuffle: `stoker bench`'s
    baseline, handed on as torch tensors (Arrow output: the record batches as read)."""
    if spec.output == "arrow":
        return _arrow_batches(spec)
    return _torch_from_numpy(_numpy_batches(spec))


def _arrow_batches(spec: Spec) -> Iterator[Any]:
    import pyarrow.parquet as pq

    for path in parquet_files(spec.dataset):
        yield from pq.ParquetFile(path).iter_batches(
            batch_size=spec.batch_size, columns=spec.columns
        )


def _numpy_batches(spec: Spec) -> Iterator[dict[str, Any]]:
    from stoker.cli.bench import BenchOptions
    from stoker.cli.bench import _pyarrow_batches as numpy_batches

    options = BenchOptions(source=spec.dataset, columns=spec.columns, batch_size=spec.batch_size)
    return numpy_batches(parquet_files(spec.dataset), options)


def _torch_from_numpy(batches: Iterator[dict[str, Any]]) -> Iterator[Batch]:
    import torch

    for batch in batches:
        yield {name: torch.from_numpy(values) for name, values in batch.items()}


# --- PyTorch DataLoader over an IterableDataset ----------------------------------------------


def _torch_batches(spec: Spec) -> Iterator[Batch]:
    """What the PyTorch docs show for an IterableDataset: each worker process takes its share of
    the units (here row groups, in an order shuffled per epoch), reads them with PyArrow and
    yields ready batches (`batch_size=None`); rows are shuffled within each row group. Columns
    become numpy as in `stoker bench` (fixed-size lists as one more dimension)."""
    import pyarrow.parquet as pq
    import torch
    from stoker.cli.bench import arrow_to_numpy
    from torch.utils.data import DataLoader, IterableDataset, get_worker_info

    units = [
        (path, group)
        for path in parquet_files(spec.dataset)
        for group in range(pq.ParquetFile(path).num_row_groups)
    ]

    class RowGroups(IterableDataset):
        def __iter__(self) -> Iterator[Batch]:
            import numpy as np

            info = get_worker_info()
            worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
            order = list(units)
            random.Random(spec.seed).shuffle(order)
            rng = np.random.default_rng([spec.seed, worker])
            for path, group in order[worker::workers]:
                table = pq.ParquetFile(path).read_row_group(group, columns=spec.columns)
                table = table.take(rng.permutation(table.num_rows))
                for batch in table.to_batches(max_chunksize=spec.batch_size):
                    if spec.output == "arrow":
                        yield batch
                    else:
                        yield {k: torch.from_numpy(v) for k, v in arrow_to_numpy(batch).items()}

    # pin_memory: off for the host-memory benchmarks; gpu_utilization.py turns it on, as a
    # GPU training loop would.
    loader = DataLoader(
        RowGroups(),
        batch_size=None,
        num_workers=spec.settings["num_workers"],
        pin_memory=spec.settings.get("pin_memory", False),
    )
    return iter(loader)


# --- Petastorm -------------------------------------------------------------------------------


def _petastorm_batches(spec: Spec) -> Iterator[Batch]:
    """`make_batch_reader` (thread pool, row groups in random order) feeding `BatchedDataLoader`
    with a shuffling queue of `spec.shuffle_rows` rows, as Petastorm's PyTorch docs show."""
    from petastorm import make_batch_reader
    from petastorm.pytorch import BatchedDataLoader

    reader = make_batch_reader(
        "file://" + os.path.abspath(spec.dataset),
        schema_fields=spec.columns,
        reader_pool_type="thread",
        workers_count=spec.settings["workers_count"],
        convert_early_to_numpy=spec.settings["convert_early_to_numpy"],
        shuffle_row_groups=True,
        seed=spec.seed,
        num_epochs=1,
    )
    missing = sorted(set(spec.columns) - set(reader.schema.fields))
    if missing:
        reader.stop()
        reader.join()
        raise NotAvailable(
            f"make_batch_reader cannot read column(s) {', '.join(missing)} "
            "(its schema inference has no mapping for their Arrow type)"
        )
    # Petastorm 0.13.1's thread pool ends an epoch when it sees every worker idle and then the
    # ventilator finished, two checks that are not atomic: if its ventilator thread hands out
    # every row group between them, the epoch ends before it starts (about 1 run in 10 here on
    # small datasets). Waiting for the first row group to be handed out closes that window; a
    # run that still comes up short is reported as failed by the harness.
    pool = reader._workers_pool
    while pool._ventilated_items == 0 and not pool._ventilator.completed():
        time.sleep(0.001)
    try:
        yield from BatchedDataLoader(
            reader, batch_size=spec.batch_size, shuffling_queue_capacity=spec.shuffle_rows
        )
    except TypeError as exc:  # Its torch collation refuses strings (the criteo-nulls data).
        raise NotAvailable(f"BatchedDataLoader: {exc}") from exc
    finally:
        reader.stop()
        reader.join()


# --- Ray Data --------------------------------------------------------------------------------


def _ray_prepare(spec: Spec) -> None:
    import ray

    ray.init(
        address="local",  # a Ray of its own, never a cluster another process left running
        num_cpus=os.cpu_count(),
        include_dashboard=False,
        log_to_driver=False,
        logging_level="ERROR",
    )
    ray.data.DataContext.get_current().enable_progress_bars = False


def _ray_batches(spec: Spec) -> Iterator[Batch]:
    """`read_parquet` (files in random order) -> `iter_torch_batches` with a local shuffle buffer
    of `spec.shuffle_rows` rows: the shuffle Ray's docs recommend for training ingest."""
    import ray

    dataset = ray.data.read_parquet(spec.dataset, columns=spec.columns, shuffle="files")
    options = {
        "batch_size": spec.batch_size,
        "local_shuffle_buffer_size": spec.shuffle_rows,
        "local_shuffle_seed": spec.seed,
        "prefetch_batches": spec.settings["prefetch_batches"],
    }
    if spec.output == "arrow":
        return iter(dataset.iter_batches(batch_format="pyarrow", **options))
    return iter(dataset.iter_torch_batches(device="cpu", **options))


def _ray_close(spec: Spec) -> None:
    import ray

    ray.shutdown()


# --- MosaicML Streaming ----------------------------------------------------------------------

MDS_SUFFIX = ".mds"  # The MDS copy of dataset DIR is DIR.mds, beside it.
MDS_STAMP = "stoker-source.json"  # In the copy: the identity of the Parquet files it was made of.


def mds_path(dataset: str) -> str:
    return dataset.rstrip("/") + MDS_SUFFIX


def _mds_columns(dataset: str, columns: list[str]) -> dict[str, str]:
    """MDS encodings of the dataset's columns, as Streaming's docs map them ("int64", "float32",
    "ndarray:float32:64" for a vector, "str"). Raises NotAvailable for what MDS cannot express:
    its encodings store one value per sample and have no null."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(parquet_files(dataset)[0])
    encodings, nulls = {}, []
    for path in parquet_files(dataset):
        metadata = pq.read_metadata(path)
        for group in range(metadata.num_row_groups):
            for index in range(metadata.num_columns):
                chunk = metadata.row_group(group).column(index)
                if chunk.statistics is not None and chunk.statistics.null_count:
                    nulls.append(chunk.path_in_schema)
    if nulls:
        nullable = sorted(set(nulls), key=schema.names.index)
        shown = ", ".join(nullable[:3]) + (", ..." if len(nullable) > 3 else "")
        raise NotAvailable(
            f"MDS cannot hold the nulls of {len(nullable)} column(s) ({shown}): its encodings "
            "store a value per sample and have no null (only 'pkl', a pickled Python object "
            "per value, could)"
        )
    for name in columns:
        kind = schema.field(name).type
        if pa.types.is_fixed_size_list(kind) and pa.types.is_primitive(kind.value_type):
            encodings[name] = f"ndarray:{kind.value_type.to_pandas_dtype().__name__}:{kind.list_size}"
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            encodings[name] = "str"
        elif pa.types.is_integer(kind) or pa.types.is_floating(kind):
            encodings[name] = str(kind.to_pandas_dtype().__name__)
        else:
            raise NotAvailable(f"no MDS encoding for column {name} of type {kind}")
    return encodings


def _source_identity(dataset: str) -> list[list[Any]]:
    return [[os.path.basename(p), os.path.getsize(p), os.stat(p).st_mtime_ns]
            for p in parquet_files(dataset)]


def _streaming_convert(spec: Spec) -> None:
    """Writes the dataset as MDS with Streaming's own `MDSWriter` (its default compression,
    none, and shard size), row by row, into DIR.mds; kept while the Parquet files are
    unchanged. As Streaming's docs do a parallel conversion: one writer per Parquet file, each
    in a process of a pool, into a subfolder, then `merge_index` joins their indexes."""
    import multiprocessing

    from streaming.base.util import merge_index

    out = mds_path(spec.dataset)
    stamp = os.path.join(out, MDS_STAMP)
    identity = {"files": _source_identity(spec.dataset), "columns": spec.columns}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == identity:
                return
    encodings = _mds_columns(spec.dataset, spec.columns)
    shutil.rmtree(out, ignore_errors=True)
    parts = [(path, os.path.join(out, f"{index:05d}"), spec.columns, encodings)
             for index, path in enumerate(parquet_files(spec.dataset))]
    with multiprocessing.Pool(min(len(parts), os.cpu_count() or 1)) as pool:
        pool.map(_write_mds_part, parts)
    merge_index(out, keep_local=True)
    with open(stamp, "w") as f:
        json.dump(identity, f)


def _write_mds_part(part: tuple[str, str, list[str], dict[str, str]]) -> None:
    """One Parquet file into one MDS folder, a sample per row."""
    import pyarrow.parquet as pq
    from streaming import MDSWriter

    path, out, columns, encodings = part
    with MDSWriter(out=out, columns=encodings) as writer:
        for batch in pq.ParquetFile(path).iter_batches(columns=columns):
            values = _numpy_columns(batch)
            for row in range(batch.num_rows):
                writer.write({name: column[row] for name, column in values.items()})


def _numpy_columns(batch: Any) -> dict[str, Any]:
    """A record batch as numpy columns for MDSWriter: fixed-size lists as 2-D arrays, strings
    as Python str. (No Stoker here to lend stoker.cli.bench.arrow_to_numpy.)"""
    import pyarrow as pa

    columns = {}
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if pa.types.is_fixed_size_list(column.type):
            columns[name] = column.flatten().to_numpy().reshape(len(column), column.type.list_size)
        else:
            columns[name] = column.to_numpy(zero_copy_only=False)
    return columns


def _streaming_batches(spec: Spec) -> Iterator[Batch]:
    """`StreamingDataset(local=DIR.mds, shuffle=True, batch_size=B)` with its default shuffle
    (algorithm py1e; block size max(4,000,000 / canonical nodes, 262,144), canonical nodes = 1
    physical node here) through a torch `DataLoader(batch_size=B, num_workers=W)`, as
    Streaming's docs show."""
    from streaming import StreamingDataset
    from torch.utils.data import DataLoader

    if spec.output == "arrow":
        raise NotAvailable("Streaming delivers samples through a torch DataLoader, not Arrow")
    dataset = StreamingDataset(
        local=mds_path(spec.dataset), shuffle=True, shuffle_seed=spec.seed,
        batch_size=spec.batch_size,
    )
    return iter(DataLoader(dataset, batch_size=spec.batch_size,
                           num_workers=spec.settings["num_workers"]))


def _streaming_close(spec: Spec) -> None:
    from streaming.base.util import clean_stale_shared_memory

    clean_stale_shared_memory()  # Streaming keeps shared memory by dataset; leave none behind.


# --- Grain -----------------------------------------------------------------------------------


def _grain_batches(spec: Spec) -> Iterator[Batch]:
    """Grain's Parquet source, `grain.experimental.ParquetIterDataset(files)` (one row group at a
    time per file, files interleaved), shuffled by `WindowShuffleIterDataset` over
    `spec.shuffle_rows` rows (an IterDataset has no global shuffle), batched with `.batch(B)`,
    and parallel as its docs show: `.mp_prefetch(MultiprocessingOptions(num_workers=W))`, or
    with W = 0 a `ThreadPrefetchIterDataset` behind the source as its Parquet tutorial does.
    Rows are dicts of NumPy scalars; `.batch` stacks them; the harness gets tensors."""
    import grain

    files = parquet_files(spec.dataset)
    workers = spec.settings["mp_workers"]
    dataset = grain.experimental.ParquetIterDataset(files)
    if workers == 0:
        dataset = grain.experimental.ThreadPrefetchIterDataset(dataset, prefetch_buffer_size=10)
    dataset = grain.experimental.WindowShuffleIterDataset(
        dataset, window_size=spec.shuffle_rows, seed=spec.seed
    )
    dataset = dataset.batch(spec.batch_size)
    if workers > 0:
        dataset = dataset.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))
    if spec.output == "arrow":
        return iter(dataset)
    return _torch_from_numpy(iter(dataset))


# Rows a per-row Python loader reads per throughput run: two shuffle windows, enough to fill
# its buffer and drain a whole one.
PER_ROW_MAX_ROWS = 2 * Spec.shuffle_rows

LOADERS: dict[str, Loader] = {
    "stoker": Loader(module="stoker", batches=_stoker_batches),
    "stoker-warm": Loader(
        module="stoker",
        batches=_stoker_batches,
        prepare=_stoker_warm_prepare,
        close=_stoker_warm_close,
    ),
    # The same engine without shuffle: what the shuffle costs Stoker on each dataset.
    "stoker-unshuffled": Loader(module="stoker", batches=_stoker_batches, stall=False),
    "pyarrow": Loader(module="stoker", batches=_pyarrow_batches),
    "torch-dataloader": Loader(module="stoker", batches=_torch_batches),
    "petastorm": Loader(module="petastorm", batches=_petastorm_batches),
    "ray-data": Loader(
        module="ray.data", batches=_ray_batches, prepare=_ray_prepare, close=_ray_close
    ),
    "streaming": Loader(
        module="streaming",
        batches=_streaming_batches,
        convert=_streaming_convert,
        close=_streaming_close,
        max_rows=PER_ROW_MAX_ROWS,
        stall=False,
    ),
    "grain": Loader(
        module="grain", batches=_grain_batches, max_rows=PER_ROW_MAX_ROWS, stall=False
    ),
}

# The settings tried per loader; each loader's figures are those of its best (by rows/s).
SETTINGS: dict[str, list[dict[str, Any]]] = {
    "stoker": [{}],  # The library's defaults: a thread per core.
    "stoker-warm": [{"warm": True}],
    "stoker-unshuffled": [{"shuffle": False}],
    "pyarrow": [{}],
    "torch-dataloader": [{"num_workers": 2}],
    "petastorm": [
        {"workers_count": workers, "convert_early_to_numpy": early}
        for workers in (2, 4, 10)
        for early in (False, True)
    ],
    "ray-data": [{"prefetch_batches": prefetch} for prefetch in (1, 4)],
    # 2 and 4 workers measured the same (Streaming's per-row Python is the bound): one setting.
    "streaming": [{"num_workers": 2}],
    "grain": [{"mp_workers": workers} for workers in (0, 2)],
}
