"""`stoker gen`'s list presets: multihot (MLPerf DLRM-DCNv2's multi-hot Criteo) and sequences
(user histories) write the schema they state, the lengths and ids their laws promise, and the
same bytes for the same options. Every test writes real Parquet files of 20,000 rows at most."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from stoker.cli import gen as _gen

LIST_PRESETS = ["multihot", "sequences"]


def write(out: Path, preset: str, rows: int, **options: int) -> pa.Table:
    """Generates into `out` and returns the dataset, after checking each file's schema."""
    gen_options = _gen.GenOptions(preset=preset, rows=rows, **options)
    result = _gen.generate(out, gen_options, progress=False)
    for path in result.paths:
        assert_states_schema(path, gen_options)
    return pq.read_table(out)


def assert_states_schema(path: Path, options: _gen.GenOptions) -> None:
    """The file's schema is the one `schema_for` states, field metadata (the cardinalities)
    included. Compared field by field: Parquet readers name a list's child `element` where
    Arrow's default is `item`, and check_metadata=True would count that as a difference."""
    written, expected = pq.read_schema(path), _gen.schema_for(options)
    assert written.equals(expected), path
    assert [f.metadata for f in written] == [f.metadata for f in expected], path


def lengths_of(column: pa.ChunkedArray) -> np.ndarray:
    return np.diff(column.combine_chunks().offsets.to_numpy())


def values_of(column: pa.ChunkedArray) -> np.ndarray:
    return column.combine_chunks().values.to_numpy()


def cardinality(table: pa.Table, name: str) -> int:
    return int(table.schema.field(name).metadata[_gen.CARDINALITY_KEY])


def test_multihot_bags_follow_the_hotness(tmp_path):
    table = write(tmp_path, "multihot", 20_000, files=2, row_group_size=5000)

    assert table.schema.names == (
        ["row_id", "label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)]
    )
    np.testing.assert_array_equal(table["row_id"].to_numpy(), np.arange(20_000))
    assert 0.2 < table["label"].to_numpy().mean() < 0.3
    assert all(column.null_count == 0 for column in table.columns)
    for i, hotness in enumerate(_gen.MULTIHOT_HOTNESS):
        name = f"C{i + 1}"
        assert table.schema.field(name).type == pa.list_(pa.int32())
        assert cardinality(table, name) == _gen.CRITEO_CARDINALITIES[i]
        lengths = lengths_of(table[name])
        assert lengths.min() >= 1, name  # No empty bag.
        if hotness == 1:
            assert (lengths == 1).all(), name
        else:
            assert lengths.mean() == pytest.approx(hotness, rel=0.03), name
        ids = values_of(table[name])
        assert table[name].combine_chunks().values.null_count == 0
        assert ids.min() >= 0 and ids.max() < _gen.CRITEO_CARDINALITIES[i], name
    # Skewed as criteo's: the smallest id of the 10-value feature is by far the most frequent.
    counts = np.bincount(values_of(table["C1"]), minlength=10)
    assert counts[0] > 2 * counts[9]


def test_sequences_histories_are_paired_and_ordered(tmp_path):
    table = write(tmp_path, "sequences", 20_000, files=2, row_group_size=5000)

    assert table.schema.names == [
        "row_id", "label", "user_id", "item_id",
        "history", "history_ts", "history_action", "history_weight",
    ]  # fmt: skip
    assert all(column.null_count == 0 for column in table.columns)
    for name in ("user_id", "item_id"):
        ids = table[name].to_numpy()
        assert ids.min() >= 0 and ids.max() < cardinality(table, name) == 1_000_000

    offsets = table["history"].combine_chunks().offsets.to_numpy()
    for name in ("history_ts", "history_action", "history_weight"):
        np.testing.assert_array_equal(table[name].combine_chunks().offsets.to_numpy(), offsets)
    lengths = np.diff(offsets)
    assert lengths.min() >= 1 and lengths.max() <= _gen.SEQUENCE_MAX_LENGTH
    # The law's median is 32 and its mean about 98; the heavy tail makes the sample mean vary.
    assert 28 <= np.median(lengths) <= 36
    assert 70 < lengths.mean() < 130

    history = values_of(table["history"])
    assert history.min() >= 0 and history.max() < cardinality(table, "history")
    times = values_of(table["history_ts"])
    steps = np.diff(times)
    within_row = np.ones(len(steps), dtype=bool)
    within_row[offsets[1:-1] - 1] = False  # The step from a row's last event to the next row's.
    assert (steps[within_row] > 0).all()
    assert times.min() > _gen.SEQUENCE_START
    actions = values_of(table["history_action"])
    assert actions.min() >= 0 and actions.max() < cardinality(table, "history_action") == 5
    weights = values_of(table["history_weight"])
    assert weights.min() > 0 and weights.max() <= 1

    labels = table["label"].to_numpy()
    assert 0.2 < labels.mean() < 0.3
    assert np.corrcoef(np.log(lengths), labels)[0, 1] > 0.2  # Longer histories click more.


@pytest.mark.parametrize("preset", LIST_PRESETS)
def test_list_presets_same_seed_gives_identical_bytes(tmp_path, preset):
    options = {"rows": 600, "files": 2, "row_group_size": 128, "seed": 7}
    write(tmp_path / "a", preset, **options)
    write(tmp_path / "b", preset, **options)
    first, second = sorted((tmp_path / "a").glob("*.parquet")), sorted((tmp_path / "b").glob("*"))
    assert len(first) == 2
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]

    other = write(tmp_path / "c", preset, **{**options, "seed": 8})
    same = pq.read_table(tmp_path / "a")
    assert same["row_id"].equals(other["row_id"])
    for name in ("label", "C21" if preset == "multihot" else "history"):
        assert not same[name].equals(other[name]), name


def test_list_id_columns_are_dictionary_encoded(tmp_path):
    # use_dictionary takes a list column's leaf path (name.list.element); given the list's own
    # name it silently encodes plain.
    write(tmp_path, "sequences", 100)
    row_group = pq.read_metadata(tmp_path / "part-00000.parquet").row_group(0)
    encodings = {
        row_group.column(i).path_in_schema: row_group.column(i).encodings
        for i in range(row_group.num_columns)
    }
    for name in ("user_id", "history.list.element", "history_action.list.element"):
        assert "RLE_DICTIONARY" in encodings[name], name
    for name in ("history_ts.list.element", "history_weight.list.element"):
        assert "RLE_DICTIONARY" not in encodings[name], name


@pytest.mark.parametrize("preset", LIST_PRESETS)
@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"columns": 5}, "columns applies only to preset 'wide'"),
        ({"list_size": 5}, "list_size applies only to preset 'embeddings'"),
        ({"row_group_size": _gen.MAX_LIST_ROW_GROUP_SIZE + 1}, "row_group_size must be <="),
    ],
)
def test_list_presets_refuse_options(tmp_path, preset, option, message):
    with pytest.raises(ValueError, match=message):
        _gen.generate(tmp_path, _gen.GenOptions(preset=preset, rows=10, **option))
    assert not list(tmp_path.iterdir())


def test_list_presets_from_the_command_line(tmp_path):
    # The installed entry point, in a process of its own, as a user runs it.
    stoker = Path(sys.executable).with_name("stoker")
    done = subprocess.run(
        [str(stoker), "gen", str(tmp_path), "--preset", "multihot", "--rows", "1000"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1,000 rows" in done.stdout
    (path,) = tmp_path.glob("*.parquet")
    assert pq.read_metadata(path).num_rows == 1000
    assert_states_schema(path, _gen.GenOptions(preset="multihot", rows=1000))


# dlrm-parquet: MLPerf Storage v3.0's DLRM-on-Parquet workload (dlrm_b200.yaml's columns).
DLRM_TYPES = {"h": pa.float16(), "f": pa.float32(), "d": pa.float64(), "b": pa.int8()}


def test_dlrm_parquet_is_the_workloads_shape(tmp_path):
    options = {"files": 2, "row_group_size": _gen.DLRM_PARQUET_ROW_GROUP, "compression": "none"}
    table = write(tmp_path, "dlrm-parquet", 13_000, **options)

    features = [f"feature_{i:03d}" for i in range(200)]
    assert table.schema.names == ["row_id", "label", *features]
    assert [table.schema.field(n).type for n in features] == [
        DLRM_TYPES[c] for c in _gen.DLRM_PARQUET_TYPES]
    # The workload's record_length_bytes, and what its 40 read columns hold of it.
    width = {name: table.schema.field(name).type.bit_width // 8 for name in features}
    assert sum(width.values()) == 761
    read = _gen.dlrm_parquet_columns()
    assert len(read) == 40 and sum(width[name] for name in read) == 160
    assert all(column.null_count == 0 for column in table.columns)
    np.testing.assert_array_equal(table["row_id"].to_numpy(), np.arange(13_000))
    # Uncompressed, in the workload's row groups (the last of each file short).
    metadata = pq.read_metadata(tmp_path / "part-00000.parquet")
    assert metadata.row_group(0).num_rows == 6144
    assert metadata.row_group(0).column(2).compression == "UNCOMPRESSED"
    ints = table["feature_007"].to_numpy()
    assert ints.min() < -100 and ints.max() > 100  # int8 over its range
    halves = table["feature_000"].to_numpy().astype(np.float64)
    assert abs(halves.mean()) < 0.05 and 0.95 < halves.std() < 1.05  # standard normal


def test_dlrm_parquet_same_seed_gives_identical_bytes(tmp_path):
    for name in ("a", "b"):
        write(tmp_path / name, "dlrm-parquet", 700, row_group_size=256, seed=3)
    assert [p.read_bytes() for p in sorted((tmp_path / "a").glob("*.parquet"))] == [
        p.read_bytes() for p in sorted((tmp_path / "b").glob("*.parquet"))]


def test_the_loader_reads_the_workloads_columns_as_narrow_as_stored(tmp_path):
    import stoker

    write(tmp_path, "dlrm-parquet", 9_000, row_group_size=_gen.DLRM_PARQUET_ROW_GROUP,
          compression="none")
    columns = ["row_id", *_gen.dlrm_parquet_columns()]
    loader = stoker.Loader(tmp_path, columns=columns, batch_size=1024, seed=5)
    batches = list(loader)
    dtypes = {name: str(array.dtype) for name, array in batches[0].items()}
    assert [dtypes[name] for name in _gen.dlrm_parquet_columns()] == [
        {"h": "float16", "f": "float32", "d": "float64", "b": "int8"}[_gen.DLRM_PARQUET_TYPES[i]]
        for i in _gen.DLRM_PARQUET_READ]
    row_ids = np.concatenate([batch["row_id"] for batch in batches])
    assert sorted(row_ids.tolist()) == list(range(9_000))  # every row once, shuffled
    assert row_ids.tolist() != list(range(9_000))
