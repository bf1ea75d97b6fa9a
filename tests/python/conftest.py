"""Shared fixtures (small real datasets written once per test session) and the helpers
several test files import by name (assert_same_batches, damage_row_group)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stoker.cli import gen as _gen
from stoker_devtools.serve import Server

ROWS = 20_000


def assert_same_batches(a: list, b: list) -> None:
    """Two epochs delivered the same batches: same count, columns, and values bit for bit
    (dicts of numpy arrays / torch tensors, or pyarrow RecordBatches)."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, pa.RecordBatch):
            assert x.equals(y)
            continue
        assert x.keys() == y.keys()
        for name in x:
            np.testing.assert_array_equal(np.asarray(x[name]), np.asarray(y[name]),
                                          err_msg=name)


def damage_row_group(path: Path, row_group: int) -> None:
    """Overwrites the page header at the start of the row group's first column chunk."""
    chunk = pq.read_metadata(path).row_group(row_group).column(0)
    offset = chunk.dictionary_page_offset or chunk.data_page_offset
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * 16)


@pytest.fixture(scope="session")
def criteo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A criteo-preset dataset: 4 files, row groups of 1,500 rows (uneven across files)."""
    out = tmp_path_factory.mktemp("criteo")
    _gen.generate(out, _gen.GenOptions(preset="criteo", rows=ROWS, files=4, row_group_size=1500),
                  progress=False)
    return out


@pytest.fixture(scope="session")
def embeddings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("embeddings")
    _gen.generate(out, _gen.GenOptions(preset="embeddings", rows=3000, files=2,
                                       row_group_size=700, list_size=8), progress=False)
    return out


@pytest.fixture(scope="session")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file with strings, bools, a nullable column and a timestamp."""
    out = tmp_path_factory.mktemp("mixed")
    n = 1000
    ids = np.arange(n, dtype=np.int64)
    table = pa.table({
        "row_id": ids,
        "name": pa.array([f"row{i}" for i in ids]),
        "flag": pa.array(ids % 3 == 0),
        "maybe": pa.array([None if i % 5 == 0 else float(i) for i in ids], pa.float64()),
        "ts": pa.array(ids * 1000, pa.timestamp("us")),
    })
    pq.write_table(table, out / "mixed.parquet", row_group_size=300)
    return out


@pytest.fixture
def servers(criteo: Path):
    """Starts `stoker serve` children over the criteo data; stops them after the test."""
    started: list[Server] = []

    def start(*extra: str) -> Server:
        started.append(Server(criteo, *extra))
        return started[-1]

    yield start
    for server in started:
        server.stop()
