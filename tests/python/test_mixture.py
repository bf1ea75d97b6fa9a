"""Weighted mixtures (docs/mixtures.md): determinism whatever the threads and cache, resume at
points of the first three epochs with upsampling and downsampling, the elastic rule, equal
steps, realized proportions against the weights, stratified batches, per-source stats and the
errors that name the source, column or option."""

from __future__ import annotations

import gc
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from stoker import _core
from stoker.cli import procfs as _procfs

SIZES = {"a": 6000, "b": 3000, "c": 1500}


def _write(directory: Path, src: int, rows: int, id_name: str = "id",
           x_type: pa.DataType | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ids = np.arange(rows, dtype=np.int64)
    table = pa.table({
        id_name: ids,
        "src": pa.array(np.full(rows, src, np.int8)),
        "x": pa.array((ids * 0.5 + src).astype(np.float32)).cast(x_type or pa.float32()),
    })
    for f in range(2):  # two files, row groups of 500
        part = table.slice(f * rows // 2, rows // 2)
        pq.write_table(part, directory / f"part-{f}.parquet", row_group_size=500)
    return directory


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("mixture")
    out = {name: _write(root / name, i, SIZES[name]) for i, name in enumerate(SIZES)}
    # A source whose id column has another name (mapped with rename=).
    out["c_renamed"] = _write(root / "c_renamed", 2, SIZES["c"], id_name="ident")
    out["x_double"] = _write(root / "x_double", 1, 1000, x_type=pa.float64())
    return out


def _mixture(sources: dict[str, Path], *, weights=(0.5, 0.3, 0.2), repeats=(None, None, None),
             **options) -> stoker.Mixture:
    return stoker.Mixture([
        stoker.Source(sources["a"], name="a", weight=weights and weights[0], repeat=repeats[0]),
        stoker.Source(sources["b"], name="b", weight=weights and weights[1], repeat=repeats[1]),
        stoker.Source(sources["c_renamed"], name="c", weight=weights and weights[2],
                      repeat=repeats[2], rename={"ident": "id"}),
    ], **options)


def _loader(mixture: stoker.Mixture, **options) -> stoker.MixtureLoader:
    options = {"batch_size": 256, "seed": 7, "shuffle_window": 1000, "num_threads": 2,
               **options}
    return stoker.Loader(mixture, **options)


def _keys(batches: list) -> list[tuple[int, int]]:
    """(source, id) of every delivered row, in order."""
    out = []
    for batch in batches:
        out.extend(zip(batch["src"].tolist(), batch["id"].tolist()))
    return out


def _epochs(loader, n: int) -> list[list]:
    return [list(loader) for _ in range(n)]


def test_a_mixture_is_a_loader_option(sources):
    loader = _loader(_mixture(sources, epoch_rows=5000))
    assert isinstance(loader, stoker.MixtureLoader)
    assert loader.schema.names == ["id", "src", "x"]
    assert loader.epoch_rows == 5000
    assert loader.source_rows == {"a": 2500, "b": 1500, "c": 1000}
    batches = list(loader)
    assert len(batches) == len(loader) == math.ceil(5000 / 256)
    assert sum(len(b["id"]) for b in batches) == 5000
    # Within a batch, rows are grouped by source in source order.
    for batch in batches:
        assert (np.diff(batch["src"]) >= 0).all()


@pytest.mark.parametrize("threads", [1, 4])
def test_same_seed_same_batches_whatever_the_threads(sources, threads):
    mixture = _mixture(sources, epoch_rows=9000)
    reference = _epochs(_loader(mixture, num_threads=2), 2)
    other = _epochs(_loader(mixture, num_threads=threads), 2)
    for a, b in zip(reference, other):
        assert_same_batches(a, b)
    assert _keys(reference[0]) != _keys(reference[1])  # epochs differ


def test_same_batches_with_a_cold_and_a_warm_cache(sources, tmp_path):
    mixture = _mixture(sources, stop="all")
    reference = _epochs(_loader(mixture), 2)
    cold = _loader(mixture, cache_dir=tmp_path / "cache")
    assert_same_batches(reference[0], list(cold))
    assert_same_batches(reference[1], list(cold))
    warm = _loader(mixture, cache_dir=tmp_path / "cache")
    assert_same_batches(reference[0], list(warm))
    assert sum(s["engine"]["cache_hits"] for s in warm.stats()["sources"]) > 0


def test_other_seed_other_interleaving(sources):
    mixture = _mixture(sources, epoch_rows=3000)
    assert _keys(list(_loader(mixture, seed=7))) != _keys(list(_loader(mixture, seed=8)))


def test_stop_first_delivers_each_row_at_most_once_and_exhausts_one_source(sources):
    loader = _loader(_mixture(sources, stop="first"))
    # Weights 0.5/0.3/0.2 against 6000/3000/1500 rows: c runs out first at 1500 = 0.2 E.
    assert loader.epoch_rows == 7500
    for epoch in range(2):
        keys = _keys(list(loader))
        counts = Counter(keys)
        assert max(counts.values()) == 1, f"a row repeated in epoch {epoch}"
        assert sorted(i for s, i in keys if s == 2) == list(range(1500))


def test_stop_all_upsamples_the_others_until_the_last_is_used_up(sources):
    loader = _loader(_mixture(sources, weights=(1, 1, 1), stop="all"))
    assert loader.epoch_rows == 18000  # a's 6000 rows are a third
    keys = _keys(list(loader))
    by_source = Counter(s for s, _ in keys)
    assert by_source == {0: 6000, 1: 6000, 2: 6000}
    # a once, b twice, c four times: whole passes of each source's own epochs.
    for src, times in ((0, 1), (1, 2), (2, 4)):
        counts = Counter(i for s, i in keys if s == src)
        assert set(counts.values()) == {times}, src


def test_repeat_upsamples_and_downsamples_exactly_once_per_source_epoch(sources):
    # No weights: the epoch is each source's repeat passes.
    loader = _loader(_mixture(sources, weights=None, repeats=(0.5, 1.0, 2.0)))
    assert loader.source_rows == {"a": 3000, "b": 3000, "c": 3000}
    first, second = _keys(list(loader)), _keys(list(loader))
    # c upsampled: every row twice per epoch (two whole epochs of its own). a downsampled:
    # each epoch half of a's rows, each once, another half every epoch.
    for keys in (first, second):
        assert set(Counter(i for s, i in keys if s == 2).values()) == {2}
        assert set(Counter(i for s, i in keys if s == 1).values()) == {1}
        assert len({i for s, i in keys if s == 0}) == 3000
    assert {i for s, i in first if s == 0} != {i for s, i in second if s == 0}


def _resume_cases():
    return [(epoch, at) for epoch in range(3) for at in (1, 5, 11)]


@pytest.mark.parametrize("weights,repeats,stratified", [
    (None, (0.5, 1.0, 2.0), False),   # downsampled a, upsampled c
    ((0.2, 0.3, 0.5), (1.0, 1.0, 3.0), False),
    ((0.5, 0.3, 0.2), (None, 0.5, 2.5), True),
])
def test_resume_in_the_first_three_epochs_continues_exactly(sources, weights, repeats,
                                                            stratified):
    mixture = _mixture(sources, weights=weights, repeats=repeats, stratified=stratified)
    reference = _epochs(_loader(mixture), 4)
    for epoch, at in _resume_cases():
        loader = _loader(mixture)
        loader.set_epoch(epoch)
        iterator = iter(loader)
        for _ in range(at):
            next(iterator)
        state = loader.state_dict()
        iterator.close()
        resumed = _loader(mixture, num_threads=1)
        resumed.load_state_dict(state)
        rest = list(resumed)
        assert_same_batches(rest, reference[epoch][at:])
        assert_same_batches(list(resumed), reference[epoch + 1])


def test_skip_equals_reading_and_discarding(sources):
    mixture = _mixture(sources, weights=None, repeats=(0.5, 1.0, 2.0))
    reference = _epochs(_loader(mixture), 2)
    loader = _loader(mixture)
    loader.skip(len(reference[0]) + 3)
    assert_same_batches(list(loader), reference[1][3:])


def test_ranks_get_equal_steps_and_disjoint_rows(sources):
    mixture = _mixture(sources, stop="first")
    single = _keys(list(_loader(mixture)))
    ranks = [list(_loader(mixture, rank=r, world_size=3)) for r in range(3)]
    assert len({len(batches) for batches in ranks}) == 1
    assert len({len(_loader(mixture, rank=r, world_size=3)) for r in range(3)}) == 1
    together = [key for batches in ranks for key in _keys(batches)]
    assert len(together) == len(set(together)) == 3 * (7500 // 3)
    assert set(together) <= set(single)


def test_elastic_resume_keeps_the_rule(sources):
    """2 ranks checkpoint after k steps; 3 ranks go on: no row twice, at most the rows the two
    splits leave over missing, equal steps."""
    mixture = _mixture(sources, weights=None, repeats=(0.5, 1.0, 2.0))
    epoch_rows = _loader(mixture).epoch_rows
    consumed, state = [], None
    for r in range(2):
        loader = _loader(mixture, rank=r, world_size=2)
        iterator = iter(loader)
        for _ in range(7):
            consumed.extend(_keys([next(iterator)]))
        state = loader.state_dict()
        iterator.close()
    later = []
    for r in range(3):
        loader = _loader(mixture, rank=r, world_size=3)
        loader.load_state_dict(state)
        later.append(list(loader))
    assert len({len(batches) for batches in later}) == 1
    # Positions, not row keys, are unique (c's rows repeat within an epoch): compare the
    # delivered multiset with the whole epoch's.
    delivered = Counter(consumed + [key for batches in later for key in _keys(batches)])
    whole = Counter(_keys(list(_loader(mixture))))
    assert not delivered - whole
    assert sum((whole - delivered).values()) <= (2 - 1) + (3 - 1)
    assert sum(delivered.values()) >= epoch_rows - 3


def _binomial_bound(n: int, p: float) -> float:
    return 5 * math.sqrt(n * p * (1 - p))  # 5 sigma


def test_realized_proportions_are_within_sampling_error_of_the_weights(sources):
    weights = (0.5, 0.3, 0.2)
    loader = _loader(_mixture(sources, weights=weights, epoch_rows=20000), batch_size=500)
    batches = list(loader)
    counts = Counter(s for s, _ in _keys(batches))
    total = sum(counts.values())
    chi2 = sum((counts[s] - total * w) ** 2 / (total * w) for s, w in enumerate(weights))
    assert chi2 < 13.82  # chi-square, 2 degrees of freedom, p = 0.001
    # Locally too: the first 8 batches (4000 positions) against a binomial bound.
    local = Counter(s for s, _ in _keys(batches[:8]))
    for s, w in enumerate(weights):
        assert abs(local[s] - 4000 * w) < _binomial_bound(4000, w), (s, local)
    # Batches differ in their counts (sources interleave at random, not in fixed shares).
    assert len({tuple(np.bincount(b["src"], minlength=3)) for b in batches}) > 1
    stats = loader.stats()
    assert stats["rows_per_source"] == {"a": counts[0], "b": counts[1], "c": counts[2]}
    assert stats["rows"] == total == 20000


def test_stratified_batches_hold_each_sources_rounded_share(sources):
    weights = (0.45, 0.35, 0.2)
    loader = _loader(_mixture(sources, weights=weights, stop="first", stratified=True),
                     batch_size=100)
    share = _core.apportion(100, list(weights), 7)
    assert share == [45, 35, 20]
    batches = list(loader)
    assert len(batches) == 1500 // 20
    for batch in batches:
        assert np.bincount(batch["src"], minlength=3).tolist() == share
    odd = _loader(_mixture(sources, weights=(1, 1, 1), epoch_rows=1000, stratified=True),
                  batch_size=10)
    shares = {tuple(np.bincount(b["src"], minlength=3)) for b in odd}
    assert len(shares) == 1 and sorted(next(iter(shares))) == [3, 3, 4]


def test_stats_report_rows_per_source(sources):
    loader = _loader(_mixture(sources, epoch_rows=4000))
    seen = Counter(s for s, _ in _keys(list(loader)))
    stats = loader.stats()
    assert stats["rows_per_source"] == {"a": seen[0], "b": seen[1], "c": seen[2]}
    assert [s["rows_per_epoch"] for s in stats["sources"]] == [2000, 1200, 800]
    assert stats["batches"] == len(loader)
    # The sources share the mixture's shuffle_window (1000) by their share of the epoch.
    assert [s["shuffle_window"] for s in stats["sources"]] == [500, 300, 200]


def _workers() -> int:
    """The engine's worker threads alive in this process, counted by name."""
    return sum(name == "stoker-worker" for name in _procfs.thread_names().values())


def test_num_threads_is_the_total_all_sources_share(sources):
    gc.collect()
    before = _workers()
    # prefetch=1 and 63 batches: the epoch is still being gathered while the threads are
    # counted (its pool goes once the last batch is gathered).
    loader = _loader(_mixture(sources, epoch_rows=4000), batch_size=64, num_threads=3,
                     prefetch=1)
    epoch = iter(loader)
    next(epoch)
    # One pool of 3 for the epoch, not 3 for each of the 3 sources' engines.
    assert _workers() - before == 3
    assert loader.stats()["threads"] == 3
    assert sum(1 for _ in epoch) == len(loader) - 1


def test_per_source_filter_columns_and_arrow_output(sources):
    mixture = stoker.Mixture([
        stoker.Source(sources["a"], name="a", weight=1, columns=["id", "src"],
                      filter=pc.field("id") < 1000),
        stoker.Source(sources["b"], name="b", weight=1, columns=["src", "id"]),
    ], stop="first")
    loader = _loader(mixture, output="arrow")
    batches = list(loader)
    assert all(isinstance(b, pa.RecordBatch) for b in batches)
    table = pa.Table.from_batches(batches)
    assert table.schema.names == ["id", "src"]
    a_ids = table.filter(pc.equal(table["src"], 0))["id"].to_pylist()
    assert sorted(a_ids) == list(range(1000))


def test_mismatched_schemas_name_the_source_and_column(sources):
    missing = stoker.Mixture([stoker.Source(sources["a"], name="a", weight=1),
                              stoker.Source(sources["c_renamed"], name="c", weight=1)])
    with pytest.raises(ValueError, match="source 'c' has no column 'id'"):
        _loader(missing)
    typed = stoker.Mixture([stoker.Source(sources["a"], name="a", weight=1),
                            stoker.Source(sources["x_double"], name="d", weight=1)])
    with pytest.raises(ValueError, match="source 'd' column 'x' is double"):
        _loader(typed)


def test_bad_weights_and_options_name_the_option(sources):
    with pytest.raises(ValueError, match="source 'a': weight must be finite and > 0"):
        stoker.Source(sources["a"], name="a", weight=0)
    with pytest.raises(ValueError, match="repeat must be finite and > 0"):
        stoker.Source(sources["a"], repeat=-1.0)
    with pytest.raises(ValueError, match="weight or none"):
        stoker.Mixture([stoker.Source(sources["a"], name="a", weight=1),
                        stoker.Source(sources["b"], name="b")])
    with pytest.raises(ValueError, match="epoch_rows or stop"):
        _mixture(sources, epoch_rows=10, stop="all")
    with pytest.raises(ValueError, match="stop must be one of"):
        _mixture(sources, stop="any")
    with pytest.raises(ValueError, match="source 'c' gets no row"):
        _loader(_mixture(sources, weights=(1, 1, 1e-9), epoch_rows=1000))
    with pytest.raises(ValueError, match="share of a batch of 10 rows rounds to 0"):
        _loader(_mixture(sources, weights=(1, 1, 0.01), stop="first", stratified=True),
                batch_size=10)
    with pytest.raises(ValueError, match="filter= is per source"):
        _loader(_mixture(sources, epoch_rows=10), filter=pc.field("id") > 3)
    with pytest.raises(ValueError, match="on_error= is not supported with a Mixture"):
        _loader(_mixture(sources, epoch_rows=10), on_error="skip")
    for name, value in [("codecs", [{"column": "x", "codec": "ndarray"}]),
                        ("partitioning", "hive"), ("autotune", {"target_stall": 0.1})]:
        with pytest.raises(ValueError, match=f"^{name}= is not supported with a Mixture"):
            _loader(_mixture(sources, epoch_rows=10), **{name: value})


def test_an_empty_source_is_an_error_naming_it(sources):
    mixture = stoker.Mixture([
        stoker.Source(sources["a"], name="a", weight=1),
        stoker.Source(sources["b"], name="b", weight=1, filter=pc.field("id") < 0),
    ])
    with pytest.raises(ValueError, match="source 'b' has no rows matching its filter"):
        _loader(mixture)
    with pytest.raises(FileNotFoundError, match="mixture source 'nowhere'"):
        _loader(stoker.Mixture([stoker.Source(sources["a"].parent / "nowhere",
                                              name="nowhere", weight=1)]))


def test_a_sources_transforms_are_part_of_the_mixtures_identity(sources):
    def mixture(transforms):
        return stoker.Mixture([
            stoker.Source(sources["a"], weight=2, transforms=transforms),
            stoker.Source(sources["b"], weight=1)], epoch_rows=3000)

    clip = [{"op": "clip", "column": "x", "min": 0, "max": 100}]
    state = _loader(mixture(clip)).state_dict()
    _loader(mixture(clip)).load_state_dict(state)
    with pytest.raises(ValueError, match="the filter differs"):
        _loader(mixture([{"op": "clip", "column": "x", "min": 0, "max": 50}])
                ).load_state_dict(state)
    with pytest.raises(ValueError, match="the filter differs"):
        _loader(mixture(None)).load_state_dict(state)


def test_a_state_of_another_mixture_is_refused(sources):
    state = _loader(_mixture(sources, epoch_rows=4000)).state_dict()
    with pytest.raises(ValueError, match="does not match"):
        _loader(_mixture(sources, epoch_rows=5000)).load_state_dict(state)
    single = stoker.Loader(sources["a"], batch_size=256)
    with pytest.raises(ValueError, match="does not match"):
        single.load_state_dict(state)
