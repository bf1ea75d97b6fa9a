"""output="jax": jax.Arrays over the engine's buffers, equal to the numpy output; global
arrays across processes with stoker.jax.global_batches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

jax = pytest.importorskip("jax")
import stoker
import stoker.jax
from stoker import _core


@pytest.fixture(autouse=True)
def x64():
    """Stoker's int64 and float64 columns reach JAX as they are only with x64 on."""
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


def test_64_bit_columns_without_x64_are_refused_not_narrowed(embeddings: Path) -> None:
    jax.config.update("jax_enable_x64", False)
    with pytest.raises(ValueError, match=r"row_id, item_id are 64-bit.*jax_enable_x64"):
        stoker.Loader(embeddings, batch_size=500, output="jax")
    cast = [{"op": "cast", "column": c, "dtype": "int32"} for c in ("row_id", "item_id")]
    batch = next(iter(stoker.Loader(embeddings, batch_size=500, output="jax", transforms=cast)))
    assert batch["row_id"].dtype == np.int32 and batch["embedding"].dtype == np.float32


def test_jax_batches_equal_numpy_batches(embeddings: Path) -> None:
    options = {"batch_size": 500, "seed": 3, "num_threads": 2}
    as_jax = list(stoker.Loader(embeddings, output="jax", **options))
    as_numpy = list(stoker.Loader(embeddings, output="numpy", **options))
    assert len(as_jax) == len(as_numpy) > 1
    for j, n in zip(as_jax, as_numpy):
        assert j.keys() == n.keys()
        for name in n:
            assert isinstance(j[name], jax.Array)
            assert j[name].shape == n[name].shape and j[name].dtype == n[name].dtype
            np.testing.assert_array_equal(np.asarray(j[name]), n[name], err_msg=name)
    assert as_jax[0]["embedding"].shape == (500, 8)  # a fixed-size list is a dimension


def test_batches_go_to_the_device_asked_or_jaxs_default(embeddings: Path) -> None:
    """device= with output="jax": a platform or "<platform>:N", None for JAX's default device
    (here the CPU: the batches stay zero-copy views of the engine's buffers). A platform JAX
    does not have is an error naming it; so is a device index it does not have."""
    cpu = jax.devices("cpu")[0]
    options = {"batch_size": 500, "seed": 3, "num_threads": 2, "output": "jax"}
    expected = list(stoker.Loader(embeddings, **options))
    for device in (None, "cpu", "cpu:0"):
        got = list(stoker.Loader(embeddings, device=device, **options))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            for name in e:
                assert g[name].devices() == {cpu}, (device, name)
                np.testing.assert_array_equal(np.asarray(g[name]), np.asarray(e[name]))
    absent = next(p for p in ("tpu", "gpu") if not _has_platform(p))
    with pytest.raises(ValueError, match=f'device="{absent}": JAX sees no {absent} device'):
        stoker.Loader(embeddings, device=absent, **options)
    with pytest.raises(ValueError, match=r'device="cpu:7": JAX has \d+ cpu device'):
        stoker.Loader(embeddings, device="cpu:7", **options)
    with pytest.raises(ValueError, match='places torch or JAX batches: set output="torch" or '
                                         'output="jax"'):
        stoker.Loader(embeddings, batch_size=500, device="cpu")


def _has_platform(platform: str) -> bool:
    try:
        return bool(jax.devices(platform))
    except RuntimeError:
        return False


def test_jax_arrays_view_the_arrow_buffers() -> None:
    """The one Arrow-to-tensor path (epochs, RemoteLoader, to_tensors) gives jax.Arrays that
    point at the Arrow buffers: no copy. (Buffers from Arrow's allocator, 64-byte aligned like
    every buffer the engine assembles: JAX copies a misaligned one.)"""
    values = pa.array(range(4096), pa.float32())
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(range(4096 * 4), pa.int64()), 4)
    batch = pa.record_batch({"x": values, "v": vectors})
    columns = _core.to_tensors(batch, "jax")
    assert columns["x"].unsafe_buffer_pointer() == values.buffers()[1].address
    assert columns["v"].unsafe_buffer_pointer() == vectors.values.buffers()[1].address
    del batch, values, vectors  # the arrays own the buffers now
    np.testing.assert_array_equal(np.asarray(columns["x"]), np.arange(4096, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(columns["v"]).ravel(), np.arange(4096 * 4))


def test_global_batches_on_one_process(embeddings: Path) -> None:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    mesh = Mesh(np.array(jax.devices()), ("data",))
    sharding = NamedSharding(mesh, PartitionSpec("data"))
    loader = stoker.Loader(embeddings, batch_size=600, output="jax", seed=1,
                           **stoker.jax.process_shard())
    expected = list(stoker.Loader(embeddings, batch_size=600, seed=1))
    got = list(stoker.jax.global_batches(loader, sharding))
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g["embedding"].sharding == sharding
        np.testing.assert_array_equal(np.asarray(g["embedding"]), e["embedding"])


def test_global_batches_refuse_arrow(embeddings: Path) -> None:
    loader = stoker.Loader(embeddings, batch_size=600, output="arrow")
    with pytest.raises(ValueError, match='output="jax"'):
        next(stoker.jax.global_batches(loader, None))


# Two JAX processes on this machine (jax.distributed on loopback), two CPU devices each: each
# loads its rank's rows; the global array holds both ranks' batches in rank order.
_TWO_HOSTS = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_num_cpu_devices", 2)
jax.distributed.initialize(sys.argv[1], num_processes=2, process_id=int(sys.argv[2]))
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
import stoker, stoker.jax
mesh = Mesh(np.array(jax.devices()), ("data",))
sharding = NamedSharding(mesh, PartitionSpec("data"))
loader = stoker.Loader(sys.argv[3], batch_size=300, seed=5, output="jax",
                       **stoker.jax.process_shard())
local = [b["row_id"] for b in stoker.Loader(sys.argv[3], batch_size=300, seed=5,
                                            **stoker.jax.process_shard())]
shapes, mine = [], []
for batch, expected in zip(stoker.jax.global_batches(loader, sharding), local):
    shapes.append(list(batch["row_id"].shape))
    rows = np.concatenate([np.asarray(s.data) for s in sorted(
        batch["row_id"].addressable_shards, key=lambda s: s.index[0].start)])
    mine.append(bool(np.array_equal(rows, expected)))
print(json.dumps({"process": jax.process_index(), "count": jax.process_count(),
                  "shapes": shapes, "mine": mine, "batches": len(local)}))
"""


@pytest.mark.timeout(240)
def test_global_batches_across_two_processes(embeddings: Path) -> None:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    children = [subprocess.Popen([sys.executable, "-c", _TWO_HOSTS, f"127.0.0.1:{port}",
                                  str(i), str(embeddings)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for i in range(2)]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=200)
        assert child.returncode == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    assert sorted(r["process"] for r in reports) == [0, 1]
    for r in reports:
        assert r["count"] == 2 and r["batches"] > 1
        assert r["shapes"] == [[600]] * r["batches"]  # 2 processes x 300 rows
        assert all(r["mine"])  # this process's shards are exactly its rank's batch
