"""output="torchrec"'s engine side, without TorchRec: the parts of a KeyedJaggedTensor
(_core.to_kjt_parts and an epoch's use_kjt) against a reference built from the same rows with
pyarrow, their errors, and stoker.torchrec.Features' checks. TorchRec itself is tested in its
own environment (tests/torchrec/, `make test-torchrec`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

torch = pytest.importorskip("torch")

import stoker
from stoker import _core
from stoker.torchrec import Features


def reference(batch: pa.RecordBatch, keys: list[str], weights: dict[str, str],
              dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[int]]:
    """values, lengths, weights and length_per_key as TorchRec's layout defines them, from
    the rows by pyarrow: key-major, a null list empty, a one-hot column one id a row."""
    values, lengths, weight_values, per_key = [], [], [], []
    for key in keys:
        column = batch.column(key)
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            rows = [row if row is not None else [] for row in column.to_pylist()]
        else:
            rows = [[v] for v in column.to_pylist()]
        lengths += [len(r) for r in rows]
        flat = [v for r in rows for v in r]
        values += flat
        per_key.append(len(flat))
        if key in weights:
            weight_rows = batch.column(weights[key]).to_pylist()
            weight_values += [w for r in weight_rows if r is not None for w in r]
        else:
            weight_values += [1.0] * len(flat)
    return (np.array(values, dtype=dtype), np.array(lengths, dtype=np.int32),
            np.array(weight_values, dtype=np.float32) if weights else None, per_key)


def a_batch(rows: int = 50) -> pa.RecordBatch:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 6, rows)
    lists = [rng.integers(0, 1000, n).tolist() if i % 9 != 4 else None
             for i, n in enumerate(lengths)]
    weights = [None if row is None else rng.random(len(row)).tolist() for row in lists]
    return pa.record_batch({
        "a": pa.array(lists, pa.list_(pa.int32())),
        "a_w": pa.array(weights, pa.list_(pa.float32())),
        "b": pa.array(rng.integers(0, 50, rows), pa.int64()),
        "c": pa.array([[1, 2, 3]] * rows, pa.large_list(pa.int64())),
        "x": pa.array(rng.random(rows), pa.float64()),
        "y": pa.array(rng.integers(0, 9, rows), pa.int8()),
        "label": pa.array(rng.integers(0, 2, rows), pa.float32()),
    })


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_parts_are_torchrecs_layout_of_the_rows(dtype: str) -> None:
    batch = a_batch()
    spec = _core.KjtSpec(["a", "b", "c"], ["a_w", "", ""], ["x", "y"], ["label"], dtype)
    values, lengths, weights, per_key, offsets, dense, labels, stride = _core.to_kjt_parts(
        batch, spec)
    want_values, want_lengths, want_weights, want_per_key = reference(
        batch, ["a", "b", "c"], {"a": "a_w"}, np.dtype(dtype))
    assert stride == batch.num_rows
    assert values.dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(values.numpy(), want_values)
    assert lengths.dtype == torch.int32
    np.testing.assert_array_equal(lengths.numpy(), want_lengths)
    np.testing.assert_allclose(weights.numpy(), want_weights)
    assert per_key == want_per_key
    assert offsets == [0, *np.cumsum(want_per_key).tolist()]
    want_dense = np.stack([batch.column("x").to_numpy(), batch.column("y").to_numpy()], axis=1)
    np.testing.assert_allclose(dense.numpy(), want_dense.astype(np.float32))
    assert dense.shape == (batch.num_rows, 2)
    np.testing.assert_array_equal(labels.numpy(), batch.column("label").to_numpy())


def test_a_batch_of_empty_lists_has_no_ids() -> None:
    batch = pa.record_batch({"a": pa.array([[], None, []], pa.list_(pa.int64())),
                             "b": pa.array([[1], [], []], pa.list_(pa.int64()))})
    values, lengths, _, per_key, offsets, _, _, stride = _core.to_kjt_parts(
        batch, _core.KjtSpec(["a", "b"], [], [], [], "int64"))
    assert values.tolist() == [1] and lengths.tolist() == [0, 0, 0, 1, 0, 0]
    assert per_key == [0, 1] and offsets == [0, 0, 1] and stride == 3


def test_bad_jagged_data_is_an_error_naming_the_column() -> None:
    batch = a_batch(10)
    def parts(keys: list[str], weights: list[str] | None = None, dtype: str = "int64",
              extra: dict | None = None) -> None:
        b = batch if extra is None else pa.record_batch({**batch.to_pydict(), **extra})
        _core.to_kjt_parts(b, _core.KjtSpec(keys, weights or [], [], [], dtype))

    with pytest.raises(ValueError, match=r"column 'b'.*id 4294967296 does not fit.*int32"):
        parts(["b"], dtype="int32", extra={"b": pa.array([1 << 32] * 10, pa.int64())})
    with pytest.raises(ValueError, match="'n' holds null values inside its lists"):
        parts(["n"], extra={"n": pa.array([[1, None]] * 10, pa.list_(pa.int64()))})
    with pytest.raises(TypeError, match="'nested' has type list<item: list"):
        parts(["nested"], extra={"nested": pa.array([[[1]]] * 10, pa.list_(pa.list_(pa.int64())))})
    with pytest.raises(ValueError, match=r"weights 'w' of key 'a': row \d+ of the batch has \d "
                                         r"weights for \d ids"):
        parts(["a"], ["w"], extra={"w": pa.array([[1.0]] * 10, pa.list_(pa.float32()))})
    with pytest.raises(KeyError, match="key 'missing' is not a column"):
        parts(["missing"])
    with pytest.raises(TypeError, match="key 'x' has type double"):
        parts(["x"])


def write(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    rows = 3000
    hotness = [3, 1, 20]
    data = {"label": pa.array(rng.integers(0, 2, rows), pa.float32()),
            "dense0": pa.array(rng.random(rows), pa.float32()),
            "dense1": pa.array(rng.random(rows), pa.float32()),
            "onehot": pa.array(rng.integers(0, 100, rows), pa.int32())}
    for k, h in enumerate(hotness):
        lengths = rng.poisson(h, rows)
        data[f"C{k}"] = pa.array([rng.integers(0, 10_000, n, dtype=np.int32).tolist()
                                  for n in lengths], pa.list_(pa.int32()))
    path = tmp_path / "multihot"
    path.mkdir()
    table = pa.table(data)
    for f in range(3):
        pq.write_table(table.slice(f * 1000, 1000), path / f"part-{f}.parquet", row_group_size=300)
    return path


@pytest.mark.parametrize("shuffle", [True, False])
def test_an_epochs_parts_equal_the_reference_of_its_arrow_batches(tmp_path: Path,
                                                                   shuffle: bool) -> None:
    path = write(tmp_path)
    features = Features.of({"sparse": ["C0", "onehot", "C1", "C2"],
                            "dense": ["dense0", "dense1"], "labels": "label"})
    options = {"batch_size": 256, "shuffle": shuffle, "seed": 7, "shuffle_window": 900,
               "num_threads": 2}
    arrow_loader = stoker.Loader(path, output="arrow", **options)
    arrow_batches = list(arrow_loader)
    # The engine as output="torchrec" builds it (a Loader there needs TorchRec to import):
    # every list column ragged without a ragged op.
    engine = _core.Loader(arrow_loader._options, "torchrec")
    checked = features.check(arrow_loader.schema)
    assert checked.values_dtype == "int32"  # every key's ids are int32: no copy
    epoch = engine.start_epoch(0, [])
    epoch.use_kjt(checked.core())
    count = 0
    while True:
        while not epoch.wait_ready():
            pass
        parts = epoch.next()
        if parts is None:
            break
        batch = arrow_batches[count]
        values, lengths, weights, per_key, offsets, dense, labels, stride = parts
        assert offsets == [0, *np.cumsum(per_key).tolist()]
        want = reference(batch, list(features.sparse), {}, np.dtype("int32"))
        np.testing.assert_array_equal(values.numpy(), want[0])
        np.testing.assert_array_equal(lengths.numpy(), want[1])
        assert weights is None
        assert per_key == want[3] and stride == batch.num_rows
        np.testing.assert_array_equal(labels.numpy(), batch.column("label").to_numpy())
        np.testing.assert_array_equal(
            dense.numpy(), np.stack([batch.column("dense0").to_numpy(),
                                     batch.column("dense1").to_numpy()], axis=1))
        count += 1
    epoch.close()
    assert count == len(arrow_batches) == 12


def test_features_are_checked_against_the_schema(tmp_path: Path) -> None:
    schema = pa.schema([("a", pa.list_(pa.int64())), ("x", pa.float32()),
                        ("s", pa.list_(pa.string())), ("w", pa.list_(pa.float32()))])
    assert Features.of({"sparse": ["a"]}).check(schema).values_dtype == "int64"
    with pytest.raises(KeyError, match="sparse key 'nope' is not a column"):
        Features.of({"sparse": ["nope"]}).check(schema)
    with pytest.raises(TypeError, match="sparse key 's' has type list<item: string>"):
        Features.of({"sparse": ["s"]}).check(schema)
    with pytest.raises(ValueError, match="weights: 'x' is not one of the sparse keys"):
        Features.of({"sparse": ["a"], "weights": {"x": "w"}}).check(schema)
    with pytest.raises(ValueError, match="unknown key"):
        Features.of({"sparse": ["a"], "dens": ["x"]})
    with pytest.raises(ValueError, match='values_dtype must be "int32" or "int64"'):
        Features.of({"sparse": ["a"], "values_dtype": "int16"}).check(schema)
    with pytest.raises(ValueError, match='torchrec= applies to output="torchrec"'):
        stoker.Loader(tmp_path, batch_size=4, torchrec={"sparse": ["a"]})
