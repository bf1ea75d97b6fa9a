"""The Loader's contract: exact batches, deterministic order, full coverage, sharding with
equal steps, zero-copy outputs, clean stops and clear errors. Real Parquet files throughout."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import ROWS, assert_same_batches

COLUMNS = ["row_id", "label", "I1", "C1"]


def epoch(loader: stoker.Loader) -> list[dict[str, np.ndarray]]:
    return list(loader)


def row_ids(batches: list) -> np.ndarray:
    return np.concatenate([b["row_id"] for b in batches]) if batches else np.array([], np.int64)


# --- determinism --------------------------------------------------------------------------


@pytest.mark.parametrize("shuffle", [True, False])
def test_same_batches_for_1_2_and_8_threads(criteo: Path, shuffle: bool) -> None:
    runs = [
        epoch(stoker.Loader(criteo, columns=COLUMNS, batch_size=1000, shuffle=shuffle, seed=7,
                            shuffle_window=4000, num_threads=t))
        for t in (1, 2, 8)
    ]
    assert_same_batches(runs[0], runs[1])
    assert_same_batches(runs[0], runs[2])


def test_same_batches_whatever_the_threads_read_windows_in(criteo: Path) -> None:
    """The next batch's window is read first and the lookahead after it: which threads fetch
    and decode, and when the lookahead starts, never change a batch (nor a resume)."""
    def loader(threads: int, io_threads: int) -> stoker.Loader:
        return stoker.Loader(criteo, columns=COLUMNS, batch_size=700, seed=5,
                             shuffle_window=3000, num_threads=threads,
                             storage_options={"io_threads": io_threads})

    expected = epoch(loader(1, 1))
    for threads, io_threads in ((2, 16), (8, 3)):
        assert_same_batches(epoch(loader(threads, io_threads)), expected)
    first = loader(1, 1)
    it = iter(first)
    [next(it) for _ in range(5)]
    resumed = loader(8, 3)
    resumed.load_state_dict(first.state_dict())
    assert_same_batches(epoch(resumed), expected[5:])


def test_same_seed_same_run_other_seed_or_epoch_other_order(criteo: Path) -> None:
    def ids(seed: int, epoch_index: int = 0) -> np.ndarray:
        loader = stoker.Loader(criteo, columns=["row_id"], batch_size=512, seed=seed)
        loader.set_epoch(epoch_index)
        return row_ids(epoch(loader))

    np.testing.assert_array_equal(ids(3), ids(3))
    assert not np.array_equal(ids(3), ids(4))
    assert not np.array_equal(ids(3, 0), ids(3, 1))


def test_each_iter_is_the_next_epoch(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=512, seed=1)
    first, second = row_ids(epoch(loader)), row_ids(epoch(loader))
    assert not np.array_equal(first, second)
    loader.set_epoch(1)
    np.testing.assert_array_equal(row_ids(epoch(loader)), second)


def test_values_travel_with_their_row(criteo: Path) -> None:
    table = pq.read_table(criteo, columns=COLUMNS).sort_by("row_id")
    expected = {name: table[name].to_numpy() for name in COLUMNS}
    for batch in stoker.Loader(criteo, columns=COLUMNS, batch_size=999, seed=2):
        ids = batch["row_id"]
        for name in COLUMNS:
            np.testing.assert_array_equal(batch[name], expected[name][ids], err_msg=name)


# --- exact batches and coverage ----------------------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 7, 1000, 1500, 4096, ROWS, ROWS + 5])
@pytest.mark.parametrize("drop_last", [False, True])
def test_exact_batches_cover_every_row_once(criteo: Path, batch_size: int,
                                            drop_last: bool) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=batch_size, seed=5,
                           drop_last=drop_last, shuffle_window=3000)
    batches = epoch(loader)
    assert len(batches) == len(loader)
    sizes = [len(b["row_id"]) for b in batches]
    assert all(size == batch_size for size in sizes[:-1])
    ids = row_ids(batches)
    assert len(np.unique(ids)) == len(ids)
    if drop_last:
        assert len(batches) == ROWS // batch_size
        assert not sizes or sizes[-1] == batch_size
    else:
        assert sizes[-1] == ROWS - batch_size * (len(sizes) - 1)
        np.testing.assert_array_equal(np.sort(ids), np.arange(ROWS))


def test_no_shuffle_is_file_order(criteo: Path) -> None:
    ids = row_ids(epoch(stoker.Loader(criteo, columns=["row_id"], batch_size=777, shuffle=False)))
    np.testing.assert_array_equal(ids, np.arange(ROWS))


def test_shuffle_mixes_across_files(criteo: Path) -> None:
    first = epoch(stoker.Loader(criteo, columns=["row_id"], batch_size=1000, seed=0,
                                shuffle_window=ROWS))[0]["row_id"]
    files = np.unique(first // (ROWS // 4))
    assert len(files) == 4, "a full-dataset window draws the first batch from every file"


@pytest.mark.parametrize("world_size", [2, 3, 7])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_are_disjoint_cover_the_epoch_and_take_equal_steps(criteo: Path, world_size: int,
                                                                 drop_last: bool) -> None:
    per_rank = []
    for rank in range(world_size):
        loader = stoker.Loader(criteo, columns=["row_id"], batch_size=300, seed=9, rank=rank,
                               world_size=world_size, drop_last=drop_last, num_threads=2)
        batches = epoch(loader)
        assert len(batches) == len(loader)
        per_rank.append(row_ids(batches))
    assert len({len(ids) for ids in per_rank}) == 1, "every rank gets the same number of rows"
    assert len({len(epoch_ids) // 300 for epoch_ids in per_rank}) == 1
    everything = np.concatenate(per_rank)
    assert len(np.unique(everything)) == len(everything), "ranks overlap"
    if not drop_last:
        assert ROWS - len(everything) <= world_size - 1


# --- outputs ------------------------------------------------------------------------------


def test_schema_and_len(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["label", "row_id"], batch_size=1000)
    assert loader.schema.names == ["label", "row_id"]
    assert loader.schema.field("row_id").type == pa.int64()
    assert len(loader) == ROWS // 1000


def test_numpy_arrays_own_engine_buffers_aligned(criteo: Path) -> None:
    batch = next(iter(stoker.Loader(criteo, columns=["row_id", "I1"], batch_size=512)))
    for array in batch.values():
        assert isinstance(array, np.ndarray)
        assert array.flags.c_contiguous
        assert array.ctypes.data % 64 == 0, "output buffers are 64-byte aligned"
        assert array.base is not None, "a view of the engine's buffer, not a copy"
    assert batch["I1"].dtype == np.float32


def test_fixed_size_lists_become_2d(embeddings: Path) -> None:
    table = pq.read_table(embeddings).sort_by("row_id")
    expected = table["embedding"].combine_chunks().flatten().to_numpy().reshape(-1, 8)
    for batch in stoker.Loader(embeddings, batch_size=256, seed=1):
        assert batch["embedding"].shape == (len(batch["row_id"]), 8)
        np.testing.assert_array_equal(batch["embedding"], expected[batch["row_id"]])


def test_torch_output_is_zero_copy_tensors(embeddings: Path) -> None:
    torch = pytest.importorskip("torch")
    loader = stoker.Loader(embeddings, columns=["row_id", "embedding"], batch_size=100,
                           output="torch", seed=1)
    batches = list(loader)
    assert all(isinstance(t, torch.Tensor) for b in batches for t in b.values())
    assert batches[0]["embedding"].shape == (100, 8)
    assert batches[0]["embedding"].dtype == torch.float32
    np_batches = list(stoker.Loader(embeddings, columns=["row_id", "embedding"], batch_size=100,
                                    output="numpy", seed=1))
    for t, n in zip(batches, np_batches):
        np.testing.assert_array_equal(t["row_id"].numpy(), n["row_id"])
        np.testing.assert_array_equal(t["embedding"].numpy(), n["embedding"])
    # Tensors outlive the loader and its workers: the buffer is owned by the tensor.
    kept = batches[3]["embedding"]
    expected = kept.clone()
    del loader, batches
    gc.collect()
    assert torch.equal(kept, expected)


def test_arrow_output_keeps_every_type_and_nulls(mixed: Path) -> None:
    table = pq.read_table(mixed)
    loader = stoker.Loader(mixed, batch_size=128, output="arrow", seed=4)
    batches = list(loader)
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    got = pa.Table.from_batches(batches).sort_by("row_id")
    assert got.schema.equals(table.schema.remove_metadata())
    assert got.equals(table.replace_schema_metadata(None))


@pytest.mark.parametrize("statistics", [True, False])
def test_arrow_output_keeps_nulls_of_a_later_row_group(tmp_path: Path, statistics: bool) -> None:
    # Columns whose statistics prove them null-free in every row group are gathered without
    # validity; one null in the last row group of the last file keeps its column out of that.
    n = 600
    for i in range(3):
        ids = np.arange(i * n, (i + 1) * n)
        y = pa.array([None if k == 3 * n - 1 else float(k) for k in ids], pa.float32())
        table = pa.table({"row_id": ids, "x": ids.astype(np.int32), "y": y,
                          "z": (ids % 7 == 0)})
        pq.write_table(table, tmp_path / f"part-{i}.parquet", row_group_size=200,
                       write_statistics=statistics)
    expected = pq.read_table(tmp_path).replace_schema_metadata(None)
    for threads in (1, 3):
        got = pa.Table.from_batches(list(stoker.Loader(
            tmp_path, batch_size=64, output="arrow", seed=2, num_threads=threads)))
        got = got.sort_by("row_id")
        assert got["y"].null_count == 1
        assert got.equals(expected)


def test_bool_column_becomes_bool_array(mixed: Path) -> None:
    for batch in stoker.Loader(mixed, columns=["row_id", "flag"], batch_size=100):
        assert batch["flag"].dtype == np.bool_
        np.testing.assert_array_equal(batch["flag"], batch["row_id"] % 3 == 0)


# --- sources ------------------------------------------------------------------------------


def test_file_glob_and_list_sources(criteo: Path) -> None:
    files = sorted(str(p) for p in criteo.glob("*.parquet"))
    by_dir = row_ids(epoch(stoker.Loader(criteo, columns=["row_id"], batch_size=500,
                                         shuffle=False)))
    by_glob = row_ids(epoch(stoker.Loader(str(criteo / "part-*.parquet"), columns=["row_id"],
                                          batch_size=500, shuffle=False)))
    by_list = row_ids(epoch(stoker.Loader(files, columns=["row_id"], batch_size=500,
                                          shuffle=False)))
    one = row_ids(epoch(stoker.Loader(files[1], columns=["row_id"], batch_size=500,
                                      shuffle=False)))
    np.testing.assert_array_equal(by_dir, by_glob)
    np.testing.assert_array_equal(by_dir, by_list)
    np.testing.assert_array_equal(one, np.arange(ROWS // 4, ROWS // 2))
    assert stoker.Loader(criteo, batch_size=10).dataset_info()["files"] == files


# --- clean stop ---------------------------------------------------------------------------


def native_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_break_and_delete_mid_epoch_stop_the_workers(criteo: Path) -> None:
    # Warm up: Arrow's shared I/O pool starts its threads on first use and keeps them.
    list(stoker.Loader(criteo, batch_size=4096, num_threads=4))
    before, native_before = threading.active_count(), native_threads()
    for _ in range(20):
        loader = stoker.Loader(criteo, batch_size=64, num_threads=4, seed=1)
        for i, _batch in enumerate(loader):
            if i == 2:
                break
        del loader
    gc.collect()
    assert threading.active_count() == before
    # The engine's native workers are joined too (Python's count does not see them).
    assert native_threads() == native_before


def test_exception_in_training_loop_leaves_loader_usable(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=1000, seed=3)
    with pytest.raises(RuntimeError, match="training step failed"):
        for _ in loader:
            raise RuntimeError("training step failed")
    assert len(row_ids(epoch(loader))) == ROWS


def run_script(script: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=120, check=False, **kwargs)


def test_interpreter_exit_mid_epoch_is_clean(criteo: Path) -> None:
    result = run_script(f"""
        import stoker
        loader = stoker.Loader({str(criteo)!r}, batch_size=64, num_threads=4)
        it = iter(loader)
        next(it)
        print("exiting with an epoch in flight")
    """)
    assert result.returncode == 0, result.stderr
    assert "exiting" in result.stdout


def test_ctrl_c_interrupts_a_waiting_consumer(tmp_path: Path, criteo: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import signal, sys, stoker
        # Python's own handler, even when this job was started with SIGINT ignored (the
        # background of a non-interactive shell), which a Python started so would keep.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        loader = stoker.Loader({str(criteo)!r}, batch_size=8, num_threads=1, prefetch=1)
        print("ready", flush=True)
        try:
            while True:
                for batch in loader:
                    pass
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(3)
    """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 3, err
    assert "interrupted" in out


# --- errors -------------------------------------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope"):
        stoker.Loader(tmp_path / "nope", batch_size=10)


def test_directory_without_parquet(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("hi")
    with pytest.raises(ValueError, match=r"no \*\.parquet"):
        stoker.Loader(tmp_path, batch_size=10)


def test_glob_matching_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="matches no file"):
        stoker.Loader(str(tmp_path / "*.parquet"), batch_size=10)


def test_not_parquet_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "fake.parquet").write_bytes(b"PAR1 certainly not parquet")
    with pytest.raises(ValueError, match="fake.parquet.*not a parquet file"):
        stoker.Loader(tmp_path, batch_size=10)


def test_truncated_file_names_the_file(tmp_path: Path, criteo: Path) -> None:
    source = min(criteo.glob("*.parquet"))
    data = source.read_bytes()
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="cut.parquet"):
        stoker.Loader(tmp_path, batch_size=10)


def test_truncated_data_pages_fail_mid_epoch_naming_file_and_row_group(tmp_path: Path,
                                                                       criteo: Path) -> None:
    # Footer intact, a data page overwritten: the error surfaces when the row group is read.
    source = min(criteo.glob("*.parquet"))
    data = bytearray(source.read_bytes())
    data[100:40_000] = bytes(39_900)
    (tmp_path / "rotten.parquet").write_bytes(bytes(data))
    loader = stoker.Loader(tmp_path, batch_size=100, shuffle=False)
    with pytest.raises((OSError, ValueError), match=r"rotten\.parquet.*row group 0"):
        list(loader)


def test_schemas_that_disagree_name_both_files_and_the_column(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": pa.array([1.0], pa.float32())}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match=r"'x'.*a\.parquet.*b\.parquet"):
        stoker.Loader(tmp_path, batch_size=10)


def test_missing_column_in_a_later_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1], "y": [2]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [1]}), tmp_path / "b.parquet")
    with pytest.raises(KeyError, match=r"'y'.*b\.parquet"):
        stoker.Loader(tmp_path, columns=["x", "y"], batch_size=10)


def test_unknown_column_lists_the_available_ones(criteo: Path) -> None:
    with pytest.raises(KeyError, match="available columns: row_id, label"):
        stoker.Loader(criteo, columns=["row_id", "nope"], batch_size=10)


@pytest.mark.parametrize("column", ["name", "ts"])
def test_types_tensors_cannot_hold_say_which_output_can(mixed: Path, column: str) -> None:
    with pytest.raises(TypeError, match=rf"'{column}'.*output=\"arrow\""):
        stoker.Loader(mixed, columns=[column], batch_size=10)
    stoker.Loader(mixed, columns=[column], batch_size=10, output="arrow")


@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_nulls_bound_for_tensors_name_the_column(mixed: Path, output: str) -> None:
    if output == "torch":
        pytest.importorskip("torch")
    with pytest.raises(ValueError, match="'maybe' has .*null"):
        stoker.Loader(mixed, columns=["maybe"], batch_size=10, output=output)


def test_nulls_without_statistics_fail_when_read(tmp_path: Path) -> None:
    table = pa.table({"v": pa.array([1.0, None, 3.0])})
    pq.write_table(table, tmp_path / "nostats.parquet", write_statistics=False)
    loader = stoker.Loader(tmp_path, batch_size=2)
    with pytest.raises(ValueError, match=r"'v' has null values in .*nostats\.parquet"):
        list(loader)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"batch_size": 10, "rank": 2, "world_size": 2}, ValueError, "rank"),
    ({"batch_size": 10, "world_size": 0}, ValueError, "world_size"),
    ({"batch_size": 10, "num_threads": 0}, ValueError, "num_threads"),
    ({"batch_size": 10, "prefetch": 0}, ValueError, "prefetch"),
    ({"batch_size": 10, "shuffle_window": 0}, ValueError, "shuffle_window"),
    ({"batch_size": 10, "seed": -1}, ValueError, "seed"),
    ({"batch_size": 10, "output": "pandas"}, ValueError, "output"),
    ({"batch_size": 10, "columns": "row_id"}, TypeError, "columns"),
    ({"batch_size": 10, "columns": ["row_id", "row_id"]}, ValueError, "twice"),
    ({"batch_size": 2.5}, TypeError, "batch_size"),
])
def test_bad_options_name_the_option(criteo: Path, kwargs: dict, error: type,
                                     message: str) -> None:
    with pytest.raises(error, match=message):
        stoker.Loader(criteo, **kwargs)


def test_options_are_keyword_only(criteo: Path) -> None:
    with pytest.raises(TypeError):
        stoker.Loader(criteo, ["row_id"], 10)  # type: ignore[misc]


def test_file_deleted_after_construction_fails_cleanly(tmp_path: Path, criteo: Path) -> None:
    copy = tmp_path / "data"
    shutil.copytree(criteo, copy)
    loader = stoker.Loader(copy, columns=["row_id"], batch_size=100, shuffle=False)
    shutil.rmtree(copy)
    with pytest.raises(OSError, match="part-00000.parquet"):
        list(loader)


# --- stats --------------------------------------------------------------------------------


def test_stats_count_what_was_delivered(criteo: Path) -> None:
    loader = stoker.Loader(criteo, columns=COLUMNS, batch_size=1000)
    list(loader)
    stats = loader.stats()
    assert stats["rows"] == ROWS
    assert stats["batches"] == ROWS // 1000
    assert stats["units_read"] == sum(
        pq.ParquetFile(f).metadata.num_row_groups for f in criteo.glob("*.parquet"))
    assert stats["bytes_read"] > 0
    for key in ("read_seconds", "decode_seconds", "assemble_seconds", "wait_seconds"):
        assert stats[key] >= 0
    assert stats["decode_seconds"] > 0 and stats["assemble_seconds"] > 0


def test_empty_files_and_more_ranks_than_rows(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": pa.array([], pa.int64())}), tmp_path / "a.parquet")
    loader = stoker.Loader(tmp_path, batch_size=4)
    assert len(loader) == 0
    assert list(loader) == []
    pq.write_table(pa.table({"x": pa.array([1, 2, 3], pa.int64())}), tmp_path / "b.parquet")
    assert list(stoker.Loader(tmp_path, batch_size=4, world_size=5, rank=4)) == []
    got = [b["x"] for b in stoker.Loader(tmp_path, batch_size=4, world_size=2, rank=1,
                                         shuffle=False)]
    assert len(got) == 1
    np.testing.assert_array_equal(got[0], [2])
