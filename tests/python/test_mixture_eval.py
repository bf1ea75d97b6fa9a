"""A mixture in evaluation mode (docs/mixtures.md, "Evaluation"): the mixture's positions shared
among ranks as a Loader's rows are in mode="eval" (contiguous shares that differ by at most one
row, none left out, none read twice), with pad_to_equal_steps' full batches and `_valid` mask,
exact resume at the same and at another world size, and the options it refuses."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches

# Odd sizes: no world size below 5 divides the epoch (1,754 rows).
SIZES = {"a": 1001, "b": 503, "c": 250}
BATCH = 64


def _write(directory: Path, src: int, rows: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ids = np.arange(rows, dtype=np.int64)
    table = pa.table({"id": ids, "src": pa.array(np.full(rows, src, np.int8)),
                      "x": pa.array((ids * 0.5 + src).astype(np.float32))})
    pq.write_table(table, directory / "part-0.parquet", row_group_size=100)
    return directory


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mixture-eval")
    return {name: _write(root / name, i, rows) for i, (name, rows) in enumerate(SIZES.items())}


def _mixture(sources: dict[str, Path], **options) -> stoker.Mixture:
    """Without weights: an epoch is every row of every source once, what an evaluation wants."""
    return stoker.Mixture([stoker.Source(sources[name], name=name) for name in SIZES], **options)


def _loader(mixture: stoker.Mixture, **options) -> stoker.MixtureLoader:
    options = {"batch_size": BATCH, "seed": 3, "shuffle_window": 300, "num_threads": 2,
               "mode": "eval", **options}
    return stoker.Loader(mixture, **options)


def _keys(batches: list, *, real_only: bool = False) -> list[tuple[int, int]]:
    """(source, id) of every delivered row, in order (only the real ones with real_only)."""
    out = []
    for batch in batches:
        src, ids = np.asarray(batch["src"]), np.asarray(batch["id"])
        if real_only:
            valid = np.asarray(batch["_valid"])
            src, ids = src[valid], ids[valid]
        out.extend(zip(src.tolist(), ids.tolist()))
    return out


EVERY_ROW = Counter((src, i) for src, rows in enumerate(SIZES.values()) for i in range(rows))


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_ranks_share_every_row_exactly_once(sources, shuffle, world_size):
    mixture = _mixture(sources)
    single = _keys(list(_loader(mixture, shuffle=shuffle)))
    assert Counter(single) == EVERY_ROW
    ranks = [list(_loader(mixture, shuffle=shuffle, rank=r, world_size=world_size))
             for r in range(world_size)]
    # Contiguous shares of the one epoch's positions: together, every row once. (Within a
    # batch rows are grouped by source, so the order follows the ranks' batch boundaries.)
    assert Counter(key for batches in ranks for key in _keys(batches)) == EVERY_ROW
    shares = [len(_keys(batches)) for batches in ranks]
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)
    for r, batches in enumerate(ranks):
        assert len(_loader(mixture, shuffle=shuffle, rank=r, world_size=world_size)) == \
            len(batches)


def test_training_leaves_rows_out_where_evaluation_does_not(sources):
    mixture = _mixture(sources)
    train = [key for r in range(3)
             for key in _keys(list(_loader(mixture, mode="train", rank=r, world_size=3)))]
    assert len(train) == 3 * (sum(SIZES.values()) // 3) < sum(SIZES.values())


@pytest.mark.parametrize("world_size", [2, 3])
def test_padding_gives_equal_full_batches_and_marks_the_copies(sources, world_size):
    mixture = _mixture(sources)
    single = _keys(list(_loader(mixture)))
    ranks = [list(_loader(mixture, rank=r, world_size=world_size, pad_to_equal_steps=True))
             for r in range(world_size)]
    steps = math.ceil(math.ceil(len(single) / world_size) / BATCH)
    assert all(len(batches) == steps for batches in ranks)
    assert all(len(batch["id"]) == BATCH for batches in ranks for batch in batches)
    assert Counter(key for batches in ranks for key in _keys(batches, real_only=True)) == \
        Counter(single)
    for batches in ranks:
        real = _keys(batches, real_only=True)
        padding = [key for key, valid in zip(_keys(batches),
                                             np.concatenate([b["_valid"] for b in batches]))
                   if not valid]
        # Copies of one row: the one at the last position of the rank's share (a Loader's
        # rule), which is among its real rows (within a batch rows are grouped by source, so
        # not necessarily the last one delivered).
        assert padding and len(set(padding)) == 1 and padding[0] in real


def test_a_rank_with_no_rows_pads_with_the_row_before_its_share(tmp_path):
    tiny = {name: _write(tmp_path / name, i, 1) for i, name in enumerate(("a", "b"))}
    mixture = stoker.Mixture([stoker.Source(tiny[n], name=n) for n in ("a", "b")])
    single = _keys(list(_loader(mixture)))
    ranks = [list(_loader(mixture, rank=r, world_size=4, pad_to_equal_steps=True))
             for r in range(4)]
    assert [len(batches) for batches in ranks] == [1, 1, 1, 1]
    assert Counter(key for batches in ranks for key in _keys(batches, real_only=True)) == \
        Counter(single)
    # Ranks 2 and 3 have no share: they pad with the row before it, rank 1's only row.
    [last] = _keys(ranks[1], real_only=True)
    assert set(_keys(ranks[2])) == set(_keys(ranks[3])) == {last}
    assert not np.asarray(ranks[3][0]["_valid"]).any()
    # Without padding the empty ranks deliver nothing (and say so by their length).
    assert [len(_loader(mixture, rank=r, world_size=4)) for r in range(4)] == [1, 1, 0, 0]


@pytest.mark.parametrize("pad", [False, True])
def test_resume_at_the_same_world_size_continues_exactly(sources, pad):
    mixture = _mixture(sources)
    for rank in range(3):
        whole = list(_loader(mixture, rank=rank, world_size=3, pad_to_equal_steps=pad))
        loader = _loader(mixture, rank=rank, world_size=3, pad_to_equal_steps=pad)
        iterator = iter(loader)
        head = [next(iterator) for _ in range(4)]
        state = loader.state_dict()
        iterator.close()
        resumed = _loader(mixture, rank=rank, world_size=3, pad_to_equal_steps=pad)
        resumed.load_state_dict(state)
        assert_same_batches(head + list(resumed), whole)


@pytest.mark.parametrize(("before", "after"), [(2, 3), (3, 2), (4, 1)])
@pytest.mark.parametrize("pad", [False, True])
def test_elastic_resume_delivers_every_row_exactly_once(sources, before, after, pad):
    mixture = _mixture(sources)
    consumed, state = [], None
    for r in range(before):  # lock-stepped ranks, three steps each; rank 0's state is saved
        loader = _loader(mixture, rank=r, world_size=before, pad_to_equal_steps=pad)
        iterator = iter(loader)
        consumed.extend(_keys([next(iterator) for _ in range(3)], real_only=pad))
        if r == 0:
            state = loader.state_dict()
        iterator.close()
    later = []
    for r in range(after):
        loader = _loader(mixture, rank=r, world_size=after, pad_to_equal_steps=pad)
        loader.load_state_dict(state)
        batches = list(loader)
        assert len(loader) == 0 or len(batches) > 0
        later.extend(_keys(batches, real_only=pad))
    assert Counter(consumed + later) == EVERY_ROW


def test_arrow_and_torch_outputs_carry_the_mask(sources):
    torch = pytest.importorskip("torch")
    mixture = _mixture(sources)
    arrow = list(_loader(mixture, rank=1, world_size=3, pad_to_equal_steps=True, output="arrow"))
    loader = _loader(mixture, rank=1, world_size=3, pad_to_equal_steps=True, output="torch")
    assert loader.schema.names == ["id", "src", "x", "_valid"]
    assert all(batch.schema.names == loader.schema.names for batch in arrow)
    tensors = list(loader)
    for a, t in zip(arrow, tensors):
        assert t["_valid"].dtype == torch.bool
        assert t["_valid"].tolist() == a.column("_valid").to_pylist()
        assert t["id"].tolist() == a.column("id").to_pylist()


def test_the_mode_is_part_of_the_mixtures_identity(sources):
    mixture = _mixture(sources)
    loader = _loader(mixture, rank=0, world_size=2)
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    iterator.close()
    assert state["mode"] == "eval"
    with pytest.raises(ValueError, match="mode"):
        _loader(mixture, mode="train", rank=0, world_size=2).load_state_dict(state)
    with pytest.raises(ValueError, match="pad_to_equal_steps"):
        _loader(mixture, rank=0, world_size=2, pad_to_equal_steps=True).load_state_dict(state)


def test_refusals_name_the_options(sources):
    mixture = _mixture(sources)
    with pytest.raises(ValueError, match="drop_last cannot be set with mode='eval'"):
        _loader(mixture, drop_last=True)
    with pytest.raises(ValueError, match="pad_to_equal_steps needs mode='eval'"):
        _loader(mixture, mode="train", pad_to_equal_steps=True)
    with pytest.raises(ValueError, match="mode must be 'train' or 'eval'"):
        _loader(mixture, mode="test")
    stratified = stoker.Mixture([stoker.Source(sources[n], name=n, weight=1) for n in SIZES],
                                stratified=True)
    with pytest.raises(ValueError, match="mode='eval' cannot be used with a stratified Mixture"):
        _loader(stratified)
    with pytest.raises(ValueError, match="with_row_origin= is not supported with a Mixture"):
        _loader(mixture, with_row_origin=True)
