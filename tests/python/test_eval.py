"""Exactly-once evaluation (mode="eval"): every row once across 1-5 ranks for row counts that
do not divide, padding to equal steps with a mask, row origins that join back to the input,
and resume."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches

# Three files of uneven length and row groups: 1831 rows, a prime, so no world size divides it.
FILE_ROWS = (1009, 521, 301)
TOTAL = sum(FILE_ROWS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Files whose `id` column numbers the dataset's rows 0 .. TOTAL - 1 in dataset order."""
    out = tmp_path_factory.mktemp("eval")
    start = 0
    for i, rows in enumerate(FILE_ROWS):
        ids = np.arange(start, start + rows, dtype=np.int64)
        table = pa.table({"id": ids, "x": (ids * 0.5).astype(np.float32)})
        pq.write_table(table, out / f"part-{i}.parquet", row_group_size=97 + 13 * i)
        start += rows
    return out


def read_ranks(dataset: Path, world: int, **options) -> list[list[dict]]:
    options = {"shuffle": False, **options}
    return [list(stoker.Loader(dataset, mode="eval", rank=rank, world_size=world,
                               with_row_origin=True, num_threads=2, **options))
            for rank in range(world)]


def real_rows(batches: list[dict]) -> dict[str, np.ndarray]:
    """The rank's real rows (padding removed), columns concatenated."""
    out = {name: np.concatenate([b[name] for b in batches]) if batches else np.array([])
           for name in ("id", "_file_index", "_row_in_file")}
    if batches and "_valid" in batches[0]:
        valid = np.concatenate([b["_valid"] for b in batches])
        assert valid.dtype == np.bool_
        out = {name: values[valid] for name, values in out.items()}
    return out


def file_start(index: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(FILE_ROWS)])[index]


@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("batch_size", [1, 7, 64, 500])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_ranks_together_deliver_every_row_once(dataset: Path, world: int, batch_size: int,
                                               pad: bool) -> None:
    ranks = read_ranks(dataset, world, batch_size=batch_size, pad_to_equal_steps=pad)
    reals = [real_rows(batches) for batches in ranks]
    # By value: every id once.
    ids = np.concatenate([r["id"] for r in reals])
    assert sorted(ids.tolist()) == list(range(TOTAL))
    # By origin: every (file, row) once, and it names the row the value came from.
    origins = Counter(zip(*(np.concatenate([r[k] for r in reals]).tolist()
                            for k in ("_file_index", "_row_in_file"))))
    assert len(origins) == TOTAL and set(origins.values()) == {1}
    for r in reals:
        np.testing.assert_array_equal(file_start(r["_file_index"]) + r["_row_in_file"], r["id"])
    # Contiguous shares in rank order, the larger ones first.
    sizes = [len(r["id"]) for r in reals]
    assert sizes == [TOTAL // world + (rank < TOTAL % world) for rank in range(world)]
    starts = np.cumsum([0, *sizes[:-1]])
    for r, start, size in zip(reals, starts, sizes):
        np.testing.assert_array_equal(r["id"], np.arange(start, start + size))
    steps = [len(batches) for batches in ranks]
    if pad:
        assert len(set(steps)) == 1
        for batches in ranks:
            assert all(len(b["id"]) == batch_size for b in batches)
            valid = np.concatenate([b["_valid"] for b in batches])
            ids = np.concatenate([b["id"] for b in batches])
            # Padding only at the end, and it repeats the rank's last real row.
            real = int(valid.sum())
            assert not valid[real:].any()
            if real > 0:
                assert (ids[real:] == ids[real - 1]).all()
    else:
        assert max(steps) - min(steps) <= 1
        for batches in ranks:
            assert "_valid" not in batches[0]


@pytest.mark.parametrize("world", [2, 5])
def test_shuffled_evaluation_is_still_exactly_once(dataset: Path, world: int) -> None:
    ranks = read_ranks(dataset, world, batch_size=64, shuffle=True, seed=3, shuffle_window=300,
                       pad_to_equal_steps=True)
    ids = np.concatenate([real_rows(batches)["id"] for batches in ranks])
    assert sorted(ids.tolist()) == list(range(TOTAL))
    assert not np.array_equal(ids, np.arange(TOTAL))  # it did shuffle


def test_length_counts_each_ranks_batches(dataset: Path) -> None:
    for pad in (False, True):
        for rank in range(4):
            loader = stoker.Loader(dataset, batch_size=100, mode="eval", rank=rank,
                                   world_size=4, pad_to_equal_steps=pad, shuffle=False)
            assert len(loader) == len(list(loader))
    # 1831 rows over 4 ranks: 458, 458, 458, 457; at 229 rows a batch, the last rank needs 2
    # batches, the others 2 too; at 458 one batch each.
    assert [len(stoker.Loader(dataset, batch_size=229, mode="eval", rank=r, world_size=4))
            for r in range(4)] == [2, 2, 2, 2]


def test_training_mode_leaves_rows_out_evaluation_does_not(dataset: Path) -> None:
    train = [stoker.Loader(dataset, batch_size=100, rank=r, world_size=5, shuffle=False)
             for r in range(5)]
    assert sum(sum(len(b["id"]) for b in loader) for loader in train) == TOTAL - TOTAL % 5


def test_row_origin_joins_back_to_the_input_files(dataset: Path) -> None:
    loader = stoker.Loader(dataset, batch_size=128, mode="eval", shuffle=True, seed=9,
                           with_row_origin=True, output="arrow")
    assert loader.files == sorted(str(p) for p in dataset.glob("*.parquet"))
    assert loader.schema.names == ["id", "x", "_file_index", "_row_in_file"]
    tables = [pq.read_table(path) for path in loader.files]
    for batch in loader:
        for file_index, row, value in zip(*(batch.column(k).to_pylist()
                                            for k in ("_file_index", "_row_in_file", "x"))):
            assert tables[file_index].column("x")[row].as_py() == value


def test_evaluation_is_the_same_whatever_the_threads(dataset: Path) -> None:
    def run(threads: int) -> list:
        return list(stoker.Loader(dataset, batch_size=50, mode="eval", rank=1, world_size=3,
                                  pad_to_equal_steps=True, with_row_origin=True,
                                  num_threads=threads, seed=4, shuffle_window=250))
    assert_same_batches(run(1), run(3))


@pytest.mark.parametrize("stop_after", [1, 3, 9])
@pytest.mark.parametrize("pad", [False, True])
def test_resume_in_evaluation_continues_exactly(dataset: Path, stop_after: int,
                                                pad: bool) -> None:
    def loader(rank: int) -> stoker.Loader:
        return stoker.Loader(dataset, batch_size=64, mode="eval", rank=rank, world_size=3,
                             pad_to_equal_steps=pad, with_row_origin=True, shuffle=False)
    for rank in range(3):
        whole = list(loader(rank))
        first = loader(rank)
        it = iter(first)
        head = [next(it) for _ in range(stop_after)]
        state = first.state_dict()
        it.close()
        assert state["mode"] == "eval" and state["pad_to_equal_steps"] is pad
        second = loader(rank)
        second.load_state_dict(state)
        assert_same_batches(head + list(second), whole)


def test_a_training_state_does_not_load_into_evaluation(dataset: Path) -> None:
    train = stoker.Loader(dataset, batch_size=64, shuffle=False)
    state = train.state_dict()
    evaluation = stoker.Loader(dataset, batch_size=64, shuffle=False, mode="eval")
    with pytest.raises(ValueError, match="mode differs"):
        evaluation.load_state_dict(state)
    # A state written before evaluation mode existed (no "mode" key) is a training state.
    old = {k: v for k, v in state.items() if k not in ("mode", "pad_to_equal_steps")}
    stoker.Loader(dataset, batch_size=64, shuffle=False).load_state_dict(old)


@pytest.mark.parametrize(("options", "message"), [
    ({"mode": "test"}, "mode must be 'train' or 'eval', got 'test'"),
    ({"mode": "eval", "drop_last": True}, "drop_last cannot be set with mode='eval'"),
    ({"pad_to_equal_steps": True}, "pad_to_equal_steps needs mode='eval'"),
    ({"with_row_origin": True, "filter": pc.field("id") > 3},
     "with_row_origin cannot be used with a filter"),
])
def test_evaluation_options_are_checked(dataset: Path, options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stoker.Loader(dataset, batch_size=8, **options)


def test_a_column_named_like_a_plan_column_is_refused(tmp_path: Path) -> None:
    pq.write_table(pa.table({"_valid": [1, 2, 3]}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match="has a column named '_valid'"):
        stoker.Loader(tmp_path, batch_size=2, mode="eval", pad_to_equal_steps=True)
    stoker.Loader(tmp_path, batch_size=2, mode="eval")  # no mask asked for: no clash
