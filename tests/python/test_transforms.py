"""Transforms and filters run in the C++ workers; every op is checked against the same
computation done with pyarrow.compute or NumPy on the same data, nulls included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import ROWS
from stoker import _core

CORPUS = Path(__file__).parent.parent / "data" / "parquet-testing" / "data"
MASK64 = (1 << 64) - 1


def mix64(x: int) -> int:
    """SplitMix64's finalizer, as docs/transforms.md defines the hash."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def hash_text(value: bytes, buckets: int) -> int:
    h = 0xCBF29CE484222325
    for byte in value:
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return mix64(h) % buckets


def hash_int(value: int, buckets: int) -> int:
    return mix64(value & MASK64) % buckets


def read_all(source, **kwargs) -> pa.Table:
    """Every row the loader delivers, back in storage order (by row_id)."""
    loader = stoker.Loader(source, output="arrow", batch_size=kwargs.pop("batch_size", 997),
                           seed=3, **kwargs)
    return pa.Table.from_batches(list(loader), schema=loader.schema).sort_by("row_id")


def reference(source, columns) -> pa.Table:
    return pq.read_table(source, columns=columns).sort_by("row_id")


def assert_log1p(got: pa.ChunkedArray, x: pa.ChunkedArray) -> None:
    """Stoker's own log1p (docs/determinism.md) against NumPy's, which is the platform's libm:
    the same nulls, and values within 1 ULP of np.log1p in float64 (in float32: of its float64
    result rounded to float32)."""
    assert got.type == x.type
    assert got.is_null().equals(x.is_null())
    want = np.log1p(x.drop_null().to_numpy().astype(np.float64))
    np.testing.assert_array_max_ulp(got.drop_null().to_numpy(),
                                    want.astype(x.type.to_pandas_dtype()), maxulp=1)


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("lists")
    rng = np.random.default_rng(0)
    rows = []
    for i in range(2000):
        n = int(rng.integers(0, 9))
        rows.append(None if i % 17 == 0 else [float(i + k) for k in range(n)])
    table = pa.table({"row_id": np.arange(2000, dtype=np.int64),
                      "history": pa.array(rows, pa.list_(pa.float32()))})
    pq.write_table(table, out / "lists.parquet", row_group_size=300)
    return out


# --- each op against pyarrow.compute / NumPy -------------------------------------------------


def test_cast(criteo: Path) -> None:
    got = read_all(criteo, columns=["row_id", "C1"],
                   transforms=[{"op": "cast", "column": "C1", "dtype": "int32"}])
    want = reference(criteo, ["row_id", "C1"])
    assert got["C1"].type == pa.int32()
    assert got["C1"].equals(pc.cast(want["C1"], pa.int32()))


def test_cast_overflow_is_an_error_naming_op_and_column(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=100,
                           transforms=[{"op": "cast", "column": "row_id", "dtype": "int8"}])
    with pytest.raises(ValueError, match=r"transform 0 \(cast\) on column 'row_id'"):
        list(loader)


@pytest.mark.parametrize("output", ["arrow", "numpy"])
def test_fill_null(mixed: Path, output: str) -> None:
    spec = [{"op": "fill_null", "column": "maybe", "value": -1},
            {"op": "fill_null", "column": "name", "value": "?"}] if output == "arrow" else [
            {"op": "fill_null", "column": "maybe", "value": -1}]
    columns = ["row_id", "maybe"] + (["name"] if output == "arrow" else [])
    want = reference(mixed, columns)
    if output == "arrow":
        got = read_all(mixed, columns=columns, transforms=spec)
        assert got["maybe"].equals(pc.fill_null(want["maybe"], -1.0))
        assert got["maybe"].null_count == 0
    else:
        expected = pc.fill_null(want["maybe"], -1.0).to_numpy()
        for batch in stoker.Loader(mixed, columns=columns, transforms=spec, batch_size=64):
            np.testing.assert_array_equal(batch["maybe"], expected[batch["row_id"]])


def test_clip_keeps_nulls(mixed: Path, criteo: Path) -> None:
    got = read_all(criteo, columns=["row_id", "I1"],
                   transforms=[{"op": "clip", "column": "I1", "min": 1.0, "max": 5.0}])
    want = reference(criteo, ["row_id", "I1"])
    np.testing.assert_array_equal(got["I1"].to_numpy(),
                                  np.clip(want["I1"].to_numpy(), np.float32(1), np.float32(5)))
    nulls = read_all(mixed, columns=["row_id", "maybe"],
                     transforms=[{"op": "clip", "column": "maybe", "max": 100}])
    ref = reference(mixed, ["row_id", "maybe"])["maybe"]
    assert nulls["maybe"].equals(pc.min_element_wise(ref, 100.0, skip_nulls=False))


def test_log1p_and_standardize(criteo: Path) -> None:
    got = read_all(criteo, columns=["row_id", "I1", "I2", "C3"], transforms=[
        {"op": "log1p", "column": "I1"},
        {"op": "standardize", "column": "I2", "mean": 1.5, "std": 2.5},
        {"op": "log1p", "column": "C3"},
    ])
    want = reference(criteo, ["row_id", "I1", "I2", "C3"])
    assert_log1p(got["I1"], want["I1"])
    f32 = pa.float32()
    expected = pc.divide(pc.subtract(want["I2"], pa.scalar(1.5, f32)), pa.scalar(2.5, f32))
    assert got["I2"].equals(expected)
    assert got["C3"].type == f32  # integers become float32
    assert_log1p(got["C3"], pc.cast(want["C3"], f32))


def test_bucketize(criteo: Path) -> None:
    boundaries = [0.5, 1.0, 4.0, 20.0]
    got = read_all(criteo, columns=["row_id", "I4"],
                   transforms=[{"op": "bucketize", "column": "I4", "boundaries": boundaries}])
    want = reference(criteo, ["row_id", "I4"])["I4"].to_numpy()
    expected = np.searchsorted(np.array(boundaries), want.astype(np.float64), side="right")
    assert got["I4"].type == pa.int32()
    np.testing.assert_array_equal(got["I4"].to_numpy(), expected.astype(np.int32))


def test_hash_integers_and_strings(criteo: Path, mixed: Path) -> None:
    got = read_all(criteo, columns=["row_id", "C5"],
                   transforms=[{"op": "hash", "column": "C5", "num_buckets": 1000}])
    want = reference(criteo, ["row_id", "C5"])["C5"].to_pylist()
    assert got["C5"].to_pylist() == [hash_int(v, 1000) for v in want]

    got = read_all(mixed, columns=["row_id", "name"],
                   transforms=[{"op": "hash", "column": "name", "num_buckets": 97}])
    names = reference(mixed, ["row_id", "name"])["name"].to_pylist()
    assert got["name"].to_pylist() == [hash_text(n.encode(), 97) for n in names]


def test_vocabulary_strings_and_integers(tmp_path: Path, mixed: Path, criteo: Path) -> None:
    words = tmp_path / "names.txt"
    words.write_text("row3\nrow1\nrow999\n")
    got = read_all(mixed, columns=["row_id", "name"],
                   transforms=[{"op": "vocabulary", "column": "name", "path": str(words),
                                "default": -1}])
    index = {"row3": 0, "row1": 1, "row999": 2}
    names = reference(mixed, ["row_id", "name"])["name"].to_pylist()
    assert got["name"].to_pylist() == [index.get(n, -1) for n in names]

    ids = tmp_path / "ids.txt"
    ids.write_text("7\n3\n0\n")
    got = read_all(criteo, columns=["row_id", "C1"],
                   transforms=[{"op": "vocabulary", "column": "C1", "path": str(ids)}])
    values = reference(criteo, ["row_id", "C1"])["C1"].to_pylist()
    assert got["C1"].to_pylist() == [{7: 0, 3: 1, 0: 2}.get(v, 0) for v in values]


def test_stack_rename_drop(criteo: Path) -> None:
    dense = [f"I{i}" for i in range(1, 14)]
    loader = stoker.Loader(criteo, columns=["row_id", "label", *dense], batch_size=500, seed=1,
                           transforms=[{"op": "stack", "columns": dense, "output": "dense"},
                                       {"op": "rename", "column": "label", "to": "y"},
                                       {"op": "drop", "columns": ["row_id"]}])
    assert loader.schema.names == ["y", "dense"]
    assert loader.schema.field("dense").type == pa.list_(pa.float32(), 13)
    table = reference(criteo, ["row_id", "label", *dense])
    matrix = np.stack([table[c].to_numpy() for c in dense], axis=1)
    keyed = stoker.Loader(criteo, columns=["row_id", *dense], batch_size=500, seed=1,
                          transforms=[{"op": "stack", "columns": dense, "output": "dense"}])
    for batch, with_ids in zip(loader, keyed):
        np.testing.assert_array_equal(batch["dense"], matrix[with_ids["row_id"]])
        np.testing.assert_array_equal(batch["y"], table["label"].to_numpy()[with_ids["row_id"]])


def test_pad_variable_lists(lists: Path) -> None:
    source = reference(lists, ["row_id", "history"])["history"].to_pylist()
    for batch in stoker.Loader(lists, batch_size=128, seed=2,
                               transforms=[{"op": "pad", "column": "history", "length": 5,
                                            "value": -1}]):
        assert batch["history"].shape == (len(batch["row_id"]), 5)
        for row, padded, length in zip(batch["row_id"], batch["history"],
                                       batch["history_length"]):
            values = (source[row] or [])[:5]
            assert length == len(values)
            np.testing.assert_array_equal(padded, values + [-1.0] * (5 - len(values)))


@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_ragged_values_and_offsets(lists: Path, output: str) -> None:
    if output == "torch":
        pytest.importorskip("torch")
    source = reference(lists, ["row_id", "history"])["history"].to_pylist()
    spec = [{"op": "ragged", "column": "history"}]  # a null list arrives as an empty one
    for batch in stoker.Loader(lists, batch_size=100, seed=5, output=output, transforms=spec):
        values, offsets = np.asarray(batch["history"]), np.asarray(batch["history_offsets"])
        ids = np.asarray(batch["row_id"])
        assert offsets[0] == 0 and len(offsets) == len(ids) + 1
        for k, row in enumerate(ids):
            np.testing.assert_array_equal(values[offsets[k]:offsets[k + 1]], source[row] or [])


def test_variable_lists_need_pad_or_ragged_for_tensors(lists: Path) -> None:
    with pytest.raises(TypeError, match="'history' has type list<element: float>"):
        stoker.Loader(lists, batch_size=10)


# --- the corpus -------------------------------------------------------------------------------


def test_ops_on_corpus_files() -> None:
    path = CORPUS / "alltypes_plain.parquet"
    table = pq.read_table(path)
    loader = stoker.Loader(path, batch_size=3, shuffle=False, output="arrow", transforms=[
        {"op": "log1p", "column": "double_col"},
        {"op": "hash", "column": "string_col", "num_buckets": 10},
        {"op": "bucketize", "column": "int_col", "boundaries": [0.5]},
        {"op": "cast", "column": "bigint_col", "dtype": "float64"},
    ])
    got = pa.Table.from_batches(list(loader))
    assert_log1p(got["double_col"], table["double_col"])
    assert got["string_col"].to_pylist() == [hash_text(s, 10)
                                             for s in table["string_col"].to_pylist()]
    assert got["int_col"].to_pylist() == [int(v >= 0.5) for v in table["int_col"].to_pylist()]
    assert got["bigint_col"].equals(pc.cast(table["bigint_col"], pa.float64()))

    nulls = CORPUS / "int32_with_null_pages.parquet"
    raw = pq.read_table(nulls)["int32_field"]
    batches = stoker.Loader(nulls, batch_size=1000, shuffle=False,
                            transforms=[{"op": "fill_null", "column": "int32_field",
                                         "value": 0}])
    got = np.concatenate([b["int32_field"] for b in batches])
    np.testing.assert_array_equal(got, pc.fill_null(raw, 0).to_numpy()[:len(got)])


# --- filters ----------------------------------------------------------------------------------


def test_filter_keeps_exactly_the_matching_rows(criteo: Path) -> None:
    expr = (pc.field("label") > 0.5) & (pc.field("I2") < 3.0)
    loader = stoker.Loader(criteo, columns=["row_id", "I1"], batch_size=256, seed=4, filter=expr)
    batches = list(loader)
    assert all(len(b["row_id"]) == 256 for b in batches[:-1])
    got = np.sort(np.concatenate([b["row_id"] for b in batches]))
    want = pq.read_table(criteo, columns=["row_id"], filters=expr)["row_id"].to_numpy()
    np.testing.assert_array_equal(got, np.sort(want))
    assert loader.schema.names == ["row_id", "I1"]  # filter-only columns are not delivered
    assert loader.dataset_info()["rows"] == len(want)


def test_rows_the_filter_drops_are_counted_once_per_decode(criteo: Path,
                                                           tmp_path: Path) -> None:
    expr = pc.field("label") > 0.5  # both labels in every row group: nothing is pruned
    want = pq.read_table(criteo, columns=["row_id"], filters=expr).num_rows
    total = pq.ParquetDataset(criteo).read(columns=["row_id"]).num_rows
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=256, filter=expr,
                           cache_dir=tmp_path / "cache")
    assert sum(len(b["row_id"]) for b in loader) == want
    stats = loader.stats()
    assert stats["row_groups_pruned"] == 0
    assert stats["rows_filtered"] == total - want > 0
    list(loader)  # the second epoch reads every unit from the cache: filtered when stored
    assert loader.stats()["cache_hits"] > 0
    assert loader.stats()["rows_filtered"] == total - want


def test_filter_is_deterministic_and_resumes_exactly(criteo: Path) -> None:
    expr = pc.field("C1") != 0
    kw = {"columns": ["row_id"], "batch_size": 300, "seed": 8, "filter": expr}
    one = [b["row_id"] for b in stoker.Loader(criteo, num_threads=1, **kw)]
    many = [b["row_id"] for b in stoker.Loader(criteo, num_threads=4, **kw)]
    assert all(np.array_equal(a, b) for a, b in zip(one, many)) and len(one) == len(many)

    first = stoker.Loader(criteo, **kw)
    it = iter(first)
    head = [next(it)["row_id"] for _ in range(7)]
    state = json.loads(json.dumps(first.state_dict()))
    second = stoker.Loader(criteo, num_threads=2, **kw)
    second.load_state_dict(state)
    rest = [b["row_id"] for b in second]
    assert all(np.array_equal(a, b) for a, b in zip(head + rest, one))

    other = stoker.Loader(criteo, **dict(kw, filter=pc.field("C1") != 1))
    with pytest.raises(ValueError, match="the filter differs"):
        other.load_state_dict(state)


def test_statistics_prune_row_groups_unread(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=100, shuffle=False,
                           filter=pc.field("row_id") < 1000)
    ids = np.concatenate([b["row_id"] for b in loader])
    np.testing.assert_array_equal(ids, np.arange(1000))
    groups = sum(pq.ParquetFile(f).metadata.num_row_groups for f in criteo.glob("*.parquet"))
    stats = loader.stats()
    assert stats["row_groups_pruned"] == groups - 1
    assert stats["units_read"] == 2  # the counting pass and the epoch each read one row group


def test_filter_matching_nothing_gives_an_empty_epoch(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=10,
                           filter=pc.field("row_id") < 0)
    assert len(loader) == 0 and list(loader) == []


# --- batch_transform --------------------------------------------------------------------------


def test_batch_transform_runs_off_the_training_thread(criteo: Path) -> None:
    import threading

    threads = set()

    def double(batch: dict) -> dict:
        threads.add(threading.current_thread().name)
        return {"twice": batch["row_id"] * 2, "row_id": batch["row_id"]}

    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=1000, seed=1,
                           batch_transform=double)
    batches = list(loader)
    assert len(batches) == ROWS // 1000
    for b in batches:
        np.testing.assert_array_equal(b["twice"], b["row_id"] * 2)
    assert threads == {"stoker-batch-transform"}
    state = loader.state_dict()
    assert state["epoch"] == 1 and state["rounds"] == []


def test_batch_transform_errors_reach_the_consumer(criteo: Path) -> None:
    def broken(batch: dict) -> dict:
        raise RuntimeError("feature engineering failed")

    loader = stoker.Loader(criteo, batch_size=1000, batch_transform=broken)
    with pytest.raises(RuntimeError, match="feature engineering failed"):
        list(loader)


# --- the spec as data -------------------------------------------------------------------------


def test_spec_has_a_canonical_form_and_digest(criteo: Path) -> None:
    spec = [{"op": "standardize", "column": "I1", "std": 2, "mean": 1},
            {"op": "hash", "column": "C1", "num_buckets": 10}]
    info = stoker.Loader(criteo, batch_size=10, transforms=spec).dataset_info()
    assert info["transform_canonical"] == (
        '[{"op":"standardize","column":"I1","mean":1,"std":2},'
        '{"op":"hash","column":"C1","num_buckets":10}]')
    same = stoker.Loader(criteo, batch_size=10,
                         transforms=[dict(reversed(list(s.items()))) for s in spec])
    assert same.dataset_info()["transform_digest"] == info["transform_digest"]
    spec[1]["num_buckets"] = 11
    other = stoker.Loader(criteo, batch_size=10, transforms=spec)
    assert other.dataset_info()["transform_digest"] != info["transform_digest"]


# --- validation at construction ---------------------------------------------------------------


@pytest.mark.parametrize("spec, error, message", [
    ({"op": "log1p", "column": "nope"}, KeyError, r"transform 0 \(log1p\): column 'nope'"),
    ({"op": "log1p", "column": "name"}, TypeError,
     r"transform 0 \(log1p\): column 'name' has type string"),
    ({"op": "standardize", "column": "row_id", "mean": 0, "std": 0}, ValueError, "std > 0"),
    ({"op": "bucketize", "column": "row_id", "boundaries": [3, 1]}, ValueError,
     "strictly increasing"),
    ({"op": "hash", "column": "name", "num_buckets": 0}, ValueError, "num_buckets must be >= 1"),
    ({"op": "vocabulary", "column": "name", "path": "/no/such/vocab.txt"}, FileNotFoundError,
     r"transform 0 \(vocabulary\): vocabulary file '/no/such/vocab.txt'"),
    ({"op": "explode", "column": "name"}, ValueError, "unknown op 'explode'"),
    ({"op": "log1p", "column": "row_id", "base": 2}, ValueError, "unknown key"),
    ({"op": "stack", "columns": ["row_id"], "output": "name"}, ValueError, "already exists"),
    ({"op": "cast", "column": "row_id", "dtype": "complex"}, ValueError, "dtype 'complex'"),
    ({"op": "clip", "column": "row_id", "min": 1.5}, ValueError, "not representable"),
])
def test_bad_specs_fail_at_construction_naming_op_and_column(mixed: Path, spec: dict,
                                                              error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        stoker.Loader(mixed, batch_size=10, output="arrow", transforms=[spec])


@pytest.mark.parametrize("transforms, error, message", [
    ({"op": "log1p", "column": "x"}, TypeError, "transforms must be a list of dicts"),
    ("log1p", TypeError, "transforms must be a list of dicts"),
    ([["log1p", "x"]], TypeError, r"transform 0: expected a dict with an 'op' key, got \['log1p'"),
    ([{"column": "x"}], TypeError, "transform 0: expected a dict with an 'op' key"),
    ([{"op": 3}], ValueError, "transform 0: unknown op 3; the ops are cast, fill_null"),
    ([{"op": "log1p", "column": "x"}, {"op": "clip"}], ValueError,
     r"transform 1 \(clip\): missing column"),
    ([{"op": "log1p", "column": "x", "base": 2, "alpha": 1}], ValueError,
     r"transform 0 \(log1p\): unknown key\(s\) alpha, base; it takes column$"),
    ([{"op": "log1p", "column": 7}], TypeError,
     r"transform 0 \(log1p\): column must be a column name, got 7"),
    ([{"op": "drop", "columns": "x"}], TypeError,
     r"transform 0 \(drop\): columns must be a list of names, got 'x'"),
    ([{"op": "drop", "columns": ["x", 1]}], TypeError, "columns must be a list of names"),
    ([{"op": "drop", "columns": 5}], TypeError, "columns must be a list of names, got 5"),
    ([{"op": "clip", "column": "x", "min": "1"}], TypeError,
     r"transform 0 \(clip\): min must be a number, got '1'"),
    ([{"op": "clip", "column": "x", "max": True}], TypeError, "max must be a number, got True"),
    ([{"op": "hash", "column": "x", "num_buckets": 2.0}], TypeError,
     r"transform 0 \(hash\): num_buckets must be an int, got 2.0"),
    ([{"op": "hash", "column": "x", "num_buckets": 2**70}], TypeError,
     "num_buckets must be an int"),
    ([{"op": "bucketize", "column": "x", "boundaries": [1, "2"]}], TypeError,
     "boundaries must be a number, got '2'"),
    ([{"op": "rename", "column": "x", "to": ["y"]}], TypeError,
     r"transform 0 \(rename\): to must be a column name"),
    ([{"op": "vocabulary", "column": "x", "path": 3}], TypeError, "expected str, bytes"),
])
def test_the_spec_shape_is_checked_in_one_place(transforms: object, error: type,
                                                message: str) -> None:
    """The spec's shape (its ops, their keys, the kinds of their values) is checked by the
    engine's parser, _core.transforms_from_spec, against the ops' own descriptors; errors name
    the op's position, its name and the key."""
    with pytest.raises(error, match=message):
        _core.transforms_from_spec(transforms)


def test_the_spec_parser_reads_every_key_into_the_op(tmp_path: Path) -> None:
    """Singular keys stand for their list key, 'to' is the output, 'min'/'max' the bounds,
    paths are os.PathLike, omitted keys keep the op's defaults, and the caller's dicts are not
    changed."""
    spec = [{"op": "drop", "column": "a"}, {"op": "rename", "column": "b", "to": "c"},
            {"op": "clip", "column": "d", "min": 1, "max": 2.5},
            {"op": "vocabulary", "column": "e", "path": tmp_path / "v.txt", "default": 3},
            {"op": "fill_null", "column": "f", "value": "none"},
            {"op": "fill_null", "column": "g", "value": 4}, {"op": "log1p", "column": "h"}]
    before = [dict(op) for op in spec]
    drop, rename, clip, vocabulary, text, number, log1p = _core.transforms_from_spec(spec)
    assert spec == before
    assert (drop.kind, drop.columns) == ("drop", ["a"])
    assert (rename.columns, rename.output) == (["b"], "c")
    assert (clip.low, clip.high) == (1.0, 2.5)
    assert (vocabulary.path, vocabulary.default_id) == (str(tmp_path / "v.txt"), 3)
    assert (text.is_text, text.text) == (True, "none")
    assert (number.is_text, number.number) == (False, 4.0)
    assert (log1p.low, log1p.high, log1p.std) == (float("-inf"), float("inf"), 1.0)
    assert _core.transforms_from_spec(None) == [] and _core.transforms_from_spec(()) == []


def test_bad_filters_fail_at_construction(criteo: Path) -> None:
    with pytest.raises(ValueError, match="nope"):
        stoker.Loader(criteo, batch_size=10, filter=pc.field("nope") > 1)
    with pytest.raises(TypeError, match="not a boolean"):
        stoker.Loader(criteo, batch_size=10, filter=pc.field("I1") + 1)
    with pytest.raises(TypeError, match="pyarrow.compute expression"):
        stoker.Loader(criteo, batch_size=10, filter="label > 0")
