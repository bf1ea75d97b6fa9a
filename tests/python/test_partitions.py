"""Hive-partitioned datasets as pyarrow's write_dataset (and Spark) write them: `key=value`
directories become columns typed as pyarrow's own discovery types them, usable in columns,
filters and transforms; a filter on them rules whole files out before any footer is read;
the not-data files Spark and Hadoop leave beside the data are skipped; the odd cases (null and
URL-escaped values, a key that is also a column, an empty partition, a mismatched file) behave
as pyarrow users expect or fail naming the path. Local and s3://."""

from __future__ import annotations

import datetime
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches

DAYS = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]


def write_partitioned(path: Path, rows: int = 800) -> pa.Table:
    """A table with `day` (string) and `shard` (int) written as hive directories by pyarrow's
    write_dataset; returns the table as written."""
    table = pa.table({
        "row_id": pa.array(range(rows), pa.int64()),
        "x": pa.array(np.arange(rows, dtype=np.float32) / 7),
        "day": pa.array([DAYS[i % len(DAYS)] for i in range(rows)]),
        "shard": pa.array([i % 3 for i in range(rows)], pa.int64()),
    })
    ds.write_dataset(table, path, format="parquet", partitioning=["day", "shard"],
                     partitioning_flavor="hive", max_rows_per_group=64,
                     existing_data_behavior="overwrite_or_ignore")
    return table


@pytest.fixture(scope="module")
def hive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hive") / "events"
    write_partitioned(path)
    return path


def rows_of(loader: stoker.Loader) -> pa.Table:
    return pa.Table.from_batches(list(loader), schema=loader.schema)


def by_row_id(table: pa.Table) -> pa.Table:
    return table.sort_by("row_id")


def test_columns_are_typed_as_pyarrow_discovers_them(hive: Path) -> None:
    expected = ds.dataset(hive, partitioning="hive")
    loader = stoker.Loader(hive, partitioning="hive", batch_size=100, output="arrow", shuffle=False)
    assert loader.schema == expected.schema
    assert loader.schema.field("shard").type == pa.int32()  # pyarrow's inference, not int64
    assert by_row_id(rows_of(loader)).equals(by_row_id(expected.to_table()))


def test_partition_columns_can_be_selected_and_transformed(hive: Path) -> None:
    loader = stoker.Loader(hive, partitioning="hive", columns=["shard", "row_id"], batch_size=128, seed=3,
                           transforms=[{"op": "cast", "column": "shard", "dtype": "float32"}])
    seen = {}
    for batch in loader:
        assert batch["shard"].dtype == np.float32
        seen.update(zip(batch["row_id"].tolist(), batch["shard"].tolist()))
    assert len(seen) == 800
    assert all(shard == row_id % 3 for row_id, shard in seen.items())


def test_filter_on_partition_columns_prunes_files_before_their_footers(hive: Path) -> None:
    files = sorted(hive.rglob("*.parquet"))
    assert len(files) == len(DAYS) * 3
    expression = (pc.field("day") == "2026-01-02") & (pc.field("shard") >= 1)
    loader = stoker.Loader(hive, partitioning="hive", batch_size=50, output="arrow", filter=expression, shuffle=False)
    stats = loader.stats()
    assert stats["files_pruned"] == len(files) - 2
    assert stats["files_opened"] == 2
    assert stats["metadata_requests"] <= 4  # a footer read is one request, or two
    assert len(loader.files) == 2
    got = by_row_id(rows_of(loader))
    want = by_row_id(ds.dataset(hive, partitioning="hive").to_table(filter=expression))
    assert got.equals(want)
    # A filter on a file column alone prunes no file: every footer is read.
    plain = stoker.Loader(hive, partitioning="hive", batch_size=50, filter=pc.field("x") < 10, output="arrow")
    assert (plain.stats()["files_pruned"], plain.stats()["files_opened"]) == (0, len(files))


def test_mixed_conjunctions_prune_by_their_partition_part_only(hive: Path) -> None:
    expression = (pc.field("x") > 5) & ((pc.field("day") == DAYS[0]) | (pc.field("day") == DAYS[3]))
    loader = stoker.Loader(hive, partitioning="hive", batch_size=50, output="arrow", filter=expression, shuffle=False)
    assert loader.stats()["files_pruned"] == 6
    want = by_row_id(ds.dataset(hive, partitioning="hive").to_table(filter=expression))
    assert by_row_id(rows_of(loader)).equals(want)
    # An OR across a partition column and a file column decides nothing per file.
    either = (pc.field("day") == DAYS[0]) | (pc.field("x") > 100)
    loader = stoker.Loader(hive, partitioning="hive", batch_size=50, output="arrow", filter=either, shuffle=False)
    assert loader.stats()["files_pruned"] == 0
    want = by_row_id(ds.dataset(hive, partitioning="hive").to_table(filter=either))
    assert by_row_id(rows_of(loader)).equals(want)


def test_a_filter_no_partition_matches_gives_an_empty_epoch(hive: Path) -> None:
    loader = stoker.Loader(hive, partitioning="hive", columns=["row_id"], batch_size=50,
                           filter=pc.field("day") == "1999-01-01")
    assert loader.stats()["files_opened"] == 1  # the first file, for the schema
    assert len(loader) == 0 and list(loader) == []


def test_batches_are_deterministic_and_resume_exactly(hive: Path, tmp_path: Path) -> None:
    kw = {"columns": ["row_id", "x", "shard"], "batch_size": 96, "seed": 11,
          "shuffle_window": 200, "filter": (pc.field("shard") != 2) & (pc.field("day") > DAYS[0])}
    one = list(stoker.Loader(hive, partitioning="hive", num_threads=1, **kw))
    four = list(stoker.Loader(hive, partitioning="hive", num_threads=4, **kw))
    assert_same_batches(one, four)
    # The same dataset copied in another order of creation lists and plans the same.
    copy = tmp_path / "copy"
    directories = sorted({p.parent for p in hive.rglob("*.parquet")}, reverse=True)
    for directory in directories:
        for file in sorted(directory.glob("*.parquet")):
            target = copy / file.relative_to(hive)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(file, target)
    copied = stoker.Loader(copy, partitioning="hive", num_threads=2, **kw)
    assert_same_batches(one, list(copied))
    # Resume mid-epoch: the rest equals the uninterrupted run.
    first = stoker.Loader(hive, partitioning="hive", num_threads=2, **kw)
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state_dict()
    it.close()
    resumed = stoker.Loader(hive, partitioning="hive", num_threads=3, **kw)
    resumed.load_state_dict(state)
    assert_same_batches(one[3:], list(resumed))


def test_not_data_files_are_skipped_as_spark_and_pyarrow_skip_them(hive: Path,
                                                                   tmp_path: Path) -> None:
    tree = tmp_path / "spark"
    shutil.copytree(hive, tree)
    (tree / "_SUCCESS").write_bytes(b"")
    (tree / "_common_metadata").write_bytes(b"not parquet")
    part = next(tree.rglob("*.parquet"))
    (part.parent / f".{part.name}.crc").write_bytes(b"crc")
    (part.parent / "_temporary").mkdir()
    (part.parent / "_temporary" / "part-9.parquet").write_bytes(b"half written")
    (tree / ".hidden.parquet").write_bytes(b"junk")
    loader = stoker.Loader(tree, partitioning="hive", batch_size=100, output="arrow", shuffle=False)
    assert len(loader.files) == len(list(hive.rglob("*.parquet")))
    assert rows_of(loader).num_rows == 800


def test_null_and_url_escaped_values(tmp_path: Path) -> None:
    table = pa.table({"v": pa.array(range(6), pa.int64()),
                      "city": ["a/b c", "a/b c", None, None, "x=y", "x=y"]})
    ds.write_dataset(table, tmp_path / "t", format="parquet", partitioning=["city"],
                     partitioning_flavor="hive")
    names = sorted(p.name for p in (tmp_path / "t").iterdir())
    assert "city=__HIVE_DEFAULT_PARTITION__" in names and "city=a%2Fb%20c" in names
    loader = stoker.Loader(tmp_path / "t", partitioning="hive", batch_size=10, output="arrow", shuffle=False)
    want = ds.dataset(tmp_path / "t", partitioning="hive").to_table()
    got = rows_of(loader)
    assert got.schema == want.schema
    assert sorted(got.to_pylist(), key=lambda r: r["v"]) == sorted(want.to_pylist(),
                                                                  key=lambda r: r["v"])
    nulls = stoker.Loader(tmp_path / "t", partitioning="hive", batch_size=10, output="arrow",
                          filter=pc.field("city").is_null())
    assert nulls.stats()["files_pruned"] == 2
    assert sorted(rows_of(nulls)["v"].to_pylist()) == [2, 3]
    # Tensor output cannot hold a null: the error names the column and the file.
    ints = pa.table({"v": pa.array(range(4), pa.int64()), "k": [1, None, 2, None]})
    ds.write_dataset(ints, tmp_path / "i", format="parquet", partitioning=["k"],
                     partitioning_flavor="hive")
    with pytest.raises(ValueError, match=r"column 'k' has null values in '.*k=__HIVE_DEFAULT"):
        list(stoker.Loader(tmp_path / "i", partitioning="hive", batch_size=10, shuffle=False))


def test_explicit_schema_types_the_keys(hive: Path) -> None:
    schema = pa.schema([("shard", pa.int64()), ("day", pa.date32())])
    loader = stoker.Loader(hive, batch_size=100, output="arrow", partitioning=schema,
                           filter=pc.field("day") >= pa.scalar(datetime.date(2026, 1, 3)))
    assert loader.schema.field("shard").type == pa.int64()
    assert loader.schema.field("day").type == pa.date32()
    assert loader.stats()["files_pruned"] == 6
    want = ds.dataset(hive, partitioning=ds.partitioning(schema, flavor="hive"))
    assert loader.schema == want.schema
    assert rows_of(loader).num_rows == 400
    bad = pa.schema([("day", pa.int32())])
    with pytest.raises(ValueError, match=r"partition value '2026-01-0\d' of 'day' is not a valid "
                                         r"int32 \(directory name in '.*day=2026"):
        stoker.Loader(hive, batch_size=10, partitioning=bad)


def test_without_partitioning_only_the_file_columns_are_read(hive: Path) -> None:
    # The default, as in pyarrow.dataset: directories that look like keys change nothing.
    for loader in (stoker.Loader(hive, batch_size=100, output="arrow"),
                   stoker.Loader(hive, batch_size=100, output="arrow", partitioning=None)):
        assert loader.schema.names == ["row_id", "x"]
        assert loader.stats()["files_pruned"] == 0
    with pytest.raises(TypeError, match="partitioning must be"):
        stoker.Loader(hive, batch_size=100, partitioning="directory")


def test_key_that_is_also_a_column_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d" / "x=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2], "v": [3, 4]}), tmp_path / "d" / "x=1" / "f.parquet")
    with pytest.raises(ValueError, match=r"partition key 'x' .* is also a column of "
                                         r"'.*x=1/f.parquet'"):
        stoker.Loader(tmp_path / "d", partitioning="hive", batch_size=10)


def test_empty_partition_and_mismatched_file(hive: Path, tmp_path: Path) -> None:
    tree = tmp_path / "t"
    shutil.copytree(hive, tree)
    (tree / "day=2026-02-01" / "shard=0").mkdir(parents=True)  # an empty partition: no rows
    loader = stoker.Loader(tree, partitioning="hive", batch_size=100, output="arrow")
    assert rows_of(loader).num_rows == 800
    # A file with no rows in a partition of its own adds nothing either.
    (tree / "day=2026-02-02" / "shard=0").mkdir(parents=True)
    pq.write_table(pa.table({"row_id": pa.array([], pa.int64()), "x": pa.array([], pa.float32())}),
                   tree / "day=2026-02-02" / "shard=0" / "empty.parquet")
    assert rows_of(stoker.Loader(tree, partitioning="hive", batch_size=100, output="arrow")).num_rows == 800
    # A file with other columns: the error mismatched files always got, naming both paths.
    odd = tree / "day=2026-02-03" / "shard=1" / "odd.parquet"
    odd.parent.mkdir(parents=True)
    pq.write_table(pa.table({"row_id": pa.array([1], pa.int64()), "y": [1.0]}), odd)
    with pytest.raises((KeyError, ValueError), match=r"odd.parquet"):
        stoker.Loader(tree, partitioning="hive", batch_size=100)


def test_a_file_outside_the_partitions_gets_nulls_as_in_pyarrow(tmp_path: Path) -> None:
    (tmp_path / "d" / "a=1").mkdir(parents=True)
    pq.write_table(pa.table({"v": [1, 2]}), tmp_path / "d" / "a=1" / "f.parquet")
    pq.write_table(pa.table({"v": [3, 4]}), tmp_path / "d" / "g.parquet")
    loader = stoker.Loader(tmp_path / "d", partitioning="hive", batch_size=10, output="arrow", shuffle=False)
    want = ds.dataset(tmp_path / "d", partitioning="hive").to_table()
    assert loader.schema == want.schema
    assert sorted(rows_of(loader).to_pylist(), key=lambda r: r["v"]) == sorted(
        want.to_pylist(), key=lambda r: r["v"])


def test_s3_partitioned_dataset_equals_local(hive: Path) -> None:
    pytest.importorskip("moto")
    from stoker_devtools.s3 import KEY, SECRET, MotoServer

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    server = MotoServer()
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET,
                               endpoint_override=server.endpoint, scheme="http",
                               region="us-east-1", allow_bucket_creation=True)
        fs.create_dir("data")
        for path in sorted(hive.rglob("*.parquet")):
            pafs.copy_files(str(path), f"data/events/{path.relative_to(hive)}",
                            destination_filesystem=fs)
        storage = {"endpoint_override": server.endpoint, "scheme": "http",
                   "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
        kw = {"columns": ["row_id", "x", "shard"], "batch_size": 64, "seed": 5,
              "filter": pc.field("day") == DAYS[1]}
        remote = stoker.Loader("s3://data/events/", partitioning="hive", storage_options=storage, **kw)
        local = stoker.Loader(hive, partitioning="hive", **kw)
        assert remote.stats()["files_pruned"] == 9
        assert_same_batches(list(local), list(remote))
    finally:
        server.stop()


def test_many_orders_of_listing_give_one_plan(tmp_path: Path) -> None:
    """Partition directories created in random orders: same files, same fingerprint."""
    fingerprints = set()
    for attempt in range(3):
        root = tmp_path / f"r{attempt}"
        days = list(range(6))
        random.Random(attempt).shuffle(days)
        for day in days:
            (root / f"day={day}").mkdir(parents=True)
            pq.write_table(pa.table({"v": [day, day + 10]}), root / f"day={day}" / "p.parquet")
        # The same bytes and times in every copy: the fingerprint digests both.
        for day in range(6):
            os.utime(root / f"day={day}" / "p.parquet", ns=(10**18, 10**18))
        info = stoker.Loader(root, partitioning="hive", batch_size=4).dataset_info()
        fingerprints.add(tuple(Path(f).relative_to(root).as_posix() for f in info["files"]))
    assert len(fingerprints) == 1


SPARK = Path(__file__).resolve().parents[1] / "data" / "spark-hive" / "events"


def test_a_dataset_written_by_spark(tmp_path: Path) -> None:
    """Spark's own output (tests/data/spark-hive: part files, .crc files, _SUCCESS, a null
    region): the rows and types pyarrow's hive discovery gives, and pruning by both keys."""
    assert (SPARK / "_SUCCESS").exists() and list(SPARK.rglob(".*.crc"))
    loader = stoker.Loader(SPARK, partitioning="hive", batch_size=100, output="arrow", shuffle=False)
    want = ds.dataset(SPARK, partitioning="hive")
    assert loader.schema == want.schema
    assert len(loader.files) == len(list(SPARK.rglob("*.parquet")))
    key = "id"
    assert rows_of(loader).sort_by(key).equals(want.to_table().sort_by(key))
    expression = (pc.field("day") == "2026-11-02") & pc.field("region").is_null()
    pruned = stoker.Loader(SPARK, partitioning="hive", batch_size=100, output="arrow", filter=expression)
    assert pruned.stats()["files_opened"] == 2  # one partition, Spark's two part files
    got = rows_of(pruned).sort_by(key)
    assert got.equals(want.to_table(filter=expression).sort_by(key))
    assert got.num_rows == 40 and all(i % 5 == 0 and i % 3 == 1 for i in got["id"].to_pylist())
