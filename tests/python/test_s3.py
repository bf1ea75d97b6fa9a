"""Object storage against a real S3-compatible server (moto's server mode) started by the
tests on loopback: same batches as from local disk, through injected latency, 503s and
dropped connections; clear errors for missing buckets, objects and bad credentials."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs as pafs
import pytest
import stoker
from conftest import assert_same_batches
from stoker_devtools.s3 import KEY, SECRET, FaultProxy, MotoServer

pytest.importorskip("moto")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookups

COLUMNS = ["row_id", "label", "I1", "C1"]
KW = {"columns": COLUMNS, "batch_size": 1000, "seed": 6, "shuffle_window": 4000}


def storage(endpoint: str, **extra) -> dict:
    return {"endpoint_override": endpoint, "scheme": "http", "region": "us-east-1",
            "access_key": KEY, "secret_key": SECRET, **extra}


@pytest.fixture(scope="module")
def s3(criteo: Path):
    server = MotoServer()
    fs = pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, endpoint_override=server.endpoint,
                           scheme="http", region="us-east-1", allow_bucket_creation=True)
    fs.create_dir("data")
    for path in sorted(criteo.glob("*.parquet")):
        pafs.copy_files(str(path), f"data/criteo/{path.name}", destination_filesystem=fs)
    yield server
    server.stop()


def batches(loader: stoker.Loader) -> list[dict]:
    return list(loader)


@pytest.mark.parametrize("source", ["s3://data/criteo/", "s3://data/criteo/*.parquet", "list"])
def test_s3_batches_equal_local_batches(s3: MotoServer, criteo: Path, source: str) -> None:
    if source == "list":
        source = [f"s3://data/criteo/{p.name}" for p in sorted(criteo.glob("*.parquet"))]
    remote = stoker.Loader(source, storage_options=storage(s3.endpoint), **KW)
    local = stoker.Loader(criteo, **KW)
    assert_same_batches(batches(remote), batches(local))
    stats = remote.stats()
    # Reads in flight by default: more where each waits on the network.
    assert (stats["io_threads"], local.stats()["io_threads"]) == (64, 16)
    assert stats["retries"] == 0
    assert stats["requests"] >= stats["units_read"] > 0
    assert stats["bytes_fetched"] >= stats["bytes_read"] > 0


def test_footers_are_read_once_and_only_projected_columns_are_fetched(s3: MotoServer,
                                                                      criteo: Path) -> None:
    proxy = FaultProxy(s3.endpoint)
    try:
        loader = stoker.Loader("s3://data/criteo/", storage_options=storage(proxy.endpoint),
                               columns=["row_id"], batch_size=1000, seed=1)
        after_footers = proxy.ranged_gets
        batches(loader)
        batches(loader)  # a second epoch reads data, never footers again
        stats = loader.stats()
        assert proxy.ranged_gets - after_footers == stats["requests"]
        # One column of ~40: a small fraction of the bytes.
        total = sum(p.stat().st_size for p in criteo.glob("*.parquet"))
        assert stats["bytes_fetched"] < total / 10 * 2
    finally:
        proxy.stop()


def test_identical_through_latency_503s_and_dropped_connections(s3: MotoServer,
                                                               criteo: Path) -> None:
    proxy = FaultProxy(s3.endpoint, latency=0.005, fail_every=4, drop_every=9)
    try:
        loader = stoker.Loader("s3://data/criteo/", num_threads=2,
                               storage_options=storage(proxy.endpoint, io_threads=8), **KW)
        got = batches(loader)
    finally:
        proxy.stop()
    assert_same_batches(got, batches(stoker.Loader(criteo, **KW)))
    assert proxy.failed > 0 and proxy.dropped > 0
    assert loader.stats()["retries"] >= proxy.failed  # every fault was retried, none skipped


@pytest.mark.parametrize("ending", ["deleted mid-epoch", "alive at exit"])
def test_a_process_that_read_s3_exits_cleanly(s3: MotoServer, ending: str) -> None:
    """Arrow's S3 support must be finalized before the process exits, or the AWS SDK's
    teardown can crash it; a script never calls that itself."""
    import json
    import subprocess
    import sys

    script = (
        "import json, sys, stoker\n"
        "spec = json.loads(sys.argv[1])\n"
        "loader = stoker.Loader('s3://data/criteo/', storage_options=spec['storage'],"
        " **spec['kw'])\n"
        "it = iter(loader)\n"
        "next(it)\n"
        "if spec['ending'] == 'deleted mid-epoch':\n"
        "    del it, loader\n"
        "print('done')\n")
    spec = {"storage": storage(s3.endpoint), "kw": KW, "ending": ending}
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", script, json.dumps(spec)],
                             capture_output=True, text=True, timeout=120, check=False)
        assert (run.returncode, run.stdout.strip()) == (0, "done"), run.stderr[-2000:]
        assert "FinalizeS3 was not called" not in run.stderr


def test_exhausted_retries_name_the_object_and_range(s3: MotoServer) -> None:
    loader = stoker.Loader("s3://data/criteo/", storage_options=storage(s3.endpoint), **KW)
    proxy = FaultProxy(s3.endpoint)
    try:
        failing = stoker.Loader("s3://data/criteo/",
                                storage_options=storage(proxy.endpoint, max_attempts=2), **KW)
        proxy.fail_always = True  # footers are in; now every data read fails
        with pytest.raises(OSError, match=r"s3://data/criteo/part-0000\d\.parquet' \(row group "
                                          r"\d+\): fetching bytes \d+-\d+"):
            batches(failing)
        assert failing.stats()["retries"] > 0
    finally:
        proxy.stop()
    assert len(batches(loader)) == len(loader)


@pytest.mark.parametrize("source", ["s3://no-such-bucket/x/", "s3://data/missing/",
                                    "s3://data/criteo/part-99999.parquet"])
def test_missing_bucket_or_object_fails_fast(s3: MotoServer, source: str) -> None:
    with pytest.raises(FileNotFoundError, match=source.rstrip("/").replace("*", r"\*")):
        stoker.Loader(source, batch_size=10, storage_options=storage(s3.endpoint))


def test_bad_credentials_are_refused_clearly(criteo: Path) -> None:
    server = MotoServer(auth=True)
    try:
        with pytest.raises(OSError, match=r"(?i)(access denied|invalid|forbidden|403)"):
            stoker.Loader("s3://data/criteo/", batch_size=10,
                          storage_options=storage(server.endpoint, access_key="AKIAWRONG",
                                                  secret_key="wrong"))
    finally:
        server.stop()


def test_bad_storage_options_name_the_key(criteo: Path) -> None:
    with pytest.raises(ValueError, match="unknown key.*endpoint"):
        stoker.Loader(criteo, batch_size=10, storage_options={"endpoint": "x"})
    with pytest.raises(ValueError, match="scheme"):
        stoker.Loader(criteo, batch_size=10, storage_options={"scheme": "ftp"})
    with pytest.raises(TypeError, match="io_threads"):
        stoker.Loader(criteo, batch_size=10, storage_options={"io_threads": "8"})


def test_warm_cache_epoch_makes_no_data_requests(s3: MotoServer, criteo: Path,
                                                 tmp_path: Path) -> None:
    proxy = FaultProxy(s3.endpoint)
    try:
        options = storage(proxy.endpoint)
        cold = stoker.Loader("s3://data/criteo/", cache_dir=tmp_path, storage_options=options,
                             **KW)
        expected = batches(cold)
        warm = stoker.Loader("s3://data/criteo/", cache_dir=tmp_path, storage_options=options,
                             **KW)
        before = proxy.ranged_gets  # footers were read when the loader was built
        assert_same_batches(batches(warm), expected)
        assert proxy.ranged_gets == before
        assert warm.stats()["requests"] == 0 and warm.stats()["cache_misses"] == 0
    finally:
        proxy.stop()
