"""No silent surprises for a new user: an empty column list is refused, a rank left without
batches is warned about, and the engine's errors for a hive-partitioned directory read without
``partitioning="hive"`` and for a Petastorm dataset read as plain Parquet say what to do
(python/stoker/_options/hints.py) — and say nothing extra where the hint does not apply."""

from __future__ import annotations

import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from stoker.petastorm._metadata import UNISCHEMA_KEY


def _write(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return _write(tmp_path / "small" / "part-0.parquet", pa.table({"x": list(range(10))}))


def test_an_empty_column_list_is_refused(small: Path) -> None:
    with pytest.raises(ValueError, match=r"columns=\[\] names no column"):
        stoker.Loader(small, batch_size=4, columns=[])


def test_a_rank_without_batches_is_warned_about(small: Path) -> None:
    with pytest.warns(UserWarning, match="delivers no batches: rank 3 of world_size 20"):
        loader = stoker.Loader(small, batch_size=4, rank=3, world_size=20, seed=1)
    assert list(loader) == []


def test_a_rank_with_batches_is_not_warned_about(small: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = stoker.Loader(small, batch_size=4, rank=1, world_size=2, seed=1)
    assert len(loader) == 2


@pytest.fixture
def hive(tmp_path: Path) -> Path:
    root = tmp_path / "hive"
    for day in ("2026-01-01", "2026-01-02"):
        _write(root / f"day={day}" / "part-0.parquet", pa.table({"x": [1, 2, 3]}))
    return root


def test_a_partition_column_read_without_hive_names_the_option(hive: Path) -> None:
    with pytest.raises(KeyError, match='partitioning="hive"'):
        stoker.Loader(hive, batch_size=2, columns=["day", "x"])
    # With the option the same columns read.
    loader = stoker.Loader(hive, batch_size=2, columns=["day", "x"], partitioning="hive",
                           output="arrow", shuffle=False)
    assert sum(batch.num_rows for batch in loader) == 6


def test_a_column_missing_for_another_reason_gets_no_hive_hint(hive: Path) -> None:
    with pytest.raises(KeyError) as caught:
        stoker.Loader(hive, batch_size=2, columns=["month", "x"])
    assert "partitioning" not in str(caught.value)


def test_a_petastorm_dataset_names_its_reader(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("image", pa.binary())],
                       metadata={UNISCHEMA_KEY: b"(a pickled Unischema)"})
    path = _write(tmp_path / "ps" / "part-0.parquet",
                  pa.table({"id": [1, 2], "image": [b"\x89PNG", b"\x89PNG"]}, schema=schema))
    with pytest.raises(TypeError, match=r"stoker\.petastorm\.make_loader"):
        stoker.Loader(path, batch_size=2)


def test_a_plain_binary_column_gets_no_petastorm_hint(tmp_path: Path) -> None:
    path = _write(tmp_path / "plain" / "part-0.parquet",
                  pa.table({"id": [1, 2], "blob": [b"a", b"b"]}))
    with pytest.raises(TypeError) as caught:
        stoker.Loader(path, batch_size=2)
    assert "petastorm" not in str(caught.value)
