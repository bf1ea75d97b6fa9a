"""Delta Lake tables written by `deltalake` with several versions (append, overwrite, a
delete): a loader reads exactly the files and partition values of the version it is given
(partition values from the log, not the paths); the version read goes into the state, so a
resume after the table has grown reads the same snapshot; a vacuumed version and deletion
vectors are clear errors. Local and s3://."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches

deltalake = pytest.importorskip("deltalake")


def chunk(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    return pa.table({"id": ids, "x": (ids / 3).astype(np.float32),
                     "region": pa.array(["eu", "us", "ap"][i % 3] for i in ids)})


def write(path: Path | str, table: pa.Table, mode: str, **kw) -> None:
    deltalake.write_deltalake(str(path), table, mode=mode, partition_by=["region"], **kw)


def arrow_rows(loader: stoker.Loader) -> pa.Table:
    return pa.Table.from_batches(list(loader), schema=loader.schema).sort_by("id")


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """v0: rows 0-299; v1: + rows 300-599 (append); v2: rows with id % 10 == 0 deleted."""
    path = tmp_path / "events"
    write(path, chunk(0, 300), "error")
    write(path, chunk(300, 300), "append")
    deltalake.DeltaTable(str(path)).delete("id % 10 = 0")
    return path


def test_each_version_reads_exactly_its_rows(table: Path) -> None:
    for version, want in [(0, set(range(300))), (1, set(range(600))),
                          (2, {i for i in range(600) if i % 10})]:
        loader = stoker.Loader(stoker.delta_table(table, version=version), batch_size=64,
                               output="arrow")
        got = arrow_rows(loader)
        assert set(got["id"].to_pylist()) == want and got.num_rows == len(want)
        reference = deltalake.DeltaTable(str(table), version=version).to_pyarrow_table()
        assert got.select(["id", "region"]).equals(
            reference.sort_by("id").select(["id", "region"]).cast(got.select(["id", "region"])
                                                                  .schema))
        assert loader.state_dict()["table"] == {"format": "delta", "uri": str(table),
                                                "version": version}
    latest = stoker.Loader(stoker.delta_table(f"delta://{table}"), columns=["id"], batch_size=64)
    assert latest.state_dict()["table"]["version"] == 2


def test_partition_values_come_from_the_log_not_the_paths(table: Path, tmp_path: Path) -> None:
    # Rename one partition directory and fix the log's paths only: the values must still come
    # from the log's partitionValues ("eu"), whatever the directory is called now.
    log = table / "_delta_log"
    (table / "region=eu").rename(table / "moved")
    for entry in log.glob("*.json"):
        entry.write_text(entry.read_text().replace("region=eu/", "moved/"))
    loader = stoker.Loader(stoker.delta_table(table, version=1), batch_size=100,
                           output="arrow", filter=pc.field("region") == "eu")
    got = arrow_rows(loader)
    assert got.num_rows == 200 and set(got["region"].to_pylist()) == {"eu"}
    assert all(i % 3 == 0 for i in got["id"].to_pylist())
    assert loader.stats()["files_pruned"] > 0
    assert all("moved/" in f for f in loader.files)


def test_overwrite_is_a_new_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, chunk(0, 100), "error")
    write(path, chunk(1000, 50), "overwrite")
    old = arrow_rows(stoker.Loader(stoker.delta_table(path, version=0), batch_size=32,
                                   output="arrow"))
    new = arrow_rows(stoker.Loader(stoker.delta_table(path), batch_size=32, output="arrow"))
    assert old["id"].to_pylist() == list(range(100))
    assert new["id"].to_pylist() == list(range(1000, 1050))


def test_resume_reads_the_saved_snapshot_after_the_table_grew(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, chunk(0, 400), "error")
    write(path, chunk(400, 400), "append")  # v1, the latest when training starts
    kw = {"columns": ["id", "x"], "batch_size": 50, "seed": 9, "shuffle_window": 300,
          "num_threads": 2}
    uninterrupted = list(stoker.Loader(stoker.delta_table(path), **kw))
    first = stoker.Loader(stoker.delta_table(path), **kw)
    it = iter(first)
    for _ in range(5):
        next(it)
    state = json.loads(json.dumps(first.state_dict()))  # as a checkpoint stores it
    it.close()
    assert state["table"]["version"] == 1
    write(path, chunk(800, 400), "append")  # v2 lands while the job is down
    resumed = stoker.Loader(stoker.delta_table(path), **kw)
    assert len(resumed.files) > len(first.files)  # it opened at v2 ...
    resumed.load_state_dict(state)  # ... and reopens at v1
    assert resumed.files == first.files
    assert_same_batches(uninterrupted[5:], list(resumed))
    # An explicit other version is refused rather than silently changed.
    pinned = stoker.Loader(stoker.delta_table(path, version=2), **kw)
    with pytest.raises(ValueError, match="version 1 .* pins version 2"):
        pinned.load_state_dict(state)


def test_resume_against_a_vacuumed_version_names_it(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write(path, chunk(0, 200), "error")
    loader = stoker.Loader(stoker.delta_table(path), columns=["id"], batch_size=50, seed=1)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    it.close()
    write(path, chunk(200, 100), "overwrite")
    deltalake.DeltaTable(str(path)).vacuum(retention_hours=0, dry_run=False,
                                           enforce_retention_duration=False)
    resumed = stoker.Loader(stoker.delta_table(path), columns=["id"], batch_size=50, seed=1)
    with pytest.raises(FileNotFoundError, match=r"Delta table '.*' version 0: .*vacuumed"):
        resumed.load_state_dict(state)


def test_deletion_vectors_are_refused(tmp_path: Path) -> None:
    """A table whose log marks rows of a file deleted by a deletion vector: refused, naming the
    file, rather than delivering deleted rows. The log is written by hand, in the form Spark
    and Databricks write (deltalake itself rewrites files on delete)."""
    path = tmp_path / "t"
    write(path, chunk(0, 30), "error")
    log = path / "_delta_log"
    add = next(json.loads(line)["add"] for line in (log / "00000000000000000000.json")
               .read_text().splitlines() if "add" in json.loads(line))
    # An inline deletion vector ("i"): the RoaringBitmapArray {0, 3} (magic 1681511377, one
    # bitmap, key 0, pyroaring's portable serialization), Z85-encoded: rows 0 and 3 deleted.
    dv = {"storageType": "i", "pathOrInlineDv": "^Bg9^0rr910000000000iXQKl0rr91000315c8Xg00093",
          "offset": None, "sizeInBytes": 36, "cardinality": 2}
    commit = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors"]}},
        {"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True}},
        {"add": {**add, "dataChange": True, "deletionVector": dv}},
        {"commitInfo": {"operation": "DELETE"}},
    ]
    (log / "00000000000000000001.json").write_text("\n".join(json.dumps(a) for a in commit))
    # deltalake reads the vector (so the table is valid) ...
    vectors = pa.RecordBatchReader.from_stream(
        deltalake.DeltaTable(str(path)).deletion_vectors()).read_all()
    assert vectors.num_rows == 1
    assert vectors.column("selection_vector")[0].as_py()[:4] == [False, True, True, False]
    # ... and Stoker refuses the version rather than deliver the deleted rows.
    with pytest.raises(NotImplementedError, match=r"version 1 has deletion vectors on 1 file"):
        stoker.Loader(stoker.delta_table(path), columns=["id"], batch_size=10)
    # The version before the delete has none, and reads.
    assert len(list(stoker.Loader(stoker.delta_table(path, version=0), columns=["id"],
                                  batch_size=10))) == 3


def test_s3_table(tmp_path: Path) -> None:
    pytest.importorskip("moto")
    from stoker_devtools.s3 import KEY, SECRET, MotoServer

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    local = tmp_path / "t"
    write(local, chunk(0, 300), "error")
    write(local, chunk(300, 300), "append")
    server = MotoServer()
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET,
                               endpoint_override=server.endpoint, scheme="http",
                               region="us-east-1", allow_bucket_creation=True)
        fs.create_dir("lake")
        for file in sorted(p for p in local.rglob("*") if p.is_file()):
            pafs.copy_files(str(file), f"lake/t/{file.relative_to(local)}",
                            destination_filesystem=fs)
        storage = {"endpoint_override": server.endpoint, "scheme": "http",
                   "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
        kw = {"columns": ["id", "x"], "batch_size": 64, "seed": 4,
              "filter": pc.field("region") != "ap"}
        remote = stoker.Loader(stoker.delta_table("s3://lake/t", version=0),
                               storage_options=storage, **kw)
        here = stoker.Loader(stoker.delta_table(local, version=0), **kw)
        assert remote.stats()["files_pruned"] == 1
        assert_same_batches(list(here), list(remote))
        assert remote.state_dict()["table"] == {"format": "delta", "uri": "s3://lake/t",
                                                "version": 0}
    finally:
        server.stop()
        shutil.rmtree(local, ignore_errors=True)


def test_a_delta_table_is_a_mixture_source(table: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    pq.write_table(chunk(10_000, 200).drop_columns(["region"]), other / "part.parquet")

    def mixture(version: int) -> stoker.MixtureLoader:
        return stoker.Loader(stoker.Mixture([
            stoker.Source(stoker.delta_table(table, version=version), columns=["id", "x"]),
            stoker.Source(other, name="other"),
        ]), batch_size=64, seed=3)

    loader = mixture(1)
    batches = list(loader)
    assert sorted(i for b in batches for i in b["id"].tolist()) == \
        list(range(600)) + list(range(10_000, 10_200))
    assert loader.stats()["rows_per_source"] == {str(table): 600, "other": 200}
    # A resume of the same snapshot continues exactly; another snapshot's files are refused.
    first = mixture(1)
    iterator = iter(first)
    for _ in range(4):
        next(iterator)
    state = first.state_dict()
    resumed = mixture(1)
    resumed.load_state_dict(state)
    assert_same_batches(list(resumed), batches[4:])
    with pytest.raises(ValueError, match="dataset"):
        mixture(2).load_state_dict(state)
