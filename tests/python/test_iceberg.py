"""Apache Iceberg tables written through pyiceberg with a SQL catalog on SQLite, with several
snapshots (appends, a delete): a loader reads exactly the data files of the snapshot it is
given; identity-partitioned columns prune files by the manifests' partition values (a bucket
transform prunes nothing and changes nothing); the snapshot goes into the state, so a resume
after more appends reads the same snapshot; delete files and expired snapshots are clear
errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches

pytest.importorskip("pyiceberg")
pytest.importorskip("sqlalchemy")
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.transforms import BucketTransform, IdentityTransform


def chunk(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({"id": ids, "x": (ids / 3).astype(np.float32),
                     "region": pa.array(["eu", "us", "ap"][i % 3] for i in ids)})


@pytest.fixture
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    catalog.create_namespace("db")
    return catalog


def make_table(catalog: SqlCatalog, bucket: bool = True):
    table = catalog.create_table("db.events", schema=chunk(0, 1).schema)
    with table.update_spec() as spec:
        spec.add_field("region", IdentityTransform(), "region")
        if bucket:
            spec.add_field("id", BucketTransform(2), "id_bucket")
    return catalog.load_table("db.events")


def ids(loader: stoker.Loader) -> list[int]:
    return sorted(i for batch in loader for i in batch["id"].tolist())


def test_each_snapshot_reads_exactly_its_rows(catalog: SqlCatalog) -> None:
    table = make_table(catalog)
    table.append(chunk(0, 90))
    table.append(chunk(90, 90))
    table.delete("id < 30")  # copy-on-write: files rewritten, no delete files
    table = catalog.load_table("db.events")
    snapshots = [s.snapshot_id for s in table.snapshots()]
    assert len(snapshots) >= 3
    for snapshot in snapshots:
        want = sorted(table.scan(snapshot_id=snapshot).to_arrow()["id"].to_pylist())
        loader = stoker.Loader(stoker.iceberg_table(catalog, "db.events", snapshot_id=snapshot),
                               columns=["id", "x"], batch_size=32)
        assert ids(loader) == want
        assert loader.state_dict()["table"] == {"format": "iceberg", "catalog": "lake",
                                                "table": "db.events", "snapshot_id": snapshot}


def test_identity_partitions_prune_files_and_bucket_prunes_nothing(catalog: SqlCatalog) -> None:
    table = make_table(catalog)
    table.append(chunk(0, 300))
    source = stoker.iceberg_table(catalog, "db.events")
    everything = stoker.Loader(source, columns=["id"], batch_size=64)
    files = len(everything.files)
    eu = stoker.Loader(source, columns=["id", "region"], batch_size=64, output="arrow",
                       filter=pc.field("region") == "eu")
    assert eu.stats()["files_pruned"] == files - files // 3  # 2 buckets x 3 regions
    got = pa.Table.from_batches(list(eu))
    assert set(got["region"].to_pylist()) == {"eu"} and got.num_rows == 100
    # `id` is partitioned by a bucket transform: not a partition column, nothing pruned
    # by it, and the filter still keeps exactly the right rows.
    small = stoker.Loader(source, columns=["id"], batch_size=64, filter=pc.field("id") < 10)
    assert small.stats()["files_pruned"] == 0
    assert ids(small) == list(range(10))
    # The identity column is a column of the files: read from them, not added again.
    assert everything.schema.names == ["id"]
    assert stoker.Loader(source, batch_size=64, output="arrow").schema.names == [
        "id", "x", "region"]


def test_resume_reads_the_saved_snapshot_after_appends(catalog: SqlCatalog) -> None:
    table = make_table(catalog, bucket=False)
    table.append(chunk(0, 300))
    table.append(chunk(300, 300))
    kw = {"columns": ["id", "x"], "batch_size": 40, "seed": 2, "shuffle_window": 200}
    source = stoker.iceberg_table(catalog, "db.events")
    uninterrupted = list(stoker.Loader(source, **kw))
    first = stoker.Loader(source, **kw)
    it = iter(first)
    for _ in range(4):
        next(it)
    state = json.loads(json.dumps(first.state_dict()))
    it.close()
    table.append(chunk(600, 300))
    resumed = stoker.Loader(source, **kw)
    assert len(resumed.files) > len(first.files)
    resumed.load_state_dict(state)
    assert resumed.files == first.files
    assert_same_batches(uninterrupted[4:], list(resumed))
    # Expired: the snapshot is gone from the table's metadata.
    table = catalog.load_table("db.events")
    table.maintenance.expire_snapshots().by_id(state["table"]["snapshot_id"]).commit()
    with pytest.raises(FileNotFoundError, match=rf"snapshot {state['table']['snapshot_id']} "
                                                r"no longer exists"):
        stoker.Loader(source, **kw).load_state_dict(state)


def test_delete_files_are_refused(catalog: SqlCatalog, tmp_path: Path) -> None:
    """A positional delete file (merge-on-read), committed through pyiceberg's own
    transaction API, which pyiceberg's reader applies: Stoker refuses the snapshot."""
    table = make_table(catalog, bucket=False)
    table.append(chunk(0, 90))
    task = next(iter(table.scan().plan_files()))
    path = tmp_path / "warehouse" / "pos-delete-0.parquet"
    schema = pa.schema([
        pa.field("file_path", pa.string(), False, {"PARQUET:field_id": "2147483546"}),
        pa.field("pos", pa.int64(), False, {"PARQUET:field_id": "2147483545"})])
    pq.write_table(pa.table({"file_path": [task.file.file_path], "pos": [0]}, schema=schema),
                   path)
    deletes = DataFile.from_args(content=DataFileContent.POSITION_DELETES,
                                 file_path=f"file://{path}", file_format=FileFormat.PARQUET,
                                 partition=task.file.partition, record_count=1,
                                 file_size_in_bytes=os.path.getsize(path),
                                 spec_id=task.file.spec_id)
    with (table.transaction() as transaction,
          transaction.update_snapshot().fast_append() as append):
        append.append_data_file(deletes)
    table = catalog.load_table("db.events")
    assert table.scan().to_arrow().num_rows == 89  # pyiceberg applies it
    with pytest.raises(NotImplementedError, match=r"has 1 delete file"):
        stoker.Loader(stoker.iceberg_table(catalog, "db.events"), columns=["id"], batch_size=8)


def test_an_s3_table_reads_its_pinned_snapshot_and_resumes_it(tmp_path: Path) -> None:
    """Warehouse and data files on the tests' S3 server (moto, loopback); the catalog's
    FileIO and the Loader's storage_options both point there."""
    pytest.importorskip("moto")
    from stoker_devtools.s3 import KEY, SECRET, MotoServer

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    server = MotoServer()
    try:
        pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, endpoint_override=server.endpoint,
                          scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir("lake")
        catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                             warehouse="s3://lake/warehouse",
                             **{"s3.endpoint": f"http://{server.endpoint}",
                                "s3.access-key-id": KEY, "s3.secret-access-key": SECRET,
                                "s3.region": "us-east-1"})
        catalog.create_namespace("db")
        table = make_table(catalog, bucket=False)
        table.append(chunk(0, 120))
        table.append(chunk(120, 120))
        storage = {"endpoint_override": server.endpoint, "scheme": "http",
                   "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
        kw = {"columns": ["id", "x"], "batch_size": 32, "seed": 6, "storage_options": storage}
        source = stoker.iceberg_table(catalog, "db.events")
        uninterrupted = list(stoker.Loader(source, **kw))
        assert sorted(i for b in uninterrupted for i in b["id"].tolist()) == list(range(240))
        first = stoker.Loader(source, **kw)
        it = iter(first)
        for _ in range(3):
            next(it)
        state = json.loads(json.dumps(first.state_dict()))
        it.close()
        table.append(chunk(240, 120))  # a later snapshot: the resume still reads the saved one
        resumed = stoker.Loader(source, **kw)
        resumed.load_state_dict(state)
        assert resumed.files == first.files
        assert_same_batches(uninterrupted[3:], list(resumed))
    finally:
        server.stop()


def test_an_iceberg_table_is_a_mixture_source(catalog: SqlCatalog, tmp_path: Path) -> None:
    table = make_table(catalog)
    table.append(chunk(0, 90))
    snapshot = table.current_snapshot().snapshot_id
    table.append(chunk(90, 90))  # after the pinned snapshot: not read
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(chunk(1000, 60).drop_columns(["region"]), other / "part.parquet")
    loader = stoker.Loader(stoker.Mixture([
        stoker.Source(stoker.iceberg_table(catalog, "db.events", snapshot_id=snapshot),
                      columns=["id", "x"]),
        stoker.Source(other, name="other"),
    ]), batch_size=32, seed=5)
    assert ids(loader) == list(range(90)) + list(range(1000, 1060))
    assert loader.stats()["rows_per_source"] == {"db.events": 90, "other": 60}
