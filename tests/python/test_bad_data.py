"""The error budget for bad data (on_error="skip"): row groups that cannot be read are skipped
deterministically (the plan does not change, their rows are absent from the batches that held
them), reported in stats() and a quarantine report, and bounded by max_bad_units /
max_bad_fraction. Tested with the parquet-testing corpus's broken files mixed into a good
dataset and with a file damaged in the middle of an epoch, with and without a disk cache."""

from __future__ import annotations

import json
import logging
import shutil
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches, damage_row_group

BAD_DATA = Path(__file__).resolve().parent.parent / "data" / "parquet-testing" / "bad_data"
# Files whose footer reads but whose row group does not decode (test_corpus.py holds them to a
# clear error): "Invalid column metadata (corrupt file?)" and "Unexpected end of stream".
DICT_HEADER = BAD_DATA / "ARROW-RS-GH-6229-DICTHEADER.parquet"  # 25 rows, 1 row group
FLBA = BAD_DATA / "ARROW-GH-47662.parquet"  # 1000 rows of fixed_size_binary[4], 1 row group


def good_table(schema: pa.Schema, rows: int, start: int) -> pa.Table:
    """Rows of `schema` whose first int32 column numbers them from `start`."""
    columns = []
    for field in schema:
        if pa.types.is_integer(field.type):
            columns.append(pa.array(np.arange(start, start + rows), field.type))
        elif pa.types.is_fixed_size_binary(field.type):
            columns.append(pa.array([i.to_bytes(4, "little") for i in range(start, start + rows)],
                                    field.type))
        else:
            columns.append(pa.array([f"row {i}".encode() for i in range(start, start + rows)],
                                    field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def make_dataset(out: Path, bad: Path, bad_names: list[str]) -> tuple[Path, Path]:
    """Two datasets side by side: `out/broken` holds good files a.parquet and z.parquet
    around copies of the corpus file `bad` named `bad_names`; `out/sound` is the same with
    good files of the same row count in place of the broken ones (what the plan would read)."""
    schema = pq.read_schema(bad)
    bad_rows = pq.read_metadata(bad).num_rows
    broken, sound = out / "broken", out / "sound"
    for folder in (broken, sound):
        folder.mkdir(parents=True)
        pq.write_table(good_table(schema, 310, 0), folder / "a.parquet", row_group_size=40)
        pq.write_table(good_table(schema, 170, 10_000), folder / "z.parquet", row_group_size=60)
    for i, name in enumerate(bad_names):
        shutil.copy(bad, broken / name)
        pq.write_table(good_table(schema, bad_rows, 20_000 + 1000 * i), sound / name,
                       row_group_size=bad_rows)
    return broken, sound


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_dataset(tmp_path_factory.mktemp("bad"), DICT_HEADER, ["m.parquet"])


def read(source: Path, **options) -> tuple[stoker.Loader, list[pa.RecordBatch]]:
    loader = stoker.Loader(source, batch_size=32, output="arrow", **options)
    return loader, list(loader)


def without_file(batches: list[pa.RecordBatch], file_index: int) -> list[pa.RecordBatch]:
    """The batches with the rows of file `file_index` taken out (each batch kept, maybe empty)."""
    return [b.filter(pa.compute.not_equal(b.column("_file_index"), file_index)) for b in batches]


def test_a_broken_row_group_raises_by_default(mixed: tuple[Path, Path]) -> None:
    with pytest.raises(OSError, match=r"m\.parquet' \(row group 0\)"):
        read(mixed[0])


@pytest.mark.parametrize("shuffle", [False, True])
def test_skipped_rows_are_absent_and_the_others_keep_their_places(mixed: tuple[Path, Path],
                                                                  shuffle: bool) -> None:
    broken, sound = mixed
    options = {"shuffle": shuffle, "seed": 7, "shuffle_window": 100, "with_row_origin": True}
    loader, batches = read(broken, on_error="skip", **options)
    _, expected = read(sound, **options)
    # Same batches as the sound dataset's, less the broken file's rows (file index 1 of 3):
    # the plan did not change, batches that held those rows are shorter.
    assert len(batches) == len(expected)
    for got, want in zip(batches, without_file(expected, 1)):
        assert got.equals(want)
    stats = loader.stats()
    assert stats["skipped_units"] == [{
        "file": str(broken / "m.parquet"), "row_group": 0, "rows": 25,
        "error": stats["skipped_units"][0]["error"]}]
    assert "Invalid column metadata" in stats["skipped_units"][0]["error"]
    assert stats["skipped_rows"] == 25
    assert stats["rows"] == 310 + 170


def test_each_skipped_row_group_is_logged_once(mixed: tuple[Path, Path],
                                               caplog: pytest.LogCaptureFixture) -> None:
    broken, _ = mixed
    with caplog.at_level(logging.WARNING, logger="stoker"):
        loader = stoker.Loader(broken, batch_size=32, output="arrow", on_error="skip",
                               shuffle_window=100, seed=1)
        for epoch in (0, 1):  # met again in the second epoch: not logged again
            loader.set_epoch(epoch)
            list(loader)
    records = [r for r in caplog.records if r.name == "stoker"]
    assert len(records) == 1
    message = records[0].getMessage()
    assert records[0].levelno == logging.WARNING
    assert f"row group 0 of {broken / 'm.parquet'} (25 rows" in message
    assert "Invalid column metadata" in message


def test_skipping_is_the_same_whatever_the_threads(mixed: tuple[Path, Path]) -> None:
    runs = [read(mixed[0], on_error="skip", seed=3, shuffle_window=100, num_threads=threads)[1]
            for threads in (1, 3)]
    assert_same_batches(*runs)


def test_every_rank_skips_the_same_rows(mixed: tuple[Path, Path]) -> None:
    broken, sound = mixed
    for rank in range(3):
        options = {"rank": rank, "world_size": 3, "seed": 1, "shuffle_window": 100,
                   "with_row_origin": True}
        _, batches = read(broken, on_error="skip", **options)
        _, expected = read(sound, **options)
        for got, want in zip(batches, without_file(expected, 1), strict=True):
            assert got.equals(want)


@pytest.mark.parametrize("stop_after", [2, 6, 12])
def test_resume_across_a_skip_continues_exactly(mixed: tuple[Path, Path], stop_after: int) -> None:
    options = {"on_error": "skip", "seed": 2, "shuffle_window": 100}
    _, whole = read(mixed[0], **options)
    first = stoker.Loader(mixed[0], batch_size=32, output="arrow", **options)
    it = iter(first)
    head = [next(it) for _ in range(stop_after)]
    state = first.state_dict()
    it.close()
    second = stoker.Loader(mixed[0], batch_size=32, output="arrow", **options)
    second.load_state_dict(state)
    assert_same_batches(head + list(second), whole)


def test_quarantine_report(mixed: tuple[Path, Path], tmp_path: Path) -> None:
    loader, _ = read(mixed[0], on_error="skip", max_bad_units=3)
    report = loader.quarantine_report(tmp_path / "quarantine.json")
    assert json.loads((tmp_path / "quarantine.json").read_text()) == report
    assert report["skipped_row_groups"] == 1 and report["skipped_rows_per_epoch"] == 25
    assert report["max_bad_units"] == 3 and report["max_bad_fraction"] is None
    assert report["row_groups"] == 8 + 3 + 1
    assert report["units"][0]["file"].endswith("m.parquet")


def test_over_budget_names_how_many_and_which(tmp_path: Path) -> None:
    broken, _ = make_dataset(tmp_path, DICT_HEADER, ["m1.parquet", "m2.parquet"])
    # Two broken row groups of 13: one is within max_bad_units=1, the second is not.
    with pytest.raises(OSError) as error:
        read(broken, on_error="skip", max_bad_units=1, shuffle=False)
    message = str(error.value)
    assert "2 of 13 units (row groups) could not be read" in message
    assert "max_bad_units=1" in message
    for name in ("m1.parquet", "m2.parquet"):
        assert f"{name}' row group 0 (25 rows): " in message
    assert "Invalid column metadata" in message
    # A fraction: 2 of 13 is over 10%, within 20%.
    with pytest.raises(OSError, match="max_bad_fraction=0.1"):
        read(broken, on_error="skip", max_bad_fraction=0.1)
    loader, batches = read(broken, on_error="skip", max_bad_fraction=0.2)
    assert sum(b.num_rows for b in batches) == 310 + 170
    assert len(loader.stats()["skipped_units"]) == 2


def test_files_whose_footers_cannot_be_read_are_skipped_within_the_budget(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A file that is not Parquet at all and the corpus's PARQUET-1481 (its footer names a
    column type that does not exist) beside two good files: with on_error="skip" the loader is
    made, leaves both out (listed, logged, counted against the budget) and delivers exactly
    the batches of the good files alone; with "raise" it fails naming the first."""
    schema = pq.read_schema(DICT_HEADER)
    broken, sound = tmp_path / "broken", tmp_path / "sound"
    for folder in (broken, sound):
        folder.mkdir()
        pq.write_table(good_table(schema, 310, 0), folder / "a.parquet", row_group_size=40)
        pq.write_table(good_table(schema, 170, 10_000), folder / "z.parquet", row_group_size=60)
    (broken / "m.parquet").write_bytes(b"this is not a parquet file, only its name says so")
    shutil.copy(BAD_DATA / "PARQUET-1481.parquet", broken / "p.parquet")
    with pytest.raises(ValueError, match="m.parquet' could not be read as Parquet"):
        read(broken, shuffle=False)
    options = {"seed": 4, "shuffle_window": 64, "with_row_origin": True}
    with caplog.at_level(logging.WARNING, logger="stoker"):
        loader, batches = read(broken, on_error="skip", **options)
    _, expected = read(sound, **options)
    assert_same_batches(batches, expected)
    assert loader.files == [str(broken / "a.parquet"), str(broken / "z.parquet")]
    skipped = loader.stats()["skipped_units"]
    assert [(Path(u["file"]).name, u["row_group"], u["rows"]) for u in skipped] == [
        ("m.parquet", -1, 0), ("p.parquet", -1, 0)]
    assert all(u["file"] in u["error"] for u in skipped)  # each error names its file
    assert sum("its footer could not be read" in r.getMessage() for r in caplog.records) == 2
    # The budget counts each as a unit: 2 of the 11 row groups + 2 files.
    with pytest.raises(OSError) as error:
        read(broken, on_error="skip", max_bad_units=1)
    assert "2 of 13 units (row groups) could not be read" in str(error.value)
    assert "m.parquet' (its footer): " in str(error.value)
    # Nothing readable at all: the first file's error, skip or not.
    only_bad = tmp_path / "only_bad"
    only_bad.mkdir()
    shutil.copy(broken / "m.parquet", only_bad / "m.parquet")
    with pytest.raises(ValueError, match="m.parquet' could not be read as Parquet"):
        read(only_bad, on_error="skip")


def test_another_broken_file_of_the_corpus(tmp_path: Path) -> None:
    broken, sound = make_dataset(tmp_path, FLBA, ["m.parquet"])
    options = {"seed": 4, "shuffle_window": 64, "with_row_origin": True}
    loader, batches = read(broken, on_error="skip", **options)
    _, expected = read(sound, **options)
    for got, want in zip(batches, without_file(expected, 1), strict=True):
        assert got.equals(want)
    assert "Unexpected end of stream" in loader.stats()["skipped_units"][0]["error"]


@pytest.mark.parametrize("cache", [False, True])
def test_a_file_damaged_mid_epoch_is_skipped(tmp_path: Path, cache: bool) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        ids = np.arange(i * 1000, (i + 1) * 1000, dtype=np.int64)
        pq.write_table(pa.table({"id": ids, "x": ids * 2.0}), data / f"part-{i}.parquet",
                       row_group_size=250)
    options = {"batch_size": 100, "shuffle": False, "num_threads": 1, "prefetch": 1,
               "on_error": "skip"}
    if cache:
        options["cache_dir"] = str(tmp_path / "cache")
    loader = stoker.Loader(data, **options)
    it = iter(loader)
    first = [next(it)]
    # Row group 2 of the last file (ids 2500-2749) has not been read yet: damage it now.
    damage_row_group(data / "part-2.parquet", 2)
    epoch = first + list(it)
    ids = np.concatenate([b["id"] for b in epoch])
    expected = np.setdiff1d(np.arange(3000), np.arange(2500, 2750))
    np.testing.assert_array_equal(ids, expected)
    # The plan did not change: 30 batches, the ones that held the damaged rows are shorter.
    assert len(epoch) == 30 and [len(b["id"]) for b in epoch[25:28]] == [0, 0, 50]
    stats = loader.stats()
    assert [(u["file"].endswith("part-2.parquet"), u["row_group"], u["rows"])
            for u in stats["skipped_units"]] == [(True, 2, 250)]
    # The next epoch (from the cache, when there is one) skips it again, counted once.
    again = np.concatenate([b["id"] for b in loader])
    np.testing.assert_array_equal(again, expected)
    stats = loader.stats()
    assert len(stats["skipped_units"]) == 1 and stats["skipped_rows"] == 500
    if cache:
        assert stats["cache_hits"] > 0


@pytest.mark.parametrize(("options", "message"), [
    ({"on_error": "ignore"}, "on_error must be 'raise' or 'skip', got 'ignore'"),
    ({"max_bad_units": 3}, "max_bad_units and max_bad_fraction need on_error='skip'"),
    ({"on_error": "skip", "max_bad_units": -1}, "max_bad_units must be >= 0, got -1"),
    ({"on_error": "skip", "max_bad_fraction": 1.5},
     "max_bad_fraction must be between 0 and 1, got 1.5"),
])
def test_error_budget_options_are_checked(mixed: tuple[Path, Path], options: dict,
                                          message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stoker.Loader(mixed[0], batch_size=8, output="arrow", **options)


# Strings that are not valid UTF-8. Parquet decoders pass a string column's bytes through as
# the file holds them (pyarrow's reader too), which would hand consumers Arrow arrays that fail
# ValidateFull; Stoker checks every value of a decoded unit (src/decode/value_check.h).
BAD_UTF8 = b"caf\xc3"  # a two-byte sequence cut short


def strings(values: list[bytes], type_: pa.DataType) -> pa.Array:
    """`values` as a string array of `type_` without the UTF-8 check a cast would make."""
    binary = pa.large_binary() if type_ == pa.large_string() else pa.binary()
    return pa.array(values, binary).view(type_)


def string_column(kind: str, values: list[bytes]) -> pa.Array:
    """`values` in a column of `kind`: the strings at the top level or nested."""
    if kind in ("string", "large_string"):
        return strings(values, getattr(pa, kind)())
    if kind == "list":
        offsets = pa.array(np.arange(len(values) + 1, dtype=np.int32))
        return pa.ListArray.from_arrays(offsets, strings(values, pa.string()))
    if kind == "struct":
        return pa.StructArray.from_arrays([strings(values, pa.string())], ["name"])
    assert kind == "dictionary"
    uniques = list(dict.fromkeys(values))
    indices = pa.array([uniques.index(v) for v in values], pa.int32())
    return pa.DictionaryArray.from_arrays(indices, strings(uniques, pa.string()))


def write_with_bad_strings(path: Path, kind: str, bad_row: int | None) -> None:
    """300 rows in row groups of 100: id, and a string column `s` of `kind` whose row
    `bad_row` (none: no row) holds BAD_UTF8. Each row group is a chunk of its own, so a
    dictionary holds only its row group's values."""
    values = [b"caf\xc3\xa9 %d" % i for i in range(300)]
    if bad_row is not None:
        values[bad_row] = BAD_UTF8
    column = pa.chunked_array([string_column(kind, values[i:i + 100]) for i in (0, 100, 200)])
    table = pa.table({"id": np.arange(300, dtype=np.int64), "s": column})
    pq.write_table(table, path, row_group_size=100)


@pytest.mark.parametrize("kind", ["string", "large_string", "list", "struct", "dictionary"])
def test_invalid_utf8_names_file_row_group_and_column(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "strings.parquet"
    write_with_bad_strings(path, kind, bad_row=150)
    # The file holds the bytes: pyarrow reads them back unchecked.
    with pytest.raises(pa.ArrowInvalid, match="Invalid UTF8"):
        pq.read_table(path).validate(full=True)
    with pytest.raises(ValueError) as error:
        read(path, shuffle=False)
    message = str(error.value)
    assert "strings.parquet' (row group 1)" in message
    assert "column 's' holds a string that is not valid UTF-8" in message


@pytest.mark.parametrize("kind", ["string", "list", "dictionary"])
def test_invalid_utf8_is_skipped_like_any_bad_unit(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "strings.parquet"
    write_with_bad_strings(path, kind, bad_row=150)
    loader, batches = read(path, on_error="skip", shuffle=False)
    ids = np.concatenate([b["id"] for b in batches])
    np.testing.assert_array_equal(ids, np.r_[0:100, 200:300])
    for batch in batches:
        batch.validate(full=True)
    [skipped] = loader.stats()["skipped_units"]
    assert skipped["row_group"] == 1 and "not valid UTF-8" in skipped["error"]


def test_valid_strings_of_every_kind_pass(tmp_path: Path) -> None:
    for kind in ("string", "large_string", "list", "struct", "dictionary"):
        path = tmp_path / f"{kind}.parquet"
        write_with_bad_strings(path, kind, bad_row=None)
        _, batches = read(path, shuffle=False)
        assert pa.Table.from_batches(batches).to_pylist() == pq.read_table(path).to_pylist()


def test_a_decimal_beyond_its_precision_names_its_column(tmp_path: Path) -> None:
    # 123456.78 has 8 digits; decimal128(5, 2) allows 5. Written without the check a cast makes.
    values = pa.array([Decimal("1.25")] * 99 + [Decimal("123456.78")], pa.decimal128(38, 2))
    table = pa.table({"id": np.arange(100), "price": values.view(pa.decimal128(5, 2))})
    pq.write_table(table, tmp_path / "prices.parquet")
    with pytest.raises(ValueError, match=r"prices\.parquet' \(row group 0\): column 'price' holds a "
                                         r"value that its type decimal128\(5, 2\) does not allow"):
        read(tmp_path / "prices.parquet")


def lying_null_count(path: Path) -> None:
    """Rewrites the footer of `path` (one int64 column "x", one row group, one null) so its
    statistics record 0 nulls: the one byte of the null count's varint, found by trying each
    candidate and keeping the one pyarrow then reads as null_count 0 with all else equal."""
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    before = pq.ParquetFile(path).metadata.row_group(0).column(0).statistics
    assert before.null_count == 1
    for i in range(start, len(data) - 9):
        # A compact-protocol i64 field header (type 6), then zigzag(1) = 2.
        if data[i] & 0x0F != 6 or data[i + 1] != 2:
            continue
        candidate = bytearray(data)
        candidate[i + 1] = 0
        patched = path.with_suffix(".try")
        patched.write_bytes(candidate)
        try:
            stats = pq.ParquetFile(patched).metadata.row_group(0).column(0).statistics
        except Exception:  # noqa: BLE001, S112 - a wrong guess breaks the footer; try the next
            continue
        if stats.null_count == 0 and stats.min == before.min and stats.max == before.max:
            patched.replace(path)
            return
    raise AssertionError("no null count byte found to patch")


@pytest.mark.parametrize("shuffle", [True, False])
def test_statistics_that_hide_a_null_are_an_error_not_a_lost_null(tmp_path: Path,
                                                                   shuffle: bool) -> None:
    # Arrow output trusts statistics that prove a column null-free (its batches then carry no
    # validity for it); a file whose statistics lie must not turn its null into a value.
    path = tmp_path / "lying.parquet"
    pq.write_table(pa.table({"x": pa.array([1, None, 3], pa.int64())}), path)
    lying_null_count(path)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).statistics.null_count == 0
    assert pq.read_table(path)["x"].null_count == 1
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"x": pa.array([4, 5, 6], pa.int64())}), good)
    loader = stoker.Loader([good, path], batch_size=2, output="arrow", shuffle=shuffle)
    with pytest.raises(ValueError, match=r"column 'x' has null values in .*lying\.parquet.*"
                                         r"statistics record none"):
        list(loader)
    skipping = stoker.Loader([good, path], batch_size=2, output="arrow", shuffle=shuffle,
                             on_error="skip", max_bad_fraction=1.0)
    rows = sorted(v for b in skipping for v in b.column("x").to_pylist())
    assert rows == [4, 5, 6]
