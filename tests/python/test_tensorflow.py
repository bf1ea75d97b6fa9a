"""output="tensorflow" and stoker.tf.dataset: tf.Tensors over the engine's buffers, a
tf.data.Dataset whose spec comes from the schema, Keras model.fit and tf.distribute on it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

tf = pytest.importorskip("tensorflow")
import stoker
import stoker.tf
from stoker import _core


@pytest.fixture(scope="module")
def clicks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Numbers, a bool, a fixed-size vector and a variable-length list (made ragged)."""
    out = tmp_path_factory.mktemp("clicks")
    rng = np.random.default_rng(0)
    n = 2000
    lengths = rng.integers(0, 6, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    table = pa.table({
        "label": rng.random(n, dtype=np.float32),
        "count": np.arange(n, dtype=np.int64),
        "flag": pa.array(np.arange(n) % 2 == 0),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 4,
                                                                       dtype=np.float32)), 4),
        "items": pa.ListArray.from_arrays(pa.array(offsets),
                                          pa.array(np.arange(offsets[-1], dtype=np.int64))),
    })
    pq.write_table(table, out / "clicks.parquet", row_group_size=500)
    return out


RAGGED = [{"op": "ragged", "column": "items"}]


def test_element_spec_comes_from_the_schema(clicks: Path) -> None:
    loader = stoker.Loader(clicks, batch_size=256, transforms=RAGGED, output="tensorflow")
    spec = stoker.tf.element_spec(loader.schema)
    assert spec["label"] == tf.TensorSpec([None], tf.float32)
    assert spec["count"] == tf.TensorSpec([None], tf.int64)
    assert spec["flag"] == tf.TensorSpec([None], tf.bool)
    assert spec["vector"] == tf.TensorSpec([None, 4], tf.float32)
    assert spec["items"] == tf.RaggedTensorSpec([None, None], tf.int64, 1, tf.int64)


def test_dataset_delivers_the_loaders_batches(clicks: Path) -> None:
    options = {"batch_size": 256, "seed": 4, "transforms": RAGGED, "num_threads": 2}
    expected = list(stoker.Loader(clicks, **options))  # numpy: values and items_offsets
    dataset = stoker.tf.dataset(stoker.Loader(clicks, output="tensorflow", **options))
    got = list(dataset)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        for name in ("label", "count", "flag", "vector"):
            np.testing.assert_array_equal(g[name].numpy(), e[name], err_msg=name)
        assert isinstance(g["items"], tf.RaggedTensor)
        np.testing.assert_array_equal(g["items"].flat_values.numpy(), e["items"])
        np.testing.assert_array_equal(g["items"].row_splits.numpy(), e["items_offsets"])


def test_each_pass_is_the_next_epoch(clicks: Path) -> None:
    options = {"batch_size": 500, "seed": 4, "columns": ["count"]}
    reference = stoker.Loader(clicks, **options)
    epochs = [[b["count"] for b in reference] for _ in range(2)]
    dataset = stoker.tf.dataset(stoker.Loader(clicks, output="tensorflow", **options))
    for epoch in epochs:
        got = [b["count"].numpy() for b in dataset]
        assert len(got) == len(epoch)
        for g, e in zip(got, epoch):
            np.testing.assert_array_equal(g, e)
    assert not np.array_equal(epochs[0][0], epochs[1][0])  # the epochs differ


def test_tensorflow_tensors_view_the_arrow_buffers() -> None:
    values = pa.array(range(4096), pa.float32())  # Arrow's allocator: 64-byte aligned
    columns = _core.to_tensors(pa.record_batch({"x": values}), "tensorflow")
    assert isinstance(columns["x"], tf.Tensor)
    # TensorFlow shows no address; torch reads one from the tensor's own DLPack export.
    torch = pytest.importorskip("torch")
    view = torch.utils.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(columns["x"]))
    assert view.data_ptr() == values.buffers()[1].address


def test_numpy_loaders_work_too_and_arrow_is_refused(clicks: Path) -> None:
    loader = stoker.Loader(clicks, batch_size=500, columns=["label", "count"])
    assert sum(1 for _ in stoker.tf.dataset(loader)) == 4
    with pytest.raises(ValueError, match='output="tensorflow"'):
        stoker.tf.dataset(stoker.Loader(clicks, batch_size=500, output="arrow"))
    with pytest.raises(ValueError, match="no column 'nope'"):
        stoker.tf.dataset(loader, label="nope")


def test_keras_fit_and_tf_distribute(clicks: Path) -> None:
    keras = tf.keras
    loader = stoker.Loader(clicks, batch_size=250, columns=["label", "vector"], seed=1,
                           output="tensorflow")
    dataset = stoker.tf.dataset(loader, label="label")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        inputs = {"vector": keras.Input(shape=(4,), name="vector")}
        model = keras.Model(inputs, keras.layers.Dense(1)(inputs["vector"]))
        model.compile(optimizer="sgd", loss="mse")
    history = model.fit(dataset, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert all(np.isfinite(history.history["loss"]))
    assert loader.state_dict()["epoch"] == 2  # each Keras epoch read one loader epoch


def test_a_pass_left_early_is_read_again_from_its_start(clicks: Path) -> None:
    options = {"batch_size": 500, "seed": 4, "columns": ["count"]}
    first_epoch = [b["count"] for b in stoker.Loader(clicks, **options)]
    dataset = stoker.tf.dataset(stoker.Loader(clicks, output="tensorflow", **options))
    for i, _ in enumerate(dataset):  # a look at two batches, then the pass is dropped
        if i == 1:
            break
    got = [b["count"].numpy() for b in dataset]
    assert len(got) == len(first_epoch)
    for g, e in zip(got, first_epoch):
        np.testing.assert_array_equal(g, e)


def test_a_remote_loader_feeds_tf_data_and_keras(criteo: Path, servers) -> None:
    """TensorFlow and Keras over `stoker serve`: the same batches as over a local loader."""
    import stoker.keras
    from stoker_devtools.serve import COLUMNS, OPTIONS

    location = servers().location
    expected = list(stoker.Loader(criteo, columns=COLUMNS, **OPTIONS))
    remote = stoker.RemoteLoader([location], output="tensorflow", **OPTIONS)
    got = list(stoker.tf.dataset(remote, label="label"))
    assert len(got) == len(expected)
    for (features, label), e in zip(got, expected):
        np.testing.assert_array_equal(label.numpy(), e["label"])
        for name in ("row_id", "I1", "C1"):
            np.testing.assert_array_equal(features[name].numpy(), e[name], err_msg=name)
    data = stoker.keras.PyDataset(stoker.RemoteLoader([location], **OPTIONS), label="label",
                                  features=["I1"])
    assert len(data) == len(expected)
    for i in range(len(data)):  # in order: a PyDataset's index is not a position
        x, y = data[i]
        np.testing.assert_array_equal(y, expected[i]["label"])
        np.testing.assert_array_equal(x["I1"], expected[i]["I1"])


UNALIGNED = """
import numpy as np, pyarrow as pa, tensorflow as tf
from stoker import _core

raw = (np.arange(1024 + 128) % 7).astype(np.uint8)  # small values: no overflow when doubled
start = (64 - raw.ctypes.data % 64) % 64 + 8  # 8 bytes past a 64-byte boundary, as Flight gives
columns = {"x": pa.int32(), "v": pa.list_(pa.int16(), 3)}
for name, kind in columns.items():
    values = pa.py_buffer(raw[start:start + 600])
    assert values.address % 64 == 8
    if pa.types.is_fixed_size_list(kind):
        array = pa.FixedSizeListArray.from_arrays(
            pa.Array.from_buffers(pa.int16(), 300, [None, values]), 3)
    else:
        array = pa.Array.from_buffers(kind, 150, [None, values])
    tensor = _core.to_tensors(pa.record_batch([array], names=[name]), "tensorflow")[name]
    np.testing.assert_array_equal((tensor * 2).numpy(), np.asarray(array.to_pylist()) * 2)
print("ok")
"""


def test_unaligned_buffers_become_tensors_tensorflow_can_use() -> None:
    """TensorFlow aborts the process on an op over data not 64-byte aligned; a batch received
    from a server has 8-byte aligned buffers: the conversion copies those (in a child
    process, so a regression fails this test rather than ending the run)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", UNALIGNED], capture_output=True, text=True,
                            check=False,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]
