"""Petastorm datasets written by Petastorm's own codecs, without Spark: what
tests/petastorm/make_dataset.py (the every-codec dataset test_petastorm.py compares) and
benchmarks/petastorm_readers.py (the readers' benchmark dataset) write. Runs in Petastorm's
environment (.bench-petastorm-venv: petastorm 0.13.1, pyspark for the Spark SQL types, opencv
for the image codec)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from petastorm.codecs import ScalarCodec
from petastorm.etl import dataset_metadata
from petastorm.fs_utils import FilesystemResolver
from petastorm.unischema import Unischema
from petastorm.utils import add_to_dataset_metadata
from pyspark.sql.types import DoubleType, IntegerType, StringType


def image(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """A smooth gradient with noise: compresses like a photo, not like static."""
    h, w = shape[:2]
    base = (np.add.outer(np.arange(h) * 5, np.arange(w) * 3) % 256).astype(np.int16)
    if len(shape) == 3:
        base = np.stack([base, base[::-1], base.T[:w, :h].T if h == w else base[:, ::-1]], -1)
    noisy = base + rng.integers(-20, 20, size=base.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def write_with_codecs(dataset: Path, schema: Unischema, make_row: Callable[[int], dict[str, Any]],
                      *, rows: int, files: int, row_group_rows: int) -> None:
    """`rows` rows of `make_row(i)` in `files` files of `row_group_rows`-row groups: each value
    through its codec's encode, the files by pyarrow, the metadata by Petastorm's
    dataset_metadata helpers (what materialize_dataset does after Spark has written them)."""
    spark_to_arrow = {IntegerType: pa.int32(), DoubleType: pa.float64(), StringType: pa.string()}
    arrow_fields = []
    for field in schema.fields.values():
        if isinstance(field.codec, ScalarCodec):
            arrow_fields.append(pa.field(field.name, spark_to_arrow[type(field.codec.spark_dtype())],
                                         field.nullable))
        else:
            arrow_fields.append(pa.field(field.name, pa.binary(), field.nullable))
    arrow_schema = pa.schema(arrow_fields)
    dataset.mkdir(parents=True)
    per_file = rows // files
    for f in range(files):
        values = [make_row(i) for i in range(f * per_file, (f + 1) * per_file)]
        columns = {field.name: [field.codec.encode(field, r[field.name]) for r in values]
                   for field in schema.fields.values()}
        columns = {name: [bytes(v) if isinstance(v, bytearray) else v for v in values]
                   for name, values in columns.items()}
        table = pa.table(columns, schema=arrow_schema)
        pq.write_table(table, dataset / f"part-{f:05d}.parquet", row_group_size=row_group_rows)
    # The legacy ParquetDataset Petastorm's helpers take (a legacy filesystem selects it).
    resolver = FilesystemResolver(dataset.resolve().as_uri())
    parquet_dataset = pq.ParquetDataset(resolver.get_dataset_path(),
                                        filesystem=resolver.filesystem(), validate_schema=False)
    dataset_metadata._generate_unischema_metadata(parquet_dataset, schema)
    counts = {name: pq.ParquetFile(dataset / name).num_row_groups
              for name in sorted(os.listdir(dataset)) if name.endswith(".parquet")}
    add_to_dataset_metadata(parquet_dataset, dataset_metadata.ROW_GROUPS_PER_FILE_KEY,
                            json.dumps(counts))
