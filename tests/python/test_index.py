"""The dataset index: a directory's Parquet summary file `_metadata` (written by pyarrow's
write_metadata, Dask, or `stoker index`) builds the same manifest as the footers do (same
fingerprint, plan and batches) from one read, and an index that no longer matches the files
(a file added, removed, rewritten) is caught, naming the file. With index="trust" the index
alone defines the files (no listing) and each file is checked at its first read, or, with
`stoker index --checksums`, each column chunk read is checked against its checksum."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from stoker.cli import gen as _gen
from stoker.cli import main as cli

KW = {"batch_size": 700, "seed": 3, "shuffle_window": 3000}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """Six files in two partition folders, uneven row groups, one file with no rows."""
    out = tmp_path / "ds"
    _gen.generate(out / "day=1", _gen.GenOptions(preset="criteo", rows=9000, files=3,
                                                 row_group_size=1100), progress=False)
    _gen.generate(out / "day=2", _gen.GenOptions(preset="criteo", rows=5000, files=2,
                                                 row_group_size=900), progress=False)
    schema = pq.read_schema(next((out / "day=1").glob("*.parquet")))
    pq.write_table(schema.empty_table(), out / "day=2" / "zz-empty.parquet")
    return out


def write_pyarrow_summary(root: Path) -> None:
    """`_metadata` as pyarrow's documentation (and Dask) write it: every footer, each row
    group's column chunks naming their file relative to the root."""
    collected = []
    for path in sorted(root.rglob("*.parquet")):
        metadata = pq.read_metadata(path)
        metadata.set_file_path(path.relative_to(root).as_posix())
        collected.append(metadata)
    pq.write_metadata(pq.read_schema(next(root.rglob("*.parquet"))), root / "_metadata",
                      metadata_collector=collected)


def identity(loader: stoker.Loader) -> tuple:
    """What the manifest decides: files in order, rows, row groups, the fingerprint."""
    info = loader.dataset_info()
    return info["files"], info["rows"], info["row_groups"], info["fingerprint"]


def epoch(source: Path | str, **kwargs) -> tuple[list, stoker.Loader]:
    loader = stoker.Loader(source, **{**KW, **kwargs})
    return list(loader), loader


def test_stoker_index_gives_the_manifest_of_the_footers(dataset: Path) -> None:
    assert cli(["index", str(dataset)]) == 0
    footers, plain = epoch(dataset, index="ignore")
    indexed, loader = epoch(dataset)
    assert identity(loader) == identity(plain)
    assert_same_batches(indexed, footers)
    assert loader.stats()["delivered_digest"] == plain.stats()["delivered_digest"]
    stats, plain_stats = loader.stats(), plain.stats()
    assert (stats["index_used"], stats["metadata_requests"]) == (1, 1)
    assert (plain_stats["index_used"], plain_stats["metadata_requests"]) == (0, 6)
    assert stats["metadata_seconds"] > 0


@pytest.mark.parametrize("kwargs", [
    {"columns": ["I3", "label"]},
    {"filter": pc.field("I1") > 50, "columns": ["row_id", "I1"]},
    {"world_size": 3, "rank": 2, "shuffle": False},
    {"output": "arrow", "with_row_origin": True},
])
def test_a_pyarrow_summary_gives_the_same_batches(dataset: Path, kwargs: dict) -> None:
    write_pyarrow_summary(dataset)
    footers, plain = epoch(dataset, index="ignore", **kwargs)
    indexed, loader = epoch(dataset, **kwargs)
    assert loader.stats()["index_used"] == 1
    assert identity(loader) == identity(plain)
    assert_same_batches(indexed, footers)


def test_resume_from_an_index_continues_the_footers_epoch(dataset: Path) -> None:
    cli(["index", str(dataset)])
    plain = stoker.Loader(dataset, index="ignore", **KW)
    it = iter(plain)
    [next(it) for _ in range(4)]
    state = plain.state_dict()
    rest_footers = list(it)
    resumed = stoker.Loader(dataset, **KW)
    resumed.load_state_dict(state)
    assert_same_batches(list(resumed), rest_footers)


def _stale_error(dataset: Path) -> str:
    with pytest.raises(ValueError, match="is stale") as caught:
        stoker.Loader(dataset, **KW)
    return str(caught.value)


@pytest.mark.parametrize("summary", ["stoker", "pyarrow"])
def test_a_file_added_after_the_index_is_caught(dataset: Path, summary: str) -> None:
    cli(["index", str(dataset)]) if summary == "stoker" else write_pyarrow_summary(dataset)
    time.sleep(0.01)
    shutil.copy(dataset / "day=1" / "part-00000.parquet", dataset / "day=2" / "late.parquet")
    message = _stale_error(dataset)
    assert "late.parquet" in message and "added" in message and "stoker index" in message


@pytest.mark.parametrize("summary", ["stoker", "pyarrow"])
def test_a_removed_file_is_caught(dataset: Path, summary: str) -> None:
    cli(["index", str(dataset)]) if summary == "stoker" else write_pyarrow_summary(dataset)
    (dataset / "day=1" / "part-00001.parquet").unlink()
    message = _stale_error(dataset)
    assert "day=1/part-00001.parquet" in message and "removed" in message


@pytest.mark.parametrize("summary", ["stoker", "pyarrow"])
def test_a_rewritten_file_is_caught(dataset: Path, summary: str) -> None:
    cli(["index", str(dataset)]) if summary == "stoker" else write_pyarrow_summary(dataset)
    time.sleep(0.01)
    target = dataset / "day=1" / "part-00002.parquet"
    table = pq.read_table(target)
    pq.write_table(table.slice(0, table.num_rows - 1), target)
    message = _stale_error(dataset)
    assert "part-00002.parquet" in message
    assert ("rewritten" if summary == "stoker" else "modified") in message


def test_a_rewrite_of_the_same_size_is_caught_by_its_mtime(dataset: Path) -> None:
    cli(["index", str(dataset)])
    target = dataset / "day=1" / "part-00000.parquet"
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert "part-00000.parquet" in _stale_error(dataset)


def test_fallback_reads_the_footers_and_ignore_never_reads_the_index(dataset: Path) -> None:
    cli(["index", str(dataset)])
    (dataset / "day=2" / "zz-empty.parquet").unlink()
    expected, _ = epoch(dataset, index="ignore")
    got, loader = epoch(dataset, index="fallback")
    assert_same_batches(got, expected)
    assert (loader.stats()["index_used"], loader.stats()["index_stale"]) == (0, 1)
    with pytest.raises(ValueError, match="index must be 'use', 'fallback', 'ignore' or 'trust'"):
        stoker.Loader(dataset, index="rebuild", **KW)


def files_with_rows(loader: stoker.Loader) -> int:
    """Files with rows: those a loader reads (and, trusting an index, checks)."""
    return sum(1 for f in loader.files if pq.read_metadata(f).num_rows > 0)


@pytest.mark.parametrize("kwargs", [
    {},
    {"columns": ["I3", "label"]},
    {"filter": pc.field("I1") > 50, "columns": ["row_id", "I1"]},
    {"world_size": 3, "rank": 2, "shuffle": False},
    {"output": "arrow", "with_row_origin": True},
])
def test_trust_lists_nothing_and_gives_the_footers_batches(dataset: Path, kwargs: dict) -> None:
    cli(["index", str(dataset)])
    footers, plain = epoch(dataset, index="ignore", **kwargs)
    trusted, loader = epoch(dataset, index="trust", **kwargs)
    assert identity(loader) == identity(plain)
    assert_same_batches(trusted, footers)
    assert loader.stats()["index_used"] == 1


def test_trust_reads_the_index_then_checks_each_file_once(dataset: Path) -> None:
    cli(["index", str(dataset)])
    loader = stoker.Loader(dataset, index="trust", **KW)
    assert loader.stats()["metadata_requests"] == 1  # the index; no listing, no footer
    for _ in range(2):
        list(loader)
    # Then one check per file read (the empty file has none to read), at its first read only.
    assert loader.stats()["metadata_requests"] == 1 + files_with_rows(loader)


def test_trust_resumes_the_footers_epoch(dataset: Path) -> None:
    cli(["index", str(dataset)])
    plain = stoker.Loader(dataset, index="ignore", **KW)
    it = iter(plain)
    [next(it) for _ in range(4)]
    state = plain.state_dict()
    rest_footers = list(it)
    resumed = stoker.Loader(dataset, index="trust", **KW)
    resumed.load_state_dict(state)
    assert_same_batches(list(resumed), rest_footers)


def _trusted_until_error(dataset: Path, **kwargs) -> tuple[list, BaseException, list]:
    """Batches a trusting loader delivers before it fails (with their row origins)."""
    loader = stoker.Loader(dataset, index="trust", output="arrow", with_row_origin=True,
                           **{**KW, **kwargs})
    got = []
    with pytest.raises((ValueError, FileNotFoundError)) as caught:
        got.extend(loader)  # keeps the batches delivered before the error
    return got, caught.value, loader.files


def _never_delivered(got: list, files: list, name: str) -> None:
    """No delivered row came from the file called `name`."""
    index = next(i for i, f in enumerate(files) if f.endswith(name))
    for batch in got:
        assert index not in batch.column("_file_index").to_pylist()


def test_trust_catches_a_rewritten_file_before_its_rows(dataset: Path) -> None:
    cli(["index", str(dataset)])
    time.sleep(0.01)
    target = dataset / "day=1" / "part-00002.parquet"
    table = pq.read_table(target)
    pq.write_table(table.slice(0, table.num_rows - 1), target)
    got, error, files = _trusted_until_error(dataset)
    assert "day=1/part-00002.parquet' was rewritten" in str(error)
    assert "stoker index --overwrite" in str(error)
    _never_delivered(got, files, "day=1/part-00002.parquet")


def test_trust_catches_a_same_size_rewrite_by_its_mtime(dataset: Path) -> None:
    cli(["index", str(dataset)])
    target = dataset / "day=1" / "part-00000.parquet"
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    got, error, files = _trusted_until_error(dataset)
    assert "day=1/part-00000.parquet' was rewritten" in str(error)
    _never_delivered(got, files, "day=1/part-00000.parquet")


def test_trust_catches_a_removed_file_before_its_rows(dataset: Path) -> None:
    cli(["index", str(dataset)])
    (dataset / "day=1" / "part-00001.parquet").unlink()
    got, error, files = _trusted_until_error(dataset)
    assert isinstance(error, FileNotFoundError)
    assert "day=1/part-00001.parquet' is in the dataset index" in str(error)
    assert "removed" in str(error)
    _never_delivered(got, files, "day=1/part-00001.parquet")


@pytest.mark.parametrize("flags", [[], ["--checksums"]])
def test_trust_checks_files_the_cache_serves(dataset: Path, tmp_path: Path,
                                             flags: list) -> None:
    cli(["index", *flags, str(dataset)])
    cache = {"cache_dir": str(tmp_path / "cache")}
    epoch(dataset, index="trust", **cache)  # fills the cache
    time.sleep(0.01)
    target = dataset / "day=2" / "part-00000.parquet"
    table = pq.read_table(target)
    pq.write_table(table.slice(1), target)
    got, error, files = _trusted_until_error(dataset, **cache)
    assert "day=2/part-00000.parquet' was rewritten" in str(error)
    _never_delivered(got, files, "day=2/part-00000.parquet")


@pytest.mark.parametrize("kwargs", [
    {},
    {"columns": ["I3", "label"]},
    {"filter": pc.field("I1") > 50, "columns": ["row_id", "I1"]},
    {"output": "arrow", "with_row_origin": True, "shuffle": False},
])
def test_checksums_give_the_footers_batches_and_ask_the_store_nothing(dataset: Path,
                                                                        kwargs: dict) -> None:
    cli(["index", "--checksums", str(dataset)])
    footers, plain = epoch(dataset, index="ignore", **kwargs)
    loader = stoker.Loader(dataset, index="trust", **{**KW, **kwargs})
    assert_same_batches(list(loader), footers)
    assert_same_batches(list(loader), list(plain))  # the second epoch too
    assert identity(loader) == identity(plain)
    # The index, and no check of any file: its chunks' checksums stand in for them.
    assert loader.stats()["metadata_requests"] == 1


def _flip_a_byte_keeping_size_and_mtime(path: Path, column: int) -> None:
    """Changes one byte inside row group 0's chunk of `column`, as silent corruption or a
    rewrite that kept size and mtime would: the identity check cannot see it."""
    chunk = pq.read_metadata(path).row_group(0).column(column)
    offset = chunk.data_page_offset + chunk.total_compressed_size - 1
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size


def test_checksums_catch_changed_bytes_the_identity_check_cannot_see(dataset: Path) -> None:
    cli(["index", "--checksums", str(dataset)])
    target = dataset / "day=2" / "part-00001.parquet"
    column = pq.read_schema(target).get_field_index("I2")
    _flip_a_byte_keeping_size_and_mtime(target, column)
    got, error, files = _trusted_until_error(dataset)
    assert isinstance(error, ValueError)
    message = str(error)
    assert "day=2/part-00001.parquet' changed after the dataset index" in message
    assert "column 'I2' of row group 0 does not have the bytes indexed" in message
    assert "stoker index --overwrite --checksums" in message
    # No row of the changed row group was delivered (the file's other row groups are intact).
    changed = files.index(str(target))
    rows_of_group_0 = pq.read_metadata(target).row_group(0).num_rows
    for batch in got:
        origin = zip(batch.column("_file_index").to_pylist(),
                     batch.column("_row_in_file").to_pylist(), strict=True)
        assert not any(f == changed and r < rows_of_group_0 for f, r in origin)


def test_checksums_catch_a_rewritten_or_removed_file_before_its_rows(dataset: Path) -> None:
    cli(["index", "--checksums", str(dataset)])
    time.sleep(0.01)
    target = dataset / "day=1" / "part-00002.parquet"
    table = pq.read_table(target)
    pq.write_table(table.slice(0, table.num_rows // 2), target)
    got, error, files = _trusted_until_error(dataset)
    assert isinstance(error, ValueError)
    assert ("day=1/part-00002.parquet' was rewritten" in str(error)
            or "day=1/part-00002.parquet' changed after the dataset index" in str(error))
    _never_delivered(got, files, "day=1/part-00002.parquet")
    cli(["index", "--checksums", "--overwrite", str(dataset)])
    (dataset / "day=1" / "part-00001.parquet").unlink()
    got, error, files = _trusted_until_error(dataset)
    assert isinstance(error, FileNotFoundError)
    assert "day=1/part-00001.parquet' is in the dataset index" in str(error)
    _never_delivered(got, files, "day=1/part-00001.parquet")


def test_trust_does_not_see_a_file_added_after_the_index(dataset: Path) -> None:
    """Documented: without a listing, the index defines the files."""
    cli(["index", str(dataset)])
    before, _ = epoch(dataset, index="trust")
    shutil.copy(dataset / "day=1" / "part-00000.parquet", dataset / "day=2" / "late.parquet")
    after, loader = epoch(dataset, index="trust")
    assert not any(f.endswith("late.parquet") for f in loader.files)
    assert_same_batches(after, before)
    _stale_error(dataset)  # the default mode still catches it


def test_trust_refuses_a_directory_named_twice(dataset: Path) -> None:
    cli(["index", str(dataset)])
    with pytest.raises(ValueError, match="named by more than one source"):
        stoker.Loader([str(dataset), str(dataset)], index="trust", **KW)


def test_trust_needs_an_index_stoker_wrote(dataset: Path) -> None:
    expected, _ = epoch(dataset, index="ignore")
    got, loader = epoch(dataset, index="trust")  # no index: listed and read as with "use"
    assert loader.stats()["index_used"] == 0
    assert_same_batches(got, expected)
    write_pyarrow_summary(dataset)
    with pytest.raises(ValueError, match="records no file sizes.*stoker index --overwrite"):
        stoker.Loader(dataset, index="trust", **KW)


def test_stoker_index_refuses_to_replace_an_index_without_overwrite(dataset: Path,
                                                                  capsys) -> None:
    assert cli(["index", str(dataset)]) == 0
    assert "6 files" in capsys.readouterr().out
    assert cli(["index", str(dataset)]) == 1
    assert "--overwrite" in capsys.readouterr().err
    shutil.copy(dataset / "day=1" / "part-00000.parquet", dataset / "day=2" / "late.parquet")
    assert cli(["index", "--overwrite", "--json", str(dataset)]) == 0
    assert '"files": 7' in capsys.readouterr().out
    epoch(dataset)  # current again


def test_stoker_index_needs_one_schema(dataset: Path, capsys) -> None:
    pq.write_table(pa.table({"other": [1, 2]}), dataset / "day=2" / "odd.parquet")
    assert cli(["index", str(dataset)]) == 1
    assert "odd.parquet" in capsys.readouterr().err
    assert not (dataset / "_metadata").exists()


def test_summary_and_marker_files_are_never_data(dataset: Path) -> None:
    expected, _ = epoch(dataset, index="ignore")
    write_pyarrow_summary(dataset)
    shutil.copy(dataset / "_metadata", dataset / "_common_metadata")
    (dataset / "_SUCCESS").write_bytes(b"")
    # Spark's checksums and temporary output, and hidden copies: never read as data.
    shutil.copy(dataset / "day=1" / "part-00000.parquet", dataset / "day=1" / ".part-9.parquet")
    (dataset / "day=1" / ".part-00000.parquet.crc").write_bytes(b"crc")
    (dataset / "_temporary" / "0").mkdir(parents=True)
    shutil.copy(dataset / "day=1" / "part-00000.parquet",
                dataset / "_temporary" / "0" / "part-7.parquet")
    for index in ("ignore", "use"):
        got, loader = epoch(dataset, index=index)
        assert len(loader.files) == 6
        assert_same_batches(got, expected)
    got, _ = epoch(str(dataset / "*" / "*.parquet"))
    assert_same_batches(got, expected)


def test_on_s3_one_listing_and_one_read_give_the_footers_batches(dataset: Path) -> None:
    pytest.importorskip("moto")
    import json

    import pyarrow.fs as pafs
    from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    server = MotoServer()
    proxy = FaultProxy(server.endpoint)
    try:
        fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, scheme="http",
                               endpoint_override=server.endpoint, region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("data")
        for path in sorted(dataset.rglob("*.parquet")):
            pafs.copy_files(str(path), f"data/ds/{path.relative_to(dataset).as_posix()}",
                            destination_filesystem=fs)
        storage = {"endpoint_override": proxy.endpoint, "scheme": "http",
                   "region": "us-east-1", "access_key": KEY, "secret_key": SECRET}
        # Written to the server itself: the test proxy does not relay multipart uploads.
        direct = {**storage, "endpoint_override": server.endpoint}
        assert cli(["index", "s3://data/ds/", "--storage-options", json.dumps(direct)]) == 0
        local, _ = epoch(dataset)
        footers, plain = epoch("s3://data/ds/", index="ignore", storage_options=storage)
        before = proxy.requests
        indexed, loader = epoch("s3://data/ds/", storage_options=storage)
        assert identity(loader) == identity(plain)
        assert_same_batches(indexed, footers)
        assert_same_batches(indexed, local)
        stats = loader.stats()
        assert (stats["index_used"], stats["metadata_requests"]) == (1, 1)
        assert plain.stats()["metadata_requests"] == 6  # one ranged GET per footer, no HEAD
        # Startup: what the source is (a HEAD and a one-key listing), one listing page, the
        # index; then data reads only.
        assert proxy.requests - before == 2 + 1 + 1 + stats["requests"]
        # Trusting the index: no listing, a HEAD of `_metadata` and its read, then the data
        # reads and one HEAD per file read.
        before = proxy.requests
        trusted, loader = epoch("s3://data/ds/", index="trust", storage_options=storage)
        assert identity(loader) == identity(plain)
        assert_same_batches(trusted, footers)
        stats = loader.stats()
        assert stats["metadata_requests"] == 1 + 5
        assert proxy.requests - before == 1 + stats["metadata_requests"] + stats["requests"]
        # With the chunks' checksums in the index: no request but the index's and the data.
        assert cli(["index", "s3://data/ds/", "--checksums", "--overwrite",
                    "--storage-options", json.dumps(direct)]) == 0
        before = proxy.requests
        checked, loader = epoch("s3://data/ds/", index="trust", storage_options=storage)
        assert_same_batches(checked, footers)
        stats = loader.stats()
        assert stats["metadata_requests"] == 1
        assert proxy.requests - before == 1 + 1 + stats["requests"]
        # A file rewritten on the store is caught, listing it or not.
        pafs.copy_files(str(dataset / "day=1" / "part-00000.parquet"),
                        "data/ds/day=2/part-00000.parquet", destination_filesystem=fs)
        rewritten = r"s3://data/ds/day=2/part-00000.parquet' was rewritten"
        with pytest.raises(ValueError, match=rewritten):
            stoker.Loader("s3://data/ds/", storage_options=storage, **KW)
        with pytest.raises(ValueError, match=r"s3://data/ds/day=2/part-00000.parquet' "
                                             r"(was rewritten|changed after the dataset index)"):
            epoch("s3://data/ds/", index="trust", storage_options=storage)
    finally:
        proxy.stop()
        server.stop()
