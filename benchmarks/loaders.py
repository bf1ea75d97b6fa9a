"""The loaders under test: the ways a user could feed PyTorch from Parquet, each set up as its
own documentation recommends, each delivering dicts of torch tensors of the same columns and
batch size.

A loader is a `Loader`: `prepare(spec)` does once-per-process setup outside the clock (starting
Ray: a training job starts its cluster once, not per epoch); `batches(spec)` returns the
iterator of batches and the clock runs from that call; `close(spec)` tears down after the clock
stops. Frameworks are imported inside these functions, so this module loads in each of the
benchmark's environments (Petastorm's has an older pyarrow and no Stoker).
"""

from __future__ import annotations

import dataclasses
import inspect
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


@dataclasses.dataclass(frozen=True)
class Loader:
    module: str  # Imported to tell whether this environment can run the loader.
    batches: Callable[[Spec], Iterator[Batch]]
    prepare: Callable[[Spec], None] | None = None
    close: Callable[[Spec], None] | None = None


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
        output="torch",
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
    baseline, handed on as torch tensors."""
    import torch
    from stoker._bench import BenchOptions
    from stoker._bench import _pyarrow_batches as numpy_batches

    options = BenchOptions(source=spec.dataset, columns=spec.columns, batch_size=spec.batch_size)
    for batch in numpy_batches(parquet_files(spec.dataset), options):
        yield {name: torch.from_numpy(values) for name, values in batch.items()}


# --- PyTorch DataLoader over an IterableDataset ----------------------------------------------


def _torch_batches(spec: Spec) -> Iterator[Batch]:
    """What the PyTorch docs show for an IterableDataset: each worker process takes its share of
    the units (here row groups, in an order shuffled per epoch), reads them with PyArrow and
    yields ready batches (`batch_size=None`); rows are shuffled within each row group. Columns
    become numpy as in `stoker bench` (fixed-size lists as one more dimension)."""
    import pyarrow.parquet as pq
    import torch
    from stoker._bench import _to_numpy
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
                    yield {
                        name: torch.from_numpy(_to_numpy(column))
                        for name, column in zip(batch.schema.names, batch.columns, strict=True)
                    }

    loader = DataLoader(
        RowGroups(), batch_size=None, num_workers=spec.settings["num_workers"], pin_memory=False
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
    finally:
        reader.stop()
        reader.join()


# --- Ray Data --------------------------------------------------------------------------------


def _ray_prepare(spec: Spec) -> None:
    import ray

    ray.init(
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
    return iter(
        dataset.iter_torch_batches(
            batch_size=spec.batch_size,
            local_shuffle_buffer_size=spec.shuffle_rows,
            local_shuffle_seed=spec.seed,
            prefetch_batches=spec.settings["prefetch_batches"],
            device="cpu",
        )
    )


def _ray_close(spec: Spec) -> None:
    import ray

    ray.shutdown()


LOADERS: dict[str, Loader] = {
    "stoker": Loader(module="stoker", batches=_stoker_batches),
    "stoker-warm": Loader(
        module="stoker",
        batches=_stoker_batches,
        prepare=_stoker_warm_prepare,
        close=_stoker_warm_close,
    ),
    "pyarrow": Loader(module="stoker", batches=_pyarrow_batches),
    "torch-dataloader": Loader(module="stoker", batches=_torch_batches),
    "petastorm": Loader(module="petastorm", batches=_petastorm_batches),
    "ray-data": Loader(
        module="ray.data", batches=_ray_batches, prepare=_ray_prepare, close=_ray_close
    ),
}

# The settings tried per loader; each loader's figures are those of its best (by rows/s).
SETTINGS: dict[str, list[dict[str, Any]]] = {
    "stoker": [{}],  # The library's defaults: a thread per core.
    "stoker-warm": [{"warm": True}],
    "pyarrow": [{}],
    "torch-dataloader": [{"num_workers": 2}],
    "petastorm": [
        {"workers_count": workers, "convert_early_to_numpy": early}
        for workers in (2, 4, 10)
        for early in (False, True)
    ],
    "ray-data": [{"prefetch_batches": prefetch} for prefetch in (1, 4)],
}
