"""The composition matrix's factors, its pairwise cases, and the one lake every case reads
(tests/python/test_matrix.py; docs/combinations.md).

The lake holds the same 3,000 rows (id, x, label, part, emb: an ndarray-codec float32[4]) as
each source kind the matrix names: a plain directory, a hive-partitioned one, a Delta table
(version 0), an Iceberg table (its snapshot), the directory on the tests' S3 server, and a
weighted mixture of the directory with a Delta table of 1,200 more rows (ids from 10,000). A
damaged lake is the same with one row group of one data file of every source overwritten (its
page header), and in the directory (and on S3) a file whose footer cannot be read."""

from __future__ import annotations

import io
import itertools
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from conftest import damage_row_group

ROWS = 3000
ROW_GROUP = 250

# Each factor's levels (issue 36). The order is the covering array's input: keep it, or the
# cases (and their ids in test names) change.
FACTORS: dict[str, list[str]] = {
    "source": ["directory", "hive", "delta", "iceberg", "s3", "mixture"],
    "placement": ["local", "server", "two_servers", "ray_fleet"],
    "mode": ["train", "eval", "eval_padded"],
    "row_work": ["none", "filter", "random_op", "codecs", "batch_transform"],
    "cache": ["off", "cold", "warm"],
    "resume": ["none", "mid_epoch", "two_to_three"],
    "output": ["numpy", "torch", "arrow", "jax", "tensorflow"],
    "errors": ["raise", "skip_damaged"],
}


@dataclass(frozen=True)
class Case:
    source: str
    placement: str
    mode: str
    row_work: str
    cache: str
    resume: str
    output: str
    errors: str

    @property
    def id(self) -> str:
        return "-".join(getattr(self, name) for name in FACTORS)


def pairwise_cases() -> list[Case]:
    """A covering array of strength 2 over FACTORS (allpairspy's greedy generator:
    deterministic for a given input order)."""
    from allpairspy import AllPairs

    return [Case(*row) for row in AllPairs(list(FACTORS.values()))]


FIRST = Case(*(levels[0] for levels in FACTORS.values()))  # every factor at its first level


def _pairs(case: Case) -> set[tuple[str, str, str, str]]:
    return {(f1, getattr(case, f1), f2, getattr(case, f2))
            for f1, f2 in itertools.combinations(FACTORS, 2)}


def alone(f1: str, a: str, f2: str, b: str) -> Case:
    """The case of one pair: those two levels, every other factor at its first level."""
    return replace(FIRST, **{f1: a, f2: b})


def unmasked(cases: list[Case], refusal: Callable[[Case], str | None]) -> list[Case]:
    """`cases` and more, so that every pair that can deliver (its case alone does) is
    delivered by some case, not only met beside a refusal that masks it: each such pair goes
    into the first added case whose factors it can set (those not set yet) without a refusal,
    or starts a new one from the first levels (greedy, deterministic)."""
    delivered = set().union(*(_pairs(c) for c in cases if refusal(c) is None))
    added: list[tuple[Case, set[str]]] = []  # each added case and the factors set in it
    for pair in sorted(set().union(*map(_pairs, cases)) - delivered):
        f1, a, f2, b = pair
        if refusal(alone(*pair)) is not None:
            continue
        for i, (case, fixed) in enumerate(added):
            if any(f in fixed and getattr(case, f) != level for f, level in ((f1, a), (f2, b))):
                continue
            merged = replace(case, **{f1: a, f2: b})
            if refusal(merged) is None:
                added[i] = (merged, fixed | {f1, f2})
                break
        else:
            added.append((alone(*pair), {f1, f2}))
    return list(cases) + [case for case, _ in added]


def masked_pairs(cases: list[Case], refusal: Callable[[Case], str | None]) -> list[tuple]:
    """Pairs no delivering case holds whose case alone would deliver (empty for `unmasked`)."""
    delivered = set().union(*(_pairs(c) for c in cases if refusal(c) is None))
    return [pair for (f1, levels1), (f2, levels2) in itertools.combinations(FACTORS.items(), 2)
            for a in levels1 for b in levels2
            if (pair := (f1, a, f2, b)) not in delivered and refusal(alone(*pair)) is None]


def uncovered_pairs(cases: list[Case]) -> list[tuple[str, str, str, str]]:
    """Every pair of levels of two factors that no case holds (empty for a covering array)."""
    missing = []
    for (f1, levels1), (f2, levels2) in itertools.combinations(FACTORS.items(), 2):
        seen = {(getattr(c, f1), getattr(c, f2)) for c in cases}
        missing += [(f1, a, f2, b) for a in levels1 for b in levels2 if (a, b) not in seen]
    return missing


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def rows(start: int, count: int) -> pa.Table:
    ids = np.arange(start, start + count, dtype=np.int64)
    return pa.table({
        "id": ids,
        "x": (ids * 0.5).astype(np.float32),
        "label": ids % 2,
        "part": (ids % 3).astype(np.int32),
        "emb": pa.array([_npy(np.arange(i, i + 4, dtype=np.float32)) for i in ids],
                        pa.binary()),
    })


def write_directory(path: Path, table: pa.Table, files: int) -> list[Path]:
    path.mkdir(parents=True)
    per_file = -(-table.num_rows // files)
    written = []
    for i in range(files):
        written.append(path / f"part-{i}.parquet")
        pq.write_table(table.slice(i * per_file, per_file), written[-1],
                       row_group_size=ROW_GROUP)
    return written


class Lake:
    """The sources of one lake (intact or damaged), built once per test session."""

    def __init__(self, root: Path, damaged: bool, s3: Any) -> None:
        self.root, self.damaged, self.s3 = root, damaged, s3
        table = rows(0, ROWS)
        self.directory = root / "directory"
        files = write_directory(self.directory, table, 3)
        # The mixture's second source: a Delta table (a table as a mixture source).
        self.other = root / "other"
        import deltalake

        deltalake.write_deltalake(str(self.other), rows(10_000, 1200), partition_by=["part"])
        self.hive = root / "hive"
        hive_files = []
        for part in range(3):
            folder = self.hive / f"part={part}"
            folder.mkdir(parents=True)
            hive_files.append(folder / "data.parquet")
            pq.write_table(table.filter(pc.equal(table["part"], part)).drop(["part"]),
                           hive_files[-1], row_group_size=ROW_GROUP)
        self.delta = root / "delta"
        deltalake.write_deltalake(str(self.delta), table, partition_by=["part"])
        self.iceberg_catalog = self._iceberg(table)
        if damaged:
            for path in [files[1], hive_files[1]]:
                damage_row_group(path, 1)
            damage_row_group(min(self.other.rglob("*.parquet")), 0)
            # And a file whose footer cannot be read, in the directory (and its S3 copy).
            files.append(self.directory / "part-9.parquet")
            files[-1].write_bytes(b"PAR1" + b"\0" * 64 + b"not a footer" + b"PAR1")
            damage_row_group(min(self.delta.rglob("*.parquet")), 0)
            damage_row_group(min((root / "warehouse").rglob("*.parquet")), 0)
        self.s3_prefix = f"matrix/{'damaged' if damaged else 'intact'}"
        s3fs = s3.filesystem()
        s3fs.create_dir(self.s3_prefix)
        for path in files:
            pafs.copy_files(str(path), f"{self.s3_prefix}/{path.name}",
                            destination_filesystem=s3fs)

    def _iceberg(self, table: pa.Table) -> Any:
        from pyiceberg.catalog.sql import SqlCatalog
        from pyiceberg.transforms import IdentityTransform

        catalog = SqlCatalog("lake", uri=f"sqlite:///{self.root}/catalog.db",
                             warehouse=f"file://{self.root}/warehouse")
        catalog.create_namespace("db")
        created = catalog.create_table("db.events", schema=table.schema)
        with created.update_spec() as spec:
            spec.add_field("part", IdentityTransform(), "part")
        loaded = catalog.load_table("db.events")
        for start in range(0, ROWS, 1000):
            loaded.append(table.slice(start, 1000))
        return catalog

    def source(self, kind: str) -> Any:
        """What a Loader (or a stoker.Source) takes for this source kind, and the options
        that kind needs."""
        import stoker

        if kind == "directory":
            return self.directory, {}
        if kind == "hive":
            return self.hive, {"partitioning": "hive"}
        if kind == "delta":
            return stoker.delta_table(self.delta, version=0), {}
        if kind == "iceberg":
            return stoker.iceberg_table(self.iceberg_catalog, "db.events"), {}
        if kind == "s3":
            return f"s3://{self.s3_prefix}", {"storage_options": self.s3.storage_options}
        raise ValueError(kind)


class S3:
    """The tests' S3 server (moto, loopback) and how a Loader reaches it."""

    def __init__(self) -> None:
        from stoker_devtools.s3 import KEY, SECRET, MotoServer

        os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
        self.server = MotoServer()
        self.storage_options = {"endpoint_override": self.server.endpoint, "scheme": "http",
                                "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
        self.filesystem().create_dir("matrix")

    def filesystem(self) -> pafs.S3FileSystem:
        options = dict(self.storage_options)
        return pafs.S3FileSystem(endpoint_override=options["endpoint_override"],
                                 scheme=options["scheme"], region=options["region"],
                                 access_key=options["access_key"],
                                 secret_key=options["secret_key"], allow_bucket_creation=True)

    def stop(self) -> None:
        self.server.stop()


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
