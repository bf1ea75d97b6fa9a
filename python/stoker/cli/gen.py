"""Deterministic synthetic Parquet datasets for tests, examples and benchmarks (`stoker gen`).

Each file draws from its own generator, seeded by (seed, file index), so files can be written
independently and the same options always give byte-identical files. Files are written one row
group at a time: memory is a function of the row-group size and the row width, never of the
row count.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stoker.cli import flags as _flags
from stoker.cli.console import Progress, format_bytes, format_count

__all__ = [
    "COMPRESSIONS",
    "DESCRIPTION",
    "HELP",
    "PRESETS",
    "GenOptions",
    "GenResult",
    "add_arguments",
    "file_row_ranges",
    "generate",
    "run",
    "schema_for",
    "summary_line",
]

PRESETS = (
    "criteo", "criteo-nulls", "wide", "embeddings", "multihot", "sequences", "dlrm-parquet",
)  # fmt: skip
COMPRESSIONS = ("snappy", "zstd", "gzip", "lz4", "none")

DEFAULT_ROW_GROUP_SIZE = 65536
DEFAULT_WIDE_COLUMNS = 500
DEFAULT_LIST_SIZE = 64

# Criteo's layout (Kaggle display-advertising and 1TB click logs): 13 dense counters and 26
# categorical features. Cardinalities are spread log-evenly from 10 to 1e6 so embedding tables
# range from tiny to large, as in the real data.
CRITEO_DENSE = 13
CRITEO_CARDINALITIES = tuple(round(c) for c in np.geomspace(10, 1_000_000, 26))
# Per-column log-normal parameters of the dense counters: small medians to large, narrow to wide.
CRITEO_DENSE_MU = np.linspace(0.0, 4.0, CRITEO_DENSE, dtype=np.float32)[:, None]
CRITEO_DENSE_SIGMA = np.linspace(0.5, 1.5, CRITEO_DENSE, dtype=np.float32)[:, None]

# criteo-nulls: the criteo columns, NULL_FRACTION of the values null in every odd-numbered
# dense and categorical column (as the real logs miss many counters and ids), and a string
# column drawn from a fixed vocabulary of DOMAIN_WORDS words of 3 to 30 letters (variable width,
# skewed like the ids, nulls too). Nullable and variable-width columns cost more to decode and
# gather than fixed-width ones: the benchmarks use this preset to show how much.
NULL_FRACTION = 0.1
NULLABLE_DENSE = tuple(range(0, CRITEO_DENSE, 2))  # 0-based: I1, I3, ..., I13.
NULLABLE_CATEGORICAL = tuple(range(0, len(CRITEO_CARDINALITIES), 2))  # C1, C3, ..., C25.
STRING_COLUMN = "domain"
DOMAIN_WORDS = 10_000
DOMAIN_LETTERS = (3, 30)  # Shortest and longest word.
DOMAIN_SEED = 1  # The vocabulary is the same for every seed and file.

EMBEDDING_ITEMS = 1_000_000  # item_id cardinality of the embeddings preset.

# multihot: MLPerf DLRM-DCNv2's multi-hot Criteo (the 1TB click logs with every categorical
# feature turned into a bag of ids), the layout its reference trains on: the criteo dense
# counters and label, and C1..C26 as list<int32> whose mean length per feature is
# MULTIHOT_HOTNESS (the reference's multi-hot sizes). A row's length is 1 + Poisson(hotness - 1):
# the mean is the hotness, no bag is empty, and the hotness-1 features hold exactly one id, as
# there. Ids are skewed as criteo's, in [0, CRITEO_CARDINALITIES) (at most 1e6: int32 is enough
# and halves the bytes, as the reference's int32 indices do).
MULTIHOT_HOTNESS = (
    3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1,
)  # fmt: skip

# sequences: a sequential recommender's rows (user histories, as in DIN, BST or HSTU training
# data): a user, a candidate item and the user's history of items, each with its time, action
# and weight in four list columns of the same lengths. Lengths are heavy-tailed as real
# histories are: length = clip(ceil(SEQUENCE_MEDIAN_LENGTH * exp(SEQUENCE_LENGTH_SIGMA * z)), 1,
# SEQUENCE_MAX_LENGTH) for standard-normal z, a discretised log-normal with median 32, mean
# about 98, p99 about 1,050 and 0.06% of rows at the cap: most rows are short and a few are a
# hundred times longer, which is what padding, bucketing and ragged gathers must handle.
SEQUENCE_MAX_LENGTH = 4096
SEQUENCE_MEDIAN_LENGTH = 32
SEQUENCE_LENGTH_SIGMA = 1.5
SEQUENCE_USERS = 1_000_000  # user_id cardinality.
SEQUENCE_ITEMS = 1_000_000  # Cardinality of item_id and of the history's ids: one vocabulary.
# Action types of the history: view, click, add to cart, buy, skip, with these probabilities.
SEQUENCE_ACTION_P = (0.70, 0.15, 0.05, 0.02, 0.08)
# A row's history starts at a base time drawn uniformly in [SEQUENCE_START, SEQUENCE_START +
# SEQUENCE_SPAN) (unix seconds; from 2023-01-01 UTC, over a year); each next event follows the
# previous one by a geometric gap of mean SEQUENCE_GAP_MEAN seconds (>= 1, so times strictly
# increase), and the row's own event (the candidate) comes after the last.
SEQUENCE_START = 1_672_531_200
SEQUENCE_SPAN = 365 * 86_400
SEQUENCE_GAP_MEAN = 3_600

# dlrm-parquet: MLPerf Storage v3.0's DLRM-on-Parquet workload (mlcommons/storage,
# configs/dlio/workload/dlrm_b200.yaml): 200 feature columns feature_000..feature_199 whose
# types are DLRM_PARQUET_TYPES (h float16, f float32, d float64, b int8: 761 bytes a sample),
# of which the 40 at DLRM_PARQUET_READ are read (160 bytes a sample). The workload writes them
# uncompressed in row groups of DLRM_PARQUET_ROW_GROUP rows and reads batches of
# DLRM_PARQUET_BATCH with a DLRM_PARQUET_STEP_S compute step, at an accelerator utilisation of
# at least 0.70 (`stoker gen --preset dlrm-parquet --compression none --row-group-size 6144`).
# Here the features follow row_id and label, as in every preset; floats are standard normal in
# their type, int8s uniform over their range.
DLRM_PARQUET_TYPES = (
    "hhddfhfbhbffdfbhfffhddddhffhhfdfdfhhdbbbhfhfdbdddffbbfffbfhfdhdbfhbfhfhfhffdhbfdbbffhbhbfb"
    "ffhfddfhbhhdhfdhhfdfddbhhbbdfbhhbbbhbbfbhfdhhdhfddhfbbdfdfddbbbddffbfhfhfhdhdhfbdhbdbbbbhh"
    "bdddhdbbhfdbdfdffddh"
)
DLRM_PARQUET_READ = (
    11, 17, 18, 20, 25, 31, 41, 43, 49, 53, 58, 59, 67, 68, 71, 74, 75, 88, 90, 91, 92, 93, 94,
    96, 97, 116, 117, 137, 141, 147, 154, 155, 158, 160, 162, 169, 180, 186, 189, 195,
)  # fmt: skip
DLRM_PARQUET_ROW_GROUP = 6144
DLRM_PARQUET_BATCH = 16384
DLRM_PARQUET_STEP_S = 0.000375
_DLRM_PARQUET_ARROW = {"h": pa.float16(), "f": pa.float32(), "d": pa.float64(), "b": pa.int8()}


def dlrm_parquet_columns() -> list[str]:
    """The 40 columns the DLRM-Parquet workload reads, in file order."""
    return [f"feature_{i:03d}" for i in DLRM_PARQUET_READ]


# The list presets' offsets are int32 (list<...>, not large_list): a row group's values of one
# column must stay below 2^31. A sequences row holds at most SEQUENCE_MAX_LENGTH values, so this
# many rows always fit; multihot's longest feature averages 100 values a row, far below.
LIST_PRESETS = ("multihot", "sequences")
MAX_LIST_ROW_GROUP_SIZE = (2**31 - 1) // SEQUENCE_MAX_LENGTH  # 524,287 rows.

# Labels are a noisy threshold of one standard-normal signal per row, so models trained on the
# synthetic data have something to learn. The threshold is the normal 75th percentile: 25% of
# rows are positive, like a click-through dataset after negative down-sampling.
LABEL_SIGNAL_WEIGHT = 0.6
LABEL_THRESHOLD = 0.6744897501960817

CARDINALITY_KEY = b"cardinality"  # Field metadata key: the id range [0, cardinality).


@dataclasses.dataclass(frozen=True)
class GenOptions:
    """What `generate` writes. `validate()` raises ValueError naming the offending option."""

    preset: str
    rows: int  # Total rows over all files, >= 1.
    seed: int = 0  # >= 0; with the other options it fixes every byte written.
    files: int = 1  # 1 <= files <= rows; rows are split as evenly as possible, in row_id order.
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE  # Rows per row group (the last may be short).
    compression: str = "snappy"  # One of COMPRESSIONS.
    columns: int | None = None  # wide only: feature columns (None: DEFAULT_WIDE_COLUMNS).
    list_size: int | None = None  # embeddings only: vector length (None: DEFAULT_LIST_SIZE).

    def validate(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        if self.compression not in COMPRESSIONS:
            raise ValueError(
                f"compression must be one of {', '.join(COMPRESSIONS)}, got {self.compression!r}"
            )
        for name in ("rows", "files", "row_group_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.files > self.rows:
            raise ValueError(
                f"files ({self.files}) must not exceed rows ({self.rows}): every file needs a row"
            )
        _validate_preset_option(self, "columns", "wide")
        _validate_preset_option(self, "list_size", "embeddings")
        if self.preset in LIST_PRESETS and self.row_group_size > MAX_LIST_ROW_GROUP_SIZE:
            raise ValueError(
                f"row_group_size must be <= {MAX_LIST_ROW_GROUP_SIZE:,} for preset "
                f"{self.preset!r} (its list columns' int32 offsets), got {self.row_group_size:,}"
            )


def _validate_preset_option(options: GenOptions, name: str, preset: str) -> None:
    value = getattr(options, name)
    if value is None:
        return
    if options.preset != preset:
        raise ValueError(f"{name} applies only to preset {preset!r}, not {options.preset!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")


@dataclasses.dataclass(frozen=True)
class GenResult:
    paths: list[Path]
    rows: int
    bytes: int  # Sum of the written files' sizes.
    seconds: float


def file_row_ranges(rows: int, files: int) -> list[tuple[int, int]]:
    """(first row_id, row count) per file: the first `rows % files` files get one extra row."""
    base, extra = divmod(rows, files)
    ranges = []
    start = 0
    for index in range(files):
        count = base + (1 if index < extra else 0)
        ranges.append((start, count))
        start += count
    return ranges


def schema_for(options: GenOptions) -> pa.Schema:
    """The Arrow schema `generate` writes for these options."""
    fields = [pa.field("row_id", pa.int64()), pa.field("label", pa.float32())]
    if options.preset in ("criteo", "criteo-nulls"):
        fields += [pa.field(f"I{i + 1}", pa.float32()) for i in range(CRITEO_DENSE)]
        fields += [
            _id_field(f"C{i + 1}", cardinality)
            for i, cardinality in enumerate(CRITEO_CARDINALITIES)
        ]
        if options.preset == "criteo-nulls":
            fields.append(_id_field(STRING_COLUMN, DOMAIN_WORDS, pa.string()))
    elif options.preset == "wide":
        fields += [pa.field(f"f{i}", pa.float32()) for i in range(_wide_columns(options))]
    elif options.preset == "embeddings":
        vector = pa.list_(pa.float32(), _list_size(options))
        fields += [
            _id_field("item_id", EMBEDDING_ITEMS),
            pa.field("embedding", vector),
            pa.field("user_embedding", vector),
        ]
    elif options.preset == "multihot":
        fields += [pa.field(f"I{i + 1}", pa.float32()) for i in range(CRITEO_DENSE)]
        fields += [
            _id_field(f"C{i + 1}", cardinality, pa.list_(pa.int32()))
            for i, cardinality in enumerate(CRITEO_CARDINALITIES)
        ]
    elif options.preset == "dlrm-parquet":
        fields += [pa.field(f"feature_{i:03d}", _DLRM_PARQUET_ARROW[code], nullable=False)
                   for i, code in enumerate(DLRM_PARQUET_TYPES)]
    else:
        fields += [
            _id_field("user_id", SEQUENCE_USERS),
            _id_field("item_id", SEQUENCE_ITEMS),
            _id_field("history", SEQUENCE_ITEMS, pa.list_(pa.int64())),
            pa.field("history_ts", pa.list_(pa.int64())),
            _id_field("history_action", len(SEQUENCE_ACTION_P), pa.list_(pa.int32())),
            pa.field("history_weight", pa.list_(pa.float32())),
        ]
    return pa.schema(fields)


def _id_field(name: str, cardinality: int, kind: pa.DataType | None = None) -> pa.Field:
    metadata = {CARDINALITY_KEY: str(cardinality).encode()}
    return pa.field(name, kind or pa.int64(), metadata=metadata)


def _wide_columns(options: GenOptions) -> int:
    return options.columns if options.columns is not None else DEFAULT_WIDE_COLUMNS


def _list_size(options: GenOptions) -> int:
    return options.list_size if options.list_size is not None else DEFAULT_LIST_SIZE


def generate(
    out: str | os.PathLike[str],
    options: GenOptions,
    *,
    overwrite: bool = False,
    progress: bool = True,
) -> GenResult:
    """Writes `options.files` files named part-00000.parquet, ... into directory `out`.

    Refuses (FileExistsError) to write into a directory that already holds part-*.parquet
    files unless `overwrite`, in which case those files are removed first: leftovers from a run
    with more files would otherwise silently join the dataset.
    """
    options.validate()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"output path exists and is not a directory: {out}")
    out.mkdir(parents=True, exist_ok=True)
    stale = sorted(out.glob("part-*.parquet"))
    if stale and not overwrite:
        raise FileExistsError(
            f"{out} already holds {len(stale)} part-*.parquet file(s); pass --overwrite to "
            "replace them"
        )
    for path in stale:
        path.unlink()

    schema = schema_for(options)
    make_batch = _batch_maker(options, schema)
    ticker = Progress("stoker gen") if progress else None
    started = time.perf_counter()
    done = 0

    def advance(rows: int) -> None:
        nonlocal done
        done += rows
        if ticker is not None and ticker.due():
            rate = format_count(done / (time.perf_counter() - started))
            ticker.write(
                f"{done:,}/{options.rows:,} rows ({100 * done / options.rows:.0f}%), {rate} rows/s"
            )

    paths = []
    for index, (first_row, count) in enumerate(file_row_ranges(options.rows, options.files)):
        path = out / f"part-{index:05d}.parquet"
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([options.seed, index])))
        _write_file(path, schema, options, rng, make_batch, first_row, count, advance)
        paths.append(path)
    seconds = time.perf_counter() - started
    size = sum(path.stat().st_size for path in paths)
    return GenResult(paths=paths, rows=options.rows, bytes=size, seconds=seconds)


def summary_line(out: str | os.PathLike[str], result: GenResult) -> str:
    rate = result.rows / max(result.seconds, 1e-9)
    return (
        f"wrote {len(result.paths)} file(s), {result.rows:,} rows, {format_bytes(result.bytes)} "
        f"in {result.seconds:.2f} s ({format_count(rate)} rows/s) to {out}"
    )


BatchMaker = Callable[[np.random.Generator, np.ndarray], pa.RecordBatch]


def _write_file(
    path: Path,
    schema: pa.Schema,
    options: GenOptions,
    rng: np.random.Generator,
    make_batch: BatchMaker,
    first_row: int,
    count: int,
    advance: Callable[[int], None],
) -> None:
    # Written under a temporary name and renamed when complete, so an interrupted run never
    # leaves a truncated file that looks like part of the dataset.
    partial = path.with_name(path.name + ".partial")
    compression = None if options.compression == "none" else options.compression
    # Dictionary encoding only pays off for the id columns; trying it on random floats just
    # burns time before the writer falls back to plain encoding.
    dictionary = [
        _leaf_path(field) for field in schema if CARDINALITY_KEY in (field.metadata or {})
    ]
    try:
        with pq.ParquetWriter(
            partial, schema, compression=compression, use_dictionary=dictionary
        ) as writer:
            for start in range(0, count, options.row_group_size):
                n = min(options.row_group_size, count - start)
                row_ids = np.arange(first_row + start, first_row + start + n, dtype=np.int64)
                writer.write_batch(make_batch(rng, row_ids), row_group_size=n)
                advance(n)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _leaf_path(field: pa.Field) -> str:
    """The Parquet column path of a flat or list field, as `use_dictionary` wants it: a list
    column's values are the leaf `name.list.element` (the writer's default compliant nested
    names), and the list's own name there is silently ignored."""
    return f"{field.name}.list.element" if pa.types.is_list(field.type) else field.name


def _batch_maker(options: GenOptions, schema: pa.Schema) -> BatchMaker:
    if options.preset == "criteo":
        return lambda rng, row_ids: _criteo_batch(rng, row_ids, schema)
    if options.preset == "criteo-nulls":
        vocabulary = _domain_vocabulary()
        return lambda rng, row_ids: _criteo_nulls_batch(rng, row_ids, schema, vocabulary)
    if options.preset == "wide":
        columns = _wide_columns(options)
        return lambda rng, row_ids: _wide_batch(rng, row_ids, schema, columns)
    if options.preset == "embeddings":
        list_size = _list_size(options)
        return lambda rng, row_ids: _embeddings_batch(rng, row_ids, schema, list_size)
    if options.preset == "multihot":
        return lambda rng, row_ids: _multihot_batch(rng, row_ids, schema)
    if options.preset == "dlrm-parquet":
        return lambda rng, row_ids: _dlrm_parquet_batch(rng, row_ids, schema)
    return lambda rng, row_ids: _sequences_batch(rng, row_ids, schema)


def _criteo_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema
) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array(c) for c in _criteo_columns(rng, row_ids)], schema=schema
    )


def _criteo_columns(rng: np.random.Generator, row_ids: np.ndarray) -> list[np.ndarray]:
    """row_id, label, the dense counters and the categorical ids, as numpy arrays."""
    n = len(row_ids)
    labels, dense = _criteo_labels_and_dense(rng, n)
    categorical = _skewed_ids(
        rng, np.array(CRITEO_CARDINALITIES)[:, None], (len(CRITEO_CARDINALITIES), n)
    )
    return [row_ids, labels, *dense, *categorical]


def _criteo_labels_and_dense(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The labels and the (CRITEO_DENSE, n) log-normal counters, the labels correlated with the
    first two counters: what criteo, criteo-nulls and multihot share."""
    z = rng.standard_normal((CRITEO_DENSE, n), dtype=np.float32)
    dense = np.exp(z * CRITEO_DENSE_SIGMA + CRITEO_DENSE_MU)
    labels = _labels(rng, (z[0] + z[1]) * np.float32(1 / math.sqrt(2)))
    return labels, dense


def _criteo_nulls_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema, vocabulary: pa.Array
) -> pa.RecordBatch:
    """The criteo columns drawn as by the criteo preset, then null masks for the nullable ones
    and the string column, drawn after them."""
    columns = _criteo_columns(rng, row_ids)
    first_dense, first_id = 2, 2 + CRITEO_DENSE  # After row_id and label.
    nullable = [first_dense + i for i in NULLABLE_DENSE]
    nullable += [first_id + i for i in NULLABLE_CATEGORICAL]
    masks = rng.random((len(nullable) + 1, len(row_ids))) < NULL_FRACTION
    arrays = [pa.array(c) for c in columns]
    for index, mask in zip(nullable, masks[:-1], strict=True):
        arrays[index] = pa.array(columns[index], mask=mask)
    words = vocabulary.take(pa.array(_skewed_ids(rng, DOMAIN_WORDS, len(row_ids)), mask=masks[-1]))
    return pa.RecordBatch.from_arrays([*arrays, words], schema=schema)


def _domain_vocabulary() -> pa.Array:
    """DOMAIN_WORDS distinct-enough lowercase words of DOMAIN_LETTERS letters, from a fixed
    seed: the values of the criteo-nulls string column."""
    rng = np.random.Generator(np.random.PCG64(DOMAIN_SEED))
    shortest, longest = DOMAIN_LETTERS
    lengths = rng.integers(shortest, longest + 1, DOMAIN_WORDS)
    letters = rng.integers(ord("a"), ord("z") + 1, int(lengths.sum()), dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.StringArray.from_buffers(
        DOMAIN_WORDS, pa.py_buffer(offsets), pa.py_buffer(letters.tobytes())
    )


def _wide_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema, columns: int
) -> pa.RecordBatch:
    # Drawn column-major so every feature is a contiguous row of the block: zero-copy to Arrow.
    features = rng.standard_normal((columns, len(row_ids)), dtype=np.float32)
    labels = _labels(rng, features[0])
    arrays = [pa.array(row_ids), pa.array(labels), *(pa.array(f) for f in features)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _embeddings_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema, list_size: int
) -> pa.RecordBatch:
    n = len(row_ids)
    items = _skewed_ids(rng, EMBEDDING_ITEMS, n)
    item_vectors = rng.standard_normal((n, list_size), dtype=np.float32)
    user_vectors = rng.standard_normal((n, list_size), dtype=np.float32)
    # A two-tower label: the scaled dot product of the two vectors is close to standard normal.
    affinity = np.einsum("ij,ij->i", item_vectors, user_vectors) / np.float32(math.sqrt(list_size))
    labels = _labels(rng, affinity)
    arrays = [
        pa.array(row_ids),
        pa.array(labels),
        pa.array(items),
        pa.FixedSizeListArray.from_arrays(pa.array(item_vectors.ravel()), list_size),
        pa.FixedSizeListArray.from_arrays(pa.array(user_vectors.ravel()), list_size),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _multihot_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema
) -> pa.RecordBatch:
    """The criteo dense counters and label, then every feature's bag lengths, then its ids,
    feature by feature: one vectorised draw per feature, none per row."""
    n = len(row_ids)
    labels, dense = _criteo_labels_and_dense(rng, n)
    extra = np.array(MULTIHOT_HOTNESS)[:, None] - 1
    lengths = 1 + rng.poisson(extra, (len(MULTIHOT_HOTNESS), n))
    bags = []
    for cardinality, feature_lengths in zip(CRITEO_CARDINALITIES, lengths, strict=True):
        offsets = _list_offsets(feature_lengths)
        ids = _skewed_ids(rng, cardinality, int(offsets[-1]), np.int32)
        bags.append(pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids)))
    arrays = [pa.array(row_ids), pa.array(labels), *(pa.array(d) for d in dense), *bags]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _dlrm_parquet_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema
) -> pa.RecordBatch:
    """The 200 features column by column, then the label from the first float32 feature read."""
    n = len(row_ids)
    features = []
    for code in DLRM_PARQUET_TYPES:
        if code == "b":
            features.append(rng.integers(-128, 128, n, dtype=np.int8))
        else:
            values = rng.standard_normal(n, dtype=np.float32)
            features.append(values.astype({"h": np.float16, "f": np.float32, "d": np.float64}[code]))
    labels = _labels(rng, features[DLRM_PARQUET_READ[0]].astype(np.float32))
    arrays = [pa.array(row_ids), pa.array(labels), *(pa.array(f) for f in features)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _sequences_batch(
    rng: np.random.Generator, row_ids: np.ndarray, schema: pa.Schema
) -> pa.RecordBatch:
    n = len(row_ids)
    # z draws the history lengths and, standard normal, is the label's signal too: users with
    # longer histories click more, so the label is learnable from the sequence alone.
    z = rng.standard_normal(n)
    scaled = SEQUENCE_MEDIAN_LENGTH * np.exp(SEQUENCE_LENGTH_SIGMA * z)
    lengths = np.clip(np.ceil(scaled), 1, SEQUENCE_MAX_LENGTH).astype(np.int64)
    labels = _labels(rng, z)
    users = _skewed_ids(rng, SEQUENCE_USERS, n)
    items = _skewed_ids(rng, SEQUENCE_ITEMS, n)
    offsets = _list_offsets(lengths)
    total = int(offsets[-1])
    history = _skewed_ids(rng, SEQUENCE_ITEMS, total)
    # Per-row running sums of the gaps from one global cumulative sum: subtracting the sum
    # before each row's first value restarts it at every row, without a loop over rows.
    base = SEQUENCE_START + rng.integers(0, SEQUENCE_SPAN, n, dtype=np.int64)
    elapsed = np.cumsum(rng.geometric(1 / SEQUENCE_GAP_MEAN, total).astype(np.int64))
    before = np.concatenate([[0], elapsed])[offsets[:-1]]
    times = elapsed + np.repeat(base - before, lengths)
    thresholds = np.cumsum(SEQUENCE_ACTION_P)[:-1]
    actions = np.searchsorted(thresholds, rng.random(total), side="right").astype(np.int32)
    weights = 1 - rng.random(total, dtype=np.float32)  # (0, 1]: a dwell weight, never 0.
    # The four history lists share one offsets array: paired by construction.
    shared = pa.array(offsets)
    lists = [
        pa.ListArray.from_arrays(shared, pa.array(v)) for v in (history, times, actions, weights)
    ]
    arrays = [pa.array(row_ids), pa.array(labels), pa.array(users), pa.array(items), *lists]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _list_offsets(lengths: np.ndarray) -> np.ndarray:
    """int32 list offsets [0, l0, l0 + l1, ...]: GenOptions.validate bounds the row group so
    the last one fits."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _labels(rng: np.random.Generator, signal: np.ndarray) -> np.ndarray:
    """0/1 float32 labels, 25% positive, correlated with a standard-normal `signal`."""
    noise = rng.standard_normal(len(signal), dtype=np.float32)
    score = LABEL_SIGNAL_WEIGHT * signal + math.sqrt(1 - LABEL_SIGNAL_WEIGHT**2) * noise
    return (score > LABEL_THRESHOLD).astype(np.float32)


def _skewed_ids(
    rng: np.random.Generator,
    cardinality: int | np.ndarray,
    shape: int | tuple[int, ...],
    dtype: type[np.integer] = np.int64,
) -> np.ndarray:
    """Ids in [0, cardinality) with P(id = k) ~ 1/(k + 1), a Zipf law of exponent 1.

    Drawn as floor((cardinality + 1) ** u) - 1 for uniform u: a log-uniform variable, which is
    the continuous form of Zipf(1) and needs one exp per value. Computed in place: the list
    presets draw tens of millions of ids a row group, and a fresh array per step cost ten times
    the arithmetic in page faults.
    """
    u = rng.random(shape)
    u *= np.log(np.asarray(cardinality, dtype=np.float64) + 1)
    np.exp(u, out=u)
    ids = u.astype(dtype)
    ids -= 1
    # u < 1, but exp() may round up to exactly cardinality + 1.
    return np.minimum(ids, np.asarray(cardinality, dtype=dtype) - 1, out=ids)


# The command line: `stoker gen`.
HELP = "write a synthetic Parquet dataset"
DESCRIPTION = (
    "Write a deterministic synthetic Parquet dataset: the same options give byte-identical "
    "files. Every preset has a row_id column numbering rows 0..N-1 in file order and a float32 "
    "0/1 label (25% positive)."  # a description is not %-formatted
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="OUT", help="output directory (created if missing)")
    parser.add_argument(
        "--preset",
        required=True,
        choices=PRESETS,
        help="criteo: 13 dense float32 + 26 skewed int64 ids; criteo-nulls: the same with 10%% "
        "nulls in the odd-numbered columns and a string column (domain); wide: --columns "
        "float32 features; embeddings: item_id + two fixed-size float32 vectors of --list-size; "
        "multihot: criteo's dense columns + 26 list<int32> bags of skewed ids, MLPerf "
        "DLRM-DCNv2's multi-hot sizes (1 to 100 ids a row on average); sequences: user_id, "
        "item_id and a user's history of items (list<int64>) with paired history_ts, "
        f"history_action and history_weight lists, 1 to {SEQUENCE_MAX_LENGTH} events "
        f"(median {SEQUENCE_MEDIAN_LENGTH}); dlrm-parquet: MLPerf Storage's DLRM-on-Parquet "
        "workload, 200 float16/float32/float64/int8 features of which it reads 40 (use "
        f"--compression none --row-group-size {DLRM_PARQUET_ROW_GROUP} for its files)",
    )
    parser.add_argument("--rows", required=True, type=_flags.positive_int, help="total rows")
    parser.add_argument(
        "--seed", type=_flags.non_negative_int, default=0, help="default: %(default)s"
    )
    parser.add_argument(
        "--files", type=_flags.positive_int, default=1, help="files to split rows into (default: 1)"
    )
    parser.add_argument(
        "--row-group-size",
        type=_flags.positive_int,
        default=DEFAULT_ROW_GROUP_SIZE,
        help="rows per row group (default: %(default)s)",
    )
    parser.add_argument(
        "--compression", choices=COMPRESSIONS, default="snappy", help="default: snappy"
    )
    parser.add_argument(
        "--columns",
        type=_flags.positive_int,
        help=f"wide only: feature columns (default: {DEFAULT_WIDE_COLUMNS})",
    )
    parser.add_argument(
        "--list-size",
        type=_flags.positive_int,
        help=f"embeddings only: vector length (default: {DEFAULT_LIST_SIZE})",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace part-*.parquet files already in OUT"
    )


def run(args: argparse.Namespace) -> int:
    options = _flags.options(GenOptions, args)
    result = generate(args.out, options, overwrite=args.overwrite)
    print(summary_line(args.out, result))
    return 0
