"""Petastorm datasets read as they are (docs/petastorm.md): the stored Unischema through the
restricted unpickler, every codec decoded in the C++ workers equal to what Petastorm's own
make_reader decodes, the drop-in reader API and its torch loaders.

tests/data/petastorm was written by Petastorm's own code (tests/petastorm/make_dataset.py, run
in Petastorm's environment): each value encoded by its field's codec, the Unischema stored by
Petastorm's dataset_metadata helpers, and expected.npz holding every row as Petastorm's
make_reader decoded it. With Petastorm's environment at hand (.bench-petastorm-venv, built by
`make bench`), the live tests write a fresh dataset with it and run Petastorm's hello-world
examples through the compat layer."""

from __future__ import annotations

import inspect
import itertools
import os
import pickle
import shutil
import subprocess
import sys
import warnings
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
import stoker.petastorm as sp
from stoker.petastorm import pytorch as sp_torch

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "petastorm"
PETASTORM_PYTHON = ROOT / ".bench-petastorm-venv" / "bin" / "python"
CODEC_FIELDS = {
    "scalar": ["id", "weight", "name"],
    "ndarray": ["matrix", "fortran", "ragged", "cube"],
    "compressed_ndarray": ["packed", "packed_ragged"],
    "png": ["rgb_png", "grey_png"],
    "jpeg": ["rgb_jpeg", "grey_jpeg"],
}
ALL_FIELDS = [f for fields in CODEC_FIELDS.values() for f in fields]


def _unequal_rows(dataset: Path, expected_npz: Path, fields: list[str]) -> tuple[int, dict]:
    """(rows read, {field: ids whose value differs from Petastorm's})."""
    expected = np.load(expected_npz)
    bad: dict[str, list[int]] = {}
    rows = 0
    with sp.make_reader(dataset.as_uri(), schema_fields=["id", *fields],
                        shuffle_row_groups=False, workers_count=2) as reader:
        for row in reader:
            rows += 1
            for name in fields:
                got, want = np.asarray(getattr(row, name)), expected[f"{name}/{int(row.id)}"]
                if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(
                        got, want):
                    bad.setdefault(name, []).append(int(row.id))
    return rows, bad


# --- the restricted unpickler ----------------------------------------------------------------


class _RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _with_stored_schema(tmp_path: Path, pickled: bytes) -> Path:
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    table = pa.table({"x": pa.array([1, 2, 3], pa.int64())})
    pq.write_table(table, dataset / "part-0.parquet")
    schema = table.schema.with_metadata({sp.UNISCHEMA_KEY: pickled})
    pq.write_metadata(schema, dataset / "_common_metadata")
    return dataset


@pytest.mark.parametrize("payload, refused", [
    ("os.system", "posix.system"),
    ("eval", "builtins.eval"),  # Petastorm's own unpickler allows every builtins name
])
def test_a_malicious_stored_schema_is_refused_and_nothing_runs(tmp_path: Path, payload: str,
                                                               refused: str) -> None:
    marker = tmp_path / "marker"
    if payload == "os.system":
        pickled = pickle.dumps(_RunsACommand(marker))
    else:
        class Evaluates:
            def __reduce__(self):
                return (eval, (f"open({str(marker)!r}, 'w')",))
        pickled = pickle.dumps(Evaluates())
    dataset = _with_stored_schema(tmp_path, pickled)
    for read in (sp.get_schema_from_dataset_url,
                 lambda url: sp.make_reader(url),
                 lambda url: sp.make_loader(url, batch_size=2)):
        with pytest.raises(ValueError, match=f"refers to {refused}.*refuses to load it"):
            read(dataset.as_uri())
        assert not marker.exists()


def test_a_pickle_of_something_else_is_refused_naming_what_it_holds() -> None:
    with pytest.raises(ValueError, match="holds a OrderedDict, not a Unischema"):
        sp.load_unischema(pickle.dumps(__import__("collections").OrderedDict()))
    with pytest.raises(ValueError, match="not a readable pickle"):
        sp.load_unischema(pickle.dumps(sp.Unischema("s", []))[:-5])


def test_the_unischema_petastorm_stored_loads_into_stokers_definitions() -> None:
    schema = sp.get_schema_from_dataset_url(FIXTURE / "dataset")
    assert list(schema.fields) == ALL_FIELDS
    assert schema.matrix == sp.UnischemaField("matrix", np.float32, (4, 3), None, False)
    assert schema.cube.shape == (None, 4, None) and schema.cube.numpy_dtype is np.uint8
    assert isinstance(schema.packed.codec, sp.CompressedNdarrayCodec)
    assert isinstance(schema.ragged.codec, sp.NdarrayCodec)
    assert schema.rgb_jpeg.codec.image_codec == "jpeg" and schema.rgb_jpeg.codec._quality == 90
    assert repr(schema.id.codec) == "ScalarCodec(IntegerType())"
    assert sp.loader_codecs(schema, ["grey_jpeg", "cube", "id"]) == [
        {"column": "cube", "codec": "ndarray", "dtype": "uint8", "shape": [-1, 4, -1]},
        {"column": "grey_jpeg", "codec": "jpeg", "dtype": "uint8", "shape": [-1, -1]},
    ]


def test_protocol_0_and_legacy_package_names_load(tmp_path: Path) -> None:
    schema = sp.Unischema("Old", [sp.UnischemaField("a", np.uint8, (2,), sp.NdarrayCodec(),
                                                    False)])
    # Stoker's classes pickle under Stoker's module names: rewrite them to what Petastorm wrote
    # (protocol 0 is text), once under today's package and once under its pre-rename one.
    for package in ("petastorm", "av.ml.dataset_toolkit"):
        text = pickle.dumps(schema, protocol=0)
        text = text.replace(b"stoker.petastorm._unischema\nUnischemaField",
                            package.encode() + b".unischema\nUnischemaField")
        text = text.replace(b"stoker.petastorm._unischema\nUnischema\n",
                            package.encode() + b".unischema\nUnischema\n")
        text = text.replace(b"stoker.petastorm._unischema\nNdarrayCodec",
                            package.encode() + b".codecs\nNdarrayCodec")
        loaded = sp.load_unischema(text)
        assert loaded.fields["a"] == schema.fields["a"]
        assert isinstance(loaded.a.codec, sp.NdarrayCodec)


# --- every codec equal to Petastorm's decoding -----------------------------------------------


@pytest.mark.parametrize("codec", list(CODEC_FIELDS))
def test_every_row_decodes_as_petastorm_decodes_it(codec: str) -> None:
    rows, bad = _unequal_rows(FIXTURE / "dataset", FIXTURE / "expected.npz", CODEC_FIELDS[codec])
    assert rows == 40
    assert bad == {}


@pytest.mark.skipif(not PETASTORM_PYTHON.exists(),
                    reason="Petastorm's environment (.bench-petastorm-venv) is built by make bench")
def test_a_dataset_petastorm_writes_now_reads_identically(tmp_path: Path) -> None:
    subprocess.run([str(PETASTORM_PYTHON), "-W", "ignore",
                    str(ROOT / "tests" / "petastorm" / "make_dataset.py"), str(tmp_path)],
                   check=True, capture_output=True, timeout=300)
    rows, bad = _unequal_rows(tmp_path / "dataset", tmp_path / "expected.npz", ALL_FIELDS)
    assert rows == 40 and bad == {}


@pytest.mark.slow
@pytest.mark.skipif(not PETASTORM_PYTHON.exists() or shutil.which("java") is None,
                    reason="needs Petastorm's environment (make bench) and a JRE for Spark")
def test_a_dataset_materialized_through_spark_reads_identically(tmp_path: Path) -> None:
    # Petastorm's materialize_dataset and dict_to_spark_row, Spark writing the files.
    subprocess.run([str(PETASTORM_PYTHON), str(ROOT / "tests" / "petastorm" / "make_dataset.py"),
                    str(tmp_path), "--spark"], check=True, capture_output=True, timeout=600)
    assert any(p.name.endswith(".snappy.parquet") for p in (tmp_path / "dataset").iterdir())
    rows, bad = _unequal_rows(tmp_path / "dataset", tmp_path / "expected.npz", ALL_FIELDS)
    assert rows == 40 and bad == {}


def _hello_world_example(name: str) -> str:
    site = next((ROOT / ".bench-petastorm-venv" / "lib").glob("python3*/site-packages"))
    path = site / "examples" / "hello_world" / "petastorm_dataset" / name
    return path.read_text()


@pytest.mark.skipif(not PETASTORM_PYTHON.exists(),
                    reason="Petastorm's environment (.bench-petastorm-venv) is built by make bench")
@pytest.mark.parametrize("example", ["python_hello_world.py", "pytorch_hello_world.py"])
def test_petastorms_hello_world_runs_through_the_compat_layer(tmp_path: Path,
                                                               example: str) -> None:
    # The hello-world dataset, written by Petastorm (its schema, its row generator; the files
    # by pyarrow rather than Spark: tests/petastorm/make_dataset.py says how).
    subprocess.run([str(PETASTORM_PYTHON), "-W", "ignore",
                    str(ROOT / "tests" / "petastorm" / "make_dataset.py"),
                    str(tmp_path / "hello"), "--hello-world"], check=True, capture_output=True, timeout=300)
    source = _hello_world_example(example)
    default_url = "file:///tmp/hello_world_dataset"
    assert "from petastorm" in source and default_url in source
    script = tmp_path / example
    # Its imports changed, and its dataset's location.
    script.write_text(source.replace("from petastorm", "from stoker.petastorm")
                      .replace(default_url, (tmp_path / "hello").as_uri()))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    if example == "python_hello_world.py":
        assert sorted(int(line) for line in out.split()) == list(range(10))
    else:
        assert out.startswith("tensor([")


# --- the fast path: decoded tensors from a stoker.Loader ---------------------------------------


def _fixed_shape_fields() -> list[str]:
    return ["id", "matrix", "fortran", "packed", "rgb_png", "grey_png", "rgb_jpeg"]


def test_make_loader_gives_tensors_of_the_unischemas_shapes() -> None:
    loader = sp.make_loader(FIXTURE / "dataset", columns=_fixed_shape_fields(), batch_size=16,
                            shuffle=False)
    batches = list(loader)
    assert [len(b["id"]) for b in batches] == [16, 16, 8]
    first = batches[0]
    assert first["rgb_png"].shape == (16, 24, 32, 3) and first["rgb_png"].dtype == np.uint8
    assert first["grey_png"].shape == (16, 24, 32)
    assert first["fortran"].shape == (16, 3, 5) and first["fortran"].dtype == np.float64
    expected = np.load(FIXTURE / "expected.npz")
    for i, row_id in enumerate(first["id"]):
        for name in ("fortran", "rgb_jpeg", "packed"):
            assert np.array_equal(first[name][i], expected[f"{name}/{row_id}"])


def test_decoding_is_deterministic_across_threads_and_cache(tmp_path: Path) -> None:
    def batches(threads: int, cache: Path | None) -> list:
        loader = sp.make_loader(FIXTURE / "dataset", columns=_fixed_shape_fields(),
                                batch_size=8, seed=3, shuffle_window=16, num_threads=threads,
                                cache_dir=cache)
        return list(loader), loader

    one, _ = batches(1, None)
    many, _ = batches(4, None)
    cold, cold_loader = batches(2, tmp_path / "cache")
    warm, warm_loader = batches(2, tmp_path / "cache")
    for other in (many, cold, warm):
        assert len(other) == len(one)
        for a, b in zip(one, other):
            assert all(np.array_equal(a[k], b[k]) for k in a)
    # The cache holds decoded units: the warm pass reads no Parquet bytes at all.
    assert cold_loader.stats()["cache_misses"] == 6  # row groups of 8, 8 and 4 rows per file
    assert warm_loader.stats()["cache_hits"] == 6 and warm_loader.stats()["bytes_read"] == 0


def test_unknown_dimensions_need_arrow_output_or_padding() -> None:
    with pytest.raises(TypeError, match="column 'packed_ragged' has type list<item: float>"):
        sp.make_loader(FIXTURE / "dataset", columns=["packed_ragged"], batch_size=4)
    loader = sp.make_loader(FIXTURE / "dataset", columns=["id", "packed_ragged"], batch_size=40,
                            shuffle=False, transforms=[{"op": "pad", "column": "packed_ragged",
                                                        "length": 32, "value": 0}])
    batch = next(iter(loader))
    expected = np.load(FIXTURE / "expected.npz")
    for i, row_id in enumerate(batch["id"]):
        want = expected[f"packed_ragged/{row_id}"]
        assert batch["packed_ragged_length"][i] == len(want)
        assert np.array_equal(batch["packed_ragged"][i][:len(want)], want)


# --- errors ----------------------------------------------------------------------------------


def _encoded_dataset(tmp_path: Path, values: list[bytes]) -> Path:
    path = tmp_path / "encoded.parquet"
    pq.write_table(pa.table({"id": pa.array(range(len(values)), pa.int64()),
                             "x": pa.array(values, pa.binary())}), path, row_group_size=2)
    return path


def _npy(array: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_a_value_disagreeing_with_the_declared_shape_names_file_row_group_and_column(
        tmp_path: Path) -> None:
    values = [_npy(np.zeros((2, 3), np.float32))] * 3 + [_npy(np.zeros((3, 2), np.float32))]
    path = _encoded_dataset(tmp_path, values)
    codecs = [{"column": "x", "codec": "ndarray", "dtype": "float32", "shape": [2, 3]}]
    loader = stoker.Loader(path, batch_size=4, shuffle=False, codecs=codecs)
    with pytest.raises(ValueError) as error:
        list(loader)
    message = str(error.value)
    assert "encoded.parquet' (row group 1)" in message
    assert "decoding column 'x' (ndarray)" in message
    assert "row 1: decodes to shape (3, 2) where (2, 3) is declared" in message
    wrong_dtype = [{"column": "x", "codec": "ndarray", "dtype": "float64", "shape": [2, 3]}]
    with pytest.raises(ValueError, match="decodes to dtype float where double .float64. is "
                                         "declared"):
        list(stoker.Loader(path, batch_size=4, shuffle=False, codecs=wrong_dtype))
    skipping = stoker.Loader(path, batch_size=4, shuffle=False, codecs=codecs, on_error="skip")
    (batch,) = list(skipping)
    assert batch["id"].tolist() == [0, 1]
    assert skipping.stats()["skipped_units"][0]["row_group"] == 1


@pytest.mark.parametrize("codec, garbage", [
    ("ndarray", (b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
                 b"'shape': (99999999999, 99999999999), }")),
    ("ndarray", b"not an array at all"),
    ("compressed_ndarray", b"PK\x05\x06" + b"\x00" * 18),
    ("compressed_ndarray", b"PK\x03\x04 truncated zip"),
    ("png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40),
    ("jpeg", b"\xff\xd8\xff\xe0" + b"\x13" * 100),
])
def test_malformed_bytes_give_an_error_not_a_crash(tmp_path: Path, codec: str,
                                                   garbage: bytes) -> None:
    path = _encoded_dataset(tmp_path, [garbage, garbage])
    dtype, shape = ("uint8", [-1, -1]) if codec in ("png", "jpeg") else ("float32", [-1, -1])
    codecs = [{"column": "x", "codec": codec, "dtype": dtype, "shape": shape}]
    with pytest.raises(ValueError, match=f"decoding column 'x' .{codec}.: row 0"):
        list(stoker.Loader(path, batch_size=2, codecs=codecs, output="arrow"))


def test_codecs_are_checked_against_the_columns_when_the_loader_is_made(tmp_path: Path) -> None:
    path = _encoded_dataset(tmp_path, [b"", b""])
    cases = [
        ({"column": "nope", "codec": "png", "dtype": "uint8", "shape": [2, 2]},
         KeyError, "codecs: column 'nope' is not among the columns read"),
        ({"column": "id", "codec": "ndarray", "dtype": "int64", "shape": [2]},
         TypeError, "column 'id' has type int64; a ndarray codec decodes binary values"),
        ({"column": "x", "codec": "png", "dtype": "float32", "shape": [2, 2]},
         ValueError, r"a png image decodes to uint8 of shape \(H, W\) or \(H, W, 3\)"),
        ({"column": "x", "codec": "ndarray", "dtype": "float64", "shape": [2**20, 2**20]},
         ValueError, "would hold more than the 1073741824 bytes one value may decode to"),
        ({"column": "x", "codec": "ndarray", "dtype": "float64", "shape": [0]},
         ValueError, "neither a size from 1 to 2..31-1 nor unknown"),
        ({"column": "x", "codec": "gif", "dtype": "uint8", "shape": [2, 2]},
         ValueError, "codec 'gif' is not one of ndarray, compressed_ndarray, png, jpeg"),
    ]
    for codec, error, message in cases:
        with pytest.raises(error, match=message):
            stoker.Loader(path, batch_size=2, codecs=[codec])


# --- the drop-in API -------------------------------------------------------------------------


def test_make_reader_arguments_map_onto_the_loader() -> None:
    url = (FIXTURE / "dataset").as_uri()
    with sp.make_reader(url, schema_fields=["id", "matrix"], seed=5, num_epochs=2) as reader:
        ids = [int(row.id) for row in reader]
    assert sorted(ids) == sorted(list(range(40)) * 2) and ids[:40] != sorted(ids[:40])
    with sp.make_reader(url, schema_fields=["id"], seed=5, num_epochs=2) as reader:
        assert [int(row.id) for row in reader] == ids  # same seed, same order
    shards = []
    for shard in range(3):
        with sp.make_reader(url, schema_fields=["id"], cur_shard=shard, shard_count=3,
                            shuffle_row_groups=False) as reader:
            shards.append([int(row.id) for row in reader])
    assert sorted(itertools.chain(*shards)) == list(range(40))  # every row once across shards
    with sp.make_reader(url, schema_fields=["id", "weight"],
                        predicate=pc.field("id") >= 30) as reader:
        assert sorted(int(row.id) for row in reader) == list(range(30, 40))
    with sp.make_reader(url, schema_fields=["id"], filters=[("id", "<", 5)]) as reader:
        assert sorted(int(row.id) for row in reader) == list(range(5))
    with sp.make_reader(url, schema_fields=["id", "w.*"], shuffle_row_groups=False) as reader:
        row = next(reader)
        assert row._fields == ("id", "weight") and isinstance(row.weight, np.float64)
        reader.stop()
    with pytest.raises(ValueError, match="rowgroup_selector must be a row-group selector"):
        sp.make_reader(url, rowgroup_selector=object())


def test_both_readers_take_the_same_petastorm_parameters() -> None:
    """make_reader and make_batch_reader write their signatures out (editors and type checkers
    read a def): the same parameters in the same order with the same defaults, but for the
    dataset's name and make_batch_reader's batch_size."""
    def parameters(make: Any) -> list[tuple[str, Any, Any]]:
        return [(p.name, p.kind, p.default)
                for p in inspect.signature(make).parameters.values()]

    reader, batch_reader = parameters(sp.make_reader), parameters(sp.make_batch_reader)
    assert reader[0][0] == "dataset_url" and batch_reader[0][0] == "dataset_url_or_urls"
    assert batch_reader[-2] == ("batch_size", inspect.Parameter.POSITIONAL_OR_KEYWORD, 1024)
    assert reader[1:] == batch_reader[1:-2] + batch_reader[-1:]


class _InSet:
    """Petastorm's in_set predicate, as a user's script would pass it."""

    def get_fields(self):
        return {"name"}

    def do_include(self, values):
        return values["name"] in {"row-3", "row-17"}


def test_python_predicates_and_transform_specs_run_on_the_slow_path() -> None:
    url = (FIXTURE / "dataset").as_uri()
    with pytest.warns(UserWarning, match="slow path"):
        reader = sp.make_reader(url, schema_fields=["id", "name"], predicate=_InSet())
    with reader:
        assert sorted(int(r.id) for r in reader) == [3, 17]

    def double(row):
        row["matrix"] = row["matrix"].astype(np.float64) * 2
        return row

    spec = sp.TransformSpec(double, edit_fields=[("matrix", np.float64, (4, 3), False)],
                            removed_fields=["name"])
    with sp.make_reader(url, schema_fields=["id", "name", "matrix"], transform_spec=spec,
                        shuffle_row_groups=False) as reader:
        row = next(reader)
    expected = np.load(FIXTURE / "expected.npz")
    assert row._fields == ("id", "matrix")
    assert np.array_equal(row.matrix, expected["matrix/0"].astype(np.float64) * 2)


def test_torch_loaders_give_batches_of_tensors() -> None:
    torch = pytest.importorskip("torch")
    url = (FIXTURE / "dataset").as_uri()
    with sp_torch.DataLoader(sp.make_reader(url, schema_fields=["id", "rgb_png"]),
                             batch_size=16) as loader:
        batches = list(loader)
    assert [len(b["id"]) for b in batches] == [16, 16, 8]
    assert batches[0]["rgb_png"].shape == (16, 24, 32, 3)
    assert batches[0]["rgb_png"].dtype == torch.uint8
    with sp_torch.BatchedDataLoader(sp.make_batch_reader(url, schema_fields=["id", "packed"],
                                                         batch_size=7),
                                    batch_size=16) as loader:
        batches = list(loader)
    assert [len(b["id"]) for b in batches] == [16, 16, 8]
    assert batches[0]["packed"].shape == (16, 16) and batches[0]["packed"].dtype == torch.int64
    ids = torch.cat([b["id"] for b in batches]).tolist()
    assert sorted(ids) == list(range(40))
    expected = np.load(FIXTURE / "expected.npz")
    assert np.array_equal(batches[0]["packed"][0].numpy(), expected[f"packed/{ids[0]}"])


def test_make_batch_reader_yields_namedtuples_of_columns() -> None:
    url = (FIXTURE / "dataset").as_uri()
    with sp.make_batch_reader(url, schema_fields=["id", "ragged", "grey_png"], batch_size=10,
                              shuffle_row_groups=False) as reader:
        batches = list(reader)
    assert len(batches) == 4 and batches[0]._fields == ("id", "ragged", "grey_png")
    assert batches[0].grey_png.shape == (10, 24, 32)
    expected = np.load(FIXTURE / "expected.npz")
    assert batches[0].ragged.dtype == object
    assert np.array_equal(batches[0].ragged[3], expected["ragged/3"])


def test_a_plain_parquet_dataset_reads_without_a_unischema(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "data" / "petastorm" / "dataset" / "part-00000.parquet",
                tmp_path / "plain.parquet")
    with sp.make_batch_reader(tmp_path.as_uri(), schema_fields=["id", "name"],
                              shuffle_row_groups=False, batch_size=20) as reader:
        (batch,) = list(reader)
    assert batch.id.tolist() == list(range(20)) and batch.name[0] == "row-0"


# --- what real scripts hit first: Decimal fields, Spark's partitions, a second pass ----------


def _as_petastorm_wrote_it(schema: sp.Unischema) -> bytes:
    """``schema`` pickled under the module names Petastorm's own classes have (protocol 0 is
    text): what Petastorm's dataset_metadata stores."""
    text = pickle.dumps(schema, protocol=0)
    for name in ("Unischema", "UnischemaField"):
        text = text.replace(b"stoker.petastorm._unischema\n" + name.encode() + b"\n",
                            b"petastorm.unischema\n" + name.encode() + b"\n")
    for name in ("ScalarCodec", "NdarrayCodec"):
        text = text.replace(b"stoker.petastorm._unischema\n" + name.encode() + b"\n",
                            b"petastorm.codecs\n" + name.encode() + b"\n")
    for name in ("DecimalType", "StringType", "IntegerType", "ShortType"):
        text = text.replace(b"stoker.petastorm._unischema\n" + name.encode() + b"\n",
                            b"pyspark.sql.types\n" + name.encode() + b"\n")
    assert b"stoker" not in text
    return text


def _spark_type(name: str) -> Any:
    return sp._unischema.SPARK_TYPES[name]()


def _partitioned_dataset_with_decimals(root: Path) -> list[tuple[int, str, Decimal]]:
    """Spark's partitionBy layout (``partition_key=p_N/part-….parquet``, the key in no file)
    with a Decimal field, and its Unischema stored in ``_common_metadata``: the shape of
    Petastorm's own test dataset. Returns the rows (id, partition_key, decimal)."""
    schema = sp.Unischema("TestSchema", [
        sp.UnischemaField("id", np.int32, (), sp.ScalarCodec(_spark_type("IntegerType")), False),
        sp.UnischemaField("partition_key", np.str_, (),
                          sp.ScalarCodec(_spark_type("StringType")), False),
        sp.UnischemaField("decimal", Decimal, (), sp.ScalarCodec(_spark_type("DecimalType")),
                          False),
    ])
    rows = []
    for key in ("p_0", "p_1", "p_2"):
        folder = root / f"partition_key={key}"
        folder.mkdir(parents=True)
        ids = [i for i in range(30) if f"p_{i % 3}" == key]
        values = [Decimal(i) / Decimal(7) for i in ids]
        values = [v.quantize(Decimal("1.000000000")) for v in values]
        table = pa.table({"id": pa.array(ids, pa.int32()),
                          "decimal": pa.array(values, pa.decimal128(10, 9))})
        pq.write_table(table, folder / "part-00000.c000.snappy.parquet", row_group_size=4)
        rows += [(i, key, v) for i, v in zip(ids, values)]
    file_schema = pq.read_schema(root / "partition_key=p_0" / "part-00000.c000.snappy.parquet")
    stored = file_schema.with_metadata({sp.UNISCHEMA_KEY: _as_petastorm_wrote_it(schema)})
    pq.write_metadata(stored, root / "_common_metadata")
    return sorted(rows)


def test_a_decimal_field_and_spark_partitions_read_as_petastorm_reads_them(
        tmp_path: Path) -> None:
    want = _partitioned_dataset_with_decimals(tmp_path / "dataset")
    url = (tmp_path / "dataset").as_uri()
    schema = sp.get_schema_from_dataset_url(url)
    assert schema.decimal.numpy_dtype is Decimal
    with sp.make_reader(url, workers_count=2) as reader:
        got = sorted((int(r.id), r.partition_key, r.decimal) for r in reader)
    assert got == want
    assert all(isinstance(d, Decimal) for _, _, d in got)
    # A filter on the partition key, as Petastorm's tests filter on it.
    with sp.make_reader(url, predicate=pc.field("partition_key") == "p_1") as reader:
        ids = sorted(int(r.id) for r in reader)
    assert ids == [i for i in range(30) if i % 3 == 1]
    with sp.make_batch_reader(url, schema_fields=["id", "partition_key"]) as reader:
        keys = np.concatenate([b.partition_key for b in reader])
    assert sorted(keys.tolist()) == sorted(key for _, key, _ in want)


def test_a_second_pass_over_a_torch_loader_reads_the_next_epoch() -> None:
    pytest.importorskip("torch")
    url = (FIXTURE / "dataset").as_uri()
    loader = sp_torch.DataLoader(sp.make_reader(url, schema_fields=["id"], num_epochs=1),
                                 batch_size=16)
    first = [int(i) for b in loader for i in b["id"]]
    second = [int(i) for b in loader for i in b["id"]]
    assert sorted(first) == sorted(second) == list(range(40))
    assert first != second  # the reader's next epoch: another shuffle
    batched = sp_torch.BatchedDataLoader(sp.make_batch_reader(url, schema_fields=["id"]),
                                         batch_size=16)
    for _ in range(2):
        assert sorted(int(i) for b in batched for i in b["id"]) == list(range(40))
    # A pass while another is being read is an error, as Petastorm's loaders say.
    running = iter(loader)
    next(running)
    with pytest.raises(RuntimeError, match="You must finish a full pass of Petastorm DataLoader "
                                           "before making another pass from the beginning"):
        next(iter(loader))


def test_the_codecs_are_part_of_the_resume_identity() -> None:
    url = (FIXTURE / "dataset").as_uri()
    png = sp.make_loader(url, columns=["id", "rgb_png"], batch_size=8, output="arrow")
    it = iter(png)
    next(it)
    state = png.state_dict()
    assert state["codecs_digest"] != ""
    # The same column read raw (its png bytes, no codec) is other batches: refused.
    raw = stoker.Loader(FIXTURE / "dataset", columns=["id", "rgb_png"], batch_size=8,
                        output="arrow")
    with pytest.raises(ValueError, match="the codecs differs"):
        raw.load_state_dict(state)
    same = sp.make_loader(url, columns=["id", "rgb_png"], batch_size=8, output="arrow")
    same.load_state_dict(state)
    assert [b.column("id").to_pylist() for b in same] == [
        b.column("id").to_pylist() for b in it]
    # A state saved before codecs were part of it (no codecs_digest) means none.
    old = {k: v for k, v in raw.state_dict().items() if k != "codecs_digest"}
    raw.load_state_dict(old)
    with pytest.raises(ValueError, match="the codecs differs"):
        png.load_state_dict(old)


# --- Petastorm's own reader tests (tests/petastorm/run.sh) found these --------------------------


def _typed_dataset(root: Path) -> list[dict[str, Any]]:
    """A Petastorm dataset of 12 rows in 3 row groups whose Unischema declares narrower or other
    scalar dtypes than the Parquet columns (Spark has no uint8; a ShortType read as int32), and
    ndarray fields of strings and bytes, one nullable: the kinds of field in Petastorm's own
    test schema. Returns the rows as written."""
    schema = sp.Unischema("Typed", [
        sp.UnischemaField("id", np.int32, (), sp.ScalarCodec(_spark_type("ShortType")), False),
        sp.UnischemaField("small", np.uint8, (), None, False),
        sp.UnischemaField("names", np.str_, (None,), sp.NdarrayCodec(), True),
        sp.UnischemaField("blobs", np.bytes_, (2, 2), sp.NdarrayCodec(), False),
        sp.UnischemaField("pair", np.uint16, (2,), sp.NdarrayCodec(), True),
    ])
    rows = [{"id": i, "small": 250 + i % 5,
             "names": None if i % 4 == 0 else np.array([f"n{i}"] * (i % 3), dtype=np.str_),
             "blobs": np.array([[b"a\x00", b"b"], [bytes([i]), b""]], dtype=np.bytes_),
             "pair": None if i % 3 == 0 else np.array([i, 60000], dtype=np.uint16)}
            for i in range(12)]
    table = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.int16()),
        "small": pa.array([r["small"] for r in rows], pa.int16()),
        "names": pa.array([None if r["names"] is None else _npy(r["names"]) for r in rows],
                          pa.binary()),
        "blobs": pa.array([_npy(r["blobs"]) for r in rows], pa.binary()),
        "pair": pa.array([None if r["pair"] is None else _npy(r["pair"]) for r in rows],
                         pa.binary()),
    })
    root.mkdir()
    pq.write_table(table, root / "part-0.parquet", row_group_size=4)
    stored = table.schema.with_metadata({sp.UNISCHEMA_KEY: _as_petastorm_wrote_it(schema)})
    pq.write_metadata(stored, root / "_common_metadata")
    return rows


def test_unischema_dtypes_and_string_arrays_are_delivered_as_declared(tmp_path: Path) -> None:
    rows = _typed_dataset(tmp_path / "typed")
    url = (tmp_path / "typed").as_uri()
    with sp.make_reader(url, shuffle_row_groups=False) as reader:
        got = list(reader)
    assert [int(r.id) for r in got] == list(range(12))
    assert {type(r.id) for r in got} == {np.int32}
    assert {type(r.small) for r in got} == {np.uint8}
    for row, want in zip(got, rows):
        if want["names"] is None:
            assert row.names is None
        else:
            assert row.names.dtype.kind == "U"
            np.testing.assert_array_equal(row.names, want["names"])
        np.testing.assert_array_equal(row.blobs, want["blobs"])
        if want["pair"] is None:  # a null in a nullable fixed-shape field
            assert row.pair is None
        else:
            np.testing.assert_array_equal(row.pair, want["pair"])
    with sp.make_batch_reader(url, shuffle_row_groups=False, batch_size=12) as reader:
        (batch,) = list(reader)
    assert batch.id.dtype == np.int32 and batch.small.dtype == np.uint8
    assert batch.blobs.shape == (12, 2, 2) and batch.blobs.dtype.kind == "S"
    assert [n is None for n in batch.names] == [r["names"] is None for r in rows]


def test_petastorms_argument_checks_raise_its_exceptions(tmp_path: Path) -> None:
    _typed_dataset(tmp_path / "typed")
    url = (tmp_path / "typed").as_uri()
    for bad in (None, 123, []):
        with pytest.raises(ValueError):
            sp.make_reader(bad)
    with pytest.raises(ValueError, match="Unknown reader_pool_type: bogus"):
        sp.make_reader(url, reader_pool_type="bogus")
    for pool in ("thread", "process", "dummy"):
        sp.make_reader(url, reader_pool_type=pool).stop()
    for epochs in (0, -10, "abc", 1.5):
        with pytest.raises(ValueError, match="num_epochs"):
            sp.make_batch_reader(url, num_epochs=epochs)
    for shard in ({"shard_count": 0}, {"shard_count": 2}, {"cur_shard": "0", "shard_count": 2},
                  {"cur_shard": 0, "shard_count": "2"}, {"cur_shard": 2, "shard_count": 2}):
        with pytest.raises(ValueError, match="cur_shard"):
            sp.make_reader(url, **shard)
    with pytest.raises(sp.NoDataAvailableError, match=r"row-groups in the dataset \(3\)"):
        sp.make_reader(url, cur_shard=0, shard_count=4)  # 3 row groups
    with pytest.warns(UserWarning, match="shard_seed was deprecated"):
        sp.make_reader(url, shard_seed=1).stop()
    with pytest.raises(RuntimeError, match="No fields matching the criteria"):
        sp.make_reader(url, schema_fields=["^nothing$"])
    reader = sp.make_reader(url)
    next(reader)
    reader.stop()
    with pytest.raises(RuntimeError, match="Trying to read a sample after"):
        next(reader)


def test_both_torch_loaders_take_both_reader_kinds(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    _typed_dataset(tmp_path / "typed")
    url = (tmp_path / "typed").as_uri()
    fields = ["id", "small"]
    for make in (sp.make_reader, sp.make_batch_reader):
        with sp_torch.DataLoader(make(url, schema_fields=fields, shuffle_row_groups=False,
                                      num_epochs=1), batch_size=5) as loader:
            batches = list(loader)
        assert [len(b["id"]) for b in batches] == [5, 5, 2]
        assert torch.cat([b["id"] for b in batches]).tolist() == list(range(12))
        assert batches[0]["small"].dtype == torch.uint8
        with sp_torch.BatchedDataLoader(make(url, schema_fields=fields,
                                             shuffle_row_groups=False),
                                        batch_size=5) as loader:
            batches = list(loader)
        assert [len(b["id"]) for b in batches] == [5, 5, 2]
        assert torch.cat([b["id"] for b in batches]).tolist() == list(range(12))
        with sp_torch.InMemBatchedDataLoader(make(url, schema_fields=fields,
                                                  shuffle_row_groups=False, num_epochs=None),
                                             batch_size=4, num_epochs=2, rows_capacity=10,
                                             shuffle=True, seed=3) as loader:
            epochs = [torch.cat([b["id"] for b in loader]).tolist()]
        assert len(epochs[0]) == 20
        assert sorted(epochs[0][:10]) == sorted(epochs[0][10:]) == list(range(10))
        assert epochs[0][:10] != epochs[0][10:]  # each epoch its own permutation


def test_decimal_friendly_collate_keeps_decimals_and_strings() -> None:
    torch = pytest.importorskip("torch")
    batch = sp_torch.decimal_friendly_collate([
        {"d": Decimal("1.5"), "s": "a", "x": np.int32(1)},
        {"d": Decimal("2.5"), "s": "b", "x": np.int32(2)}])
    assert batch["d"] == [Decimal("1.5"), Decimal("2.5")] and batch["s"] == ["a", "b"]
    assert torch.equal(batch["x"], torch.tensor([1, 2], dtype=torch.int32))


def _numbered_dataset(root: Path, ids: list[int], files: int, row_group_size: int) -> list[str]:
    """Parquet files of rows (id, value = id / 2) split evenly, ids in stored order; their
    file URLs."""
    root.mkdir(parents=True)
    per_file = -(-len(ids) // files)
    urls = []
    for f in range(files):
        part = ids[f * per_file:(f + 1) * per_file]
        path = root / f"part-{f:05d}.parquet"
        pq.write_table(pa.table({"id": pa.array(part, pa.int64()),
                                 "value": pa.array([i / 2 for i in part], pa.float64())}),
                       path, row_group_size=row_group_size)
        urls.append(path.as_uri())
    return urls


def test_one_reader_read_from_several_threads_gives_every_row_once(tmp_path: Path) -> None:
    import concurrent.futures

    _numbered_dataset(tmp_path / "rows", list(range(3000)), files=3, row_group_size=100)
    with sp.make_reader((tmp_path / "rows").as_uri(), workers_count=2, seed=5) as reader:
        def drain() -> list[int]:
            return [int(row.id) for row in reader]

        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            parts = [f.result() for f in [pool.submit(drain) for _ in range(8)]]
    assert sorted(itertools.chain(*parts)) == list(range(3000))
    assert sum(1 for part in parts if part) > 1  # the threads did share the reader


def test_a_single_parquet_file_and_a_list_of_file_urls_read(tmp_path: Path) -> None:
    urls = _numbered_dataset(tmp_path / "rows", list(range(90)), files=3, row_group_size=10)

    def ids(reader: Any) -> list[int]:
        with reader:
            return [int(row.id) for row in reader]

    assert ids(sp.make_reader(urls[1], shuffle_row_groups=False)) == list(range(30, 60))
    assert ids(sp.make_reader(urls[2][len("file://"):], shuffle_row_groups=False)) == \
        list(range(60, 90))
    assert ids(sp.make_reader([urls[2], urls[0]], shuffle_row_groups=False)) == \
        list(range(60, 90)) + list(range(30))
    # A file named twice is read twice, as Petastorm reads it.
    assert ids(sp.make_reader([urls[0], urls[1], urls[0]], shuffle_row_groups=False)) == \
        list(range(60)) + list(range(30))
    with sp.make_batch_reader([urls[2], urls[2]], batch_size=7) as reader:
        assert sorted(np.concatenate([batch.id for batch in reader]).tolist()) == \
            sorted(list(range(60, 90)) * 2)
    with sp.make_batch_reader(urls, batch_size=7, shuffle_row_groups=False) as reader:
        assert np.concatenate([batch.id for batch in reader]).tolist() == list(range(90))
    with pytest.raises(ValueError, match="same scheme and netloc"):
        sp.make_reader([urls[0], "s3://bucket/part-00001.parquet"])


def _expected_windows(row_groups: list[list[int]], length: int, delta: int,
                      overlap: bool) -> list[list[int]]:
    """Petastorm's NGram rule, written out plainly: each run of `length` consecutive ids of
    one row group whose neighbours differ by at most `delta`; without overlap, a window must
    start past the previous window's last id."""
    windows = []
    for ids in row_groups:
        last = None
        for start in range(len(ids) - length + 1):
            window = ids[start:start + length]
            if last is not None and window[0] <= last:
                continue
            if all(b - a <= delta for a, b in itertools.pairwise(window)):
                windows.append(window)
                if not overlap:
                    last = window[-1]
    return windows


def test_ngram_windows_are_consecutive_rows_of_one_row_group(tmp_path: Path) -> None:
    from stoker.petastorm.ngram import NGram

    # Gaps of 1, 2 and 5 between ids, so delta_threshold=2 cuts some windows; 8-row row
    # groups in two files, so windows must not span a row group or a file.
    ids = list(itertools.accumulate([(1, 2, 5, 1, 1, 2)[i % 6] for i in range(160)]))
    _numbered_dataset(tmp_path / "seq", ids, files=2, row_group_size=8)
    groups = [ids[i:i + 8] for i in range(0, 160, 8)]
    url = (tmp_path / "seq").as_uri()

    def windows(overlap: bool = True, **kwargs: Any) -> list[list[int]]:
        ngram = NGram({-1: ["id"], 0: ["^id$"], 1: ["id", "val.*"]}, delta_threshold=2,
                      timestamp_field="^id$", timestamp_overlap=overlap)
        with sp.make_reader(url, schema_fields=ngram, **kwargs) as reader:
            out = []
            for window in reader:
                assert sorted(window) == [-1, 0, 1]
                assert window[-1]._fields == ("id",) and window[1]._fields == ("id", "value")
                assert window[1].value == window[1].id / 2
                out.append([int(window[step].id) for step in (-1, 0, 1)])
            return out

    in_order = windows(shuffle_row_groups=False)
    assert in_order == _expected_windows(groups, 3, 2, overlap=True)
    assert len(in_order) > 10
    assert windows(overlap=False, shuffle_row_groups=False) == \
        _expected_windows(groups, 3, 2, overlap=False)
    shuffled = windows(seed=3)
    assert shuffled == windows(seed=3)  # deterministic
    assert shuffled != in_order and sorted(shuffled) == in_order  # row groups reordered
    assert windows(seed=3, workers_count=1) == shuffled


def test_ngram_arguments_are_checked_as_petastorm_checks_them(tmp_path: Path) -> None:
    from stoker.petastorm.ngram import NGram

    fields = {0: ["id"], 1: ["id"]}
    for bad in ({"fields": []}, {"fields": {0: "id"}}, {"delta_threshold": "abc"},
                {"timestamp_field": 5}, {"timestamp_overlap": 2}):
        with pytest.raises(ValueError):
            NGram(**{"fields": fields, "delta_threshold": 1, "timestamp_field": "id", **bad})
    assert NGram(fields, delta_threshold=Decimal("0.5"), timestamp_field="id").length == 2
    _numbered_dataset(tmp_path / "desc", list(range(20, 0, -1)), files=1, row_group_size=10)
    url = (tmp_path / "desc").as_uri()
    with pytest.raises(NotImplementedError, match="sorted by its timestamp field 'id'"):
        next(sp.make_reader(url, schema_fields=NGram(fields, 1, "id")))
    with pytest.raises(NotImplementedError, match="make_batch_reader does not take an NGram"):
        sp.make_batch_reader(url, schema_fields=NGram(fields, 1, "id"))
    with pytest.raises(NotImplementedError, match="timestamp_overlap=False"):
        sp.make_reader(url, schema_fields=NGram(fields, 1, "id", timestamp_overlap=False),
                       shuffle_row_drop_partitions=2)


def _indexed_dataset(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two files of 30 rows (ids 0..59) in row groups of 10, and in _common_metadata a
    row-group index pickled as Petastorm's build_rowgroup_index pickles it (its indexer
    classes, by their module's name; HIGHEST_PROTOCOL): "id" and "label" (row group k's label
    is "abc"[k % 3]), row groups numbered as Petastorm numbers its pieces."""
    _numbered_dataset(root, list(range(60)), files=2, row_group_size=10)
    names = ("petastorm", "petastorm.etl", "petastorm.etl.rowgroup_indexers")
    for name in names:
        monkeypatch.setitem(sys.modules, name, type(sys)(name))
    indexer_class = type("SingleFieldIndexer", (), {"__module__": names[-1]})
    sys.modules[names[-1]].SingleFieldIndexer = indexer_class  # type: ignore[attr-defined]
    index = {}
    for name, value_of in (("id", lambda i: np.int64(i)),
                           ("label", lambda i: np.str_("abc"[i // 10 % 3]))):
        indexer = indexer_class()
        data: defaultdict[Any, set[int]] = defaultdict(set)
        for i in range(60):
            data[value_of(i)].add(i // 10)
        indexer.__dict__.update(_index_name=name, _column_name=name, _index_data=data)
        index[name] = indexer
    schema = pq.read_schema(root / "part-00000.parquet").with_metadata(
        {b"dataset-toolkit.rowgroups_index.v1": pickle.dumps(index, pickle.HIGHEST_PROTOCOL)})
    pq.write_metadata(schema, root / "_common_metadata")


def test_rowgroup_selector_reads_the_row_groups_petastorms_index_picks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stoker.petastorm.selectors import (
        IntersectIndexSelector,
        SingleIndexSelector,
        UnionIndexSelector,
    )

    _indexed_dataset(tmp_path / "indexed", monkeypatch)
    url = (tmp_path / "indexed").as_uri()

    def ids(selector: Any, **kwargs: Any) -> list[int]:
        with sp.make_reader(url, rowgroup_selector=selector, **kwargs) as reader:
            return sorted(int(row.id) for row in reader)

    def groups(*numbers: int) -> list[int]:
        return sorted(i for k in numbers for i in range(10 * k, 10 * k + 10))

    assert ids(SingleIndexSelector("id", [5, 41])) == groups(0, 4)
    assert ids(SingleIndexSelector("label", ["b"]), seed=4) == groups(1, 4)
    assert ids(UnionIndexSelector([SingleIndexSelector("id", [59]),
                                   SingleIndexSelector("label", ["a"])])) == groups(0, 3, 5)
    assert ids(IntersectIndexSelector([SingleIndexSelector("id", range(25, 45)),
                                       SingleIndexSelector("label", ["c", "a"])])) == \
        groups(2, 3)
    assert ids(SingleIndexSelector("id", [1000])) == []
    with sp.make_batch_reader(url, rowgroup_selector=SingleIndexSelector("id", [33]),
                              batch_size=4) as reader:
        assert sorted(np.concatenate([b.id for b in reader]).tolist()) == groups(3)
    with pytest.raises(ValueError, match="Some of required indexes"):
        sp.make_reader(url, rowgroup_selector=SingleIndexSelector("missing", [1]))
    (tmp_path / "indexed" / "_common_metadata").unlink()
    with pytest.raises(ValueError, match="Could not find _common_metadata"):
        sp.make_reader(url, rowgroup_selector=SingleIndexSelector("id", [1]))


# --- the torch loaders' shuffling queue, list columns, the cache, Python predicates -----------


def _consecutive(ids: list[int]) -> int:
    return int(np.sum(np.diff(ids) == 1))


def test_shuffling_queue_capacity_shuffles_rows_reproducibly(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    _numbered_dataset(tmp_path / "rows", list(range(300)), files=1, row_group_size=300)
    url = (tmp_path / "rows").as_uri()

    def read(kind: Any, capacity: int, seed: int = 3) -> list[int]:
        reader = sp.make_reader(url, schema_fields=["id"], shuffle_row_groups=False, seed=seed)
        with kind(reader, batch_size=4, shuffling_queue_capacity=capacity) as loader:
            return torch.cat([b["id"] for b in loader]).tolist()

    for kind in (sp_torch.DataLoader, sp_torch.BatchedDataLoader):
        assert read(kind, 0) == list(range(300))  # no queue: the reader's order
        shuffled = read(kind, 51)
        assert sorted(shuffled) == list(range(300))
        assert _consecutive(shuffled) < 30
        assert read(kind, 51) == shuffled  # the same seed, the same order
        assert read(kind, 51, seed=4) != shuffled
        # Each row leaves the queue at most capacity - 1 + batch_size places early.
        assert all(position >= row - 54 for position, row in enumerate(shuffled))


def test_batch_reader_stacks_list_columns_whose_rows_have_one_length(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    root = tmp_path / "lists"
    root.mkdir()
    pq.write_table(pa.table({
        "id": pa.array(range(10), pa.int32()),
        "fixed": pa.array([list(range(i, i + 9)) for i in range(10)], pa.list_(pa.int32())),
        "ragged": pa.array([list(range(i % 3)) for i in range(10)], pa.list_(pa.int64())),
    }), root / "part-0.parquet")
    with sp.make_batch_reader(root.as_uri(), shuffle_row_groups=False) as reader:
        (batch,) = list(reader)
    assert batch.fixed.shape == (10, 9) and batch.fixed.dtype == np.int32
    assert batch.fixed[4].tolist() == list(range(4, 13))
    assert batch.ragged.dtype == object and batch.ragged[2].tolist() == [0, 1]
    with sp_torch.BatchedDataLoader(sp.make_batch_reader(root.as_uri(),
                                                         schema_fields=["id", "fixed"]),
                                    batch_size=3) as loader:
        batches = list(loader)
    assert [b["fixed"].shape for b in batches] == [(3, 9)] * 3 + [(1, 9)]
    with sp_torch.InMemBatchedDataLoader(sp.make_batch_reader(root.as_uri(),
                                                              schema_fields=["id", "fixed"]),
                                         batch_size=3, rows_capacity=100) as loader:
        rows = torch.cat([b["fixed"] for b in loader])
    assert rows.shape == (10, 9) and sorted(rows[:, 0].tolist()) == list(range(10))


def test_cleanup_cache_removes_the_local_disk_caches_files(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture) -> None:
    url = (FIXTURE / "dataset").as_uri()
    cache = tmp_path / "cache"
    with sp.make_reader(url, schema_fields=["id", "matrix"], cache_type="local-disk",
                        cache_location=str(cache), cache_size_limit=10**9) as reader:
        assert len(list(reader)) == 40
        assert list(cache.glob("??/??/*.stkc"))
    assert not cache.exists()  # the reader's with block ended: as Petastorm's, it cleans up
    # Called by hand; a file the cache did not write is kept, and so is its directory.
    reader = sp.make_reader(url, schema_fields=["id"], cache_type="local-disk",
                            cache_location=str(cache), cache_size_limit=10**9)
    next(reader)
    (cache / "notes.txt").write_text("mine")
    reader.cleanup_cache()
    assert "Cache cleanup complete." in capsys.readouterr().out
    assert sorted(p.name for p in cache.iterdir()) == ["notes.txt"]
    reader.stop()
    with sp.make_reader(url, schema_fields=["id"]) as reader:  # no cache: nothing to remove
        reader.cleanup_cache()
    assert "Cache cleanup complete." in capsys.readouterr().out


class _FieldsPredicate:
    def __init__(self, fields: list[str]) -> None:
        self.fields = fields

    def get_fields(self):
        return set(self.fields)

    def do_include(self, values):
        return True


def test_a_python_predicate_over_missing_fields_fails_at_next_as_petastorms(
        tmp_path: Path) -> None:
    url = (FIXTURE / "dataset").as_uri()
    for fields, message in ((["nope"], "not among the fields read"),
                            ([], "At least one field name"),
                            (["nope", "id"], "not among the fields read")):
        for make in (sp.make_reader, sp.make_batch_reader):
            with pytest.warns(UserWarning, match="slow path"):
                reader = make(url, schema_fields=["id"], predicate=_FieldsPredicate(fields))
            with reader, pytest.raises(ValueError, match=message):
                next(reader)


class _VectorizedEquals:
    """A predicate written for Petastorm's make_batch_reader: do_include takes a DataFrame."""

    def get_fields(self):
        return {"id", "value"}

    def do_include(self, frame):
        return (frame["id"] % 7 == 0) & (frame["value"] < 30)


def test_batch_reader_gives_a_python_predicate_the_batch_as_a_dataframe(tmp_path: Path) -> None:
    _numbered_dataset(tmp_path / "rows", list(range(100)), files=2, row_group_size=20)
    url = (tmp_path / "rows").as_uri()
    with pytest.warns(UserWarning, match="slow path"):
        reader = sp.make_batch_reader(url, predicate=_VectorizedEquals(), batch_size=16)
    with reader:
        ids = sorted(np.concatenate([b.id for b in reader]).tolist())
    assert ids == [0, 7, 14, 21, 28, 35, 42, 49, 56]
    # A per-row predicate (a set lookup cannot take a column) is called per row instead.
    with pytest.warns(UserWarning, match="slow path"):
        reader = sp.make_batch_reader(url, predicate=_InSetOfIds({3, 50}))
    with reader:
        assert sorted(np.concatenate([b.id for b in reader]).tolist()) == [3, 50]


class _InSetOfIds:
    def __init__(self, ids: set[int]) -> None:
        self.ids = ids

    def get_fields(self):
        return {"id"}

    def do_include(self, values):
        return values["id"] in self.ids


class _PartitionIn:
    def __init__(self, keys: set[str]) -> None:
        self.keys = keys

    def get_fields(self):
        return {"partition_key"}

    def do_include(self, values):
        return values["partition_key"] in self.keys


def test_a_predicate_on_the_partition_key_that_keeps_nothing_warns(tmp_path: Path) -> None:
    _partitioned_dataset_with_decimals(tmp_path / "dataset")
    url = (tmp_path / "dataset").as_uri()
    with pytest.warns(UserWarning, match="No matching data is available for loading"):
        reader = sp.make_reader(url, predicate=_PartitionIn({"p_9"}))
    with reader:
        assert list(reader) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = sp.make_reader(url, predicate=_PartitionIn({"p_1"}))
    assert not [w for w in caught if "No matching data" in str(w.message)]
    with reader:
        rows = list(reader)
    assert sorted(int(r.id) for r in rows) == [i for i in range(30) if i % 3 == 1]
    assert all(type(r.partition_key) is np.str_ for r in rows)  # as Petastorm's decode_row


def test_make_reader_takes_convert_early_to_numpy_and_leaves_out_struct_columns(
        tmp_path: Path) -> None:
    root = tmp_path / "structs"
    root.mkdir()
    pq.write_table(pa.table({
        "id": pa.array(range(4), pa.int64()),
        "nested": pa.array([{"x": i} for i in range(4)], pa.struct([("x", pa.int64())])),
    }), root / "part-0.parquet")
    with pytest.warns(UserWarning, match="'nested' has an unsupported type"):
        reader = sp.make_batch_reader(root.as_uri(), shuffle_row_groups=False)
    with reader:
        (batch,) = list(reader)
    assert batch._fields == ("id",) and batch.id.tolist() == [0, 1, 2, 3]
    with sp.make_reader((FIXTURE / "dataset").as_uri(), schema_fields=["id"],
                        convert_early_to_numpy=True) as reader:
        assert len(list(reader)) == 40
