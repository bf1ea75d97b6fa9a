"""Random transform ops (bernoulli_mask, uniform, randint, dropout): every draw is a pure
function of (seed, epoch, op, row, draw), so the same epoch replays whatever the thread count,
world size, resume or cache state, another epoch draws anew; and the draws follow their
distributions (chi-square and Kolmogorov-Smirnov bounds, computed here: scipy is not a
dependency)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import ROWS, assert_same_batches

RANDOM = [
    {"op": "bernoulli_mask", "column": "mask", "p": 0.3},
    {"op": "uniform", "column": "noise", "low": -1.0, "high": 2.0},
    {"op": "randint", "column": "negatives", "low": 0, "high": 10, "size": 3},
    {"op": "log1p", "column": "I1"},  # after a drawing op: also runs per epoch
]
OPTIONS = {"columns": ["row_id", "I1"], "batch_size": 700, "seed": 11, "shuffle_window": 4500,
           "transforms": RANDOM}
DRAWN = ("mask", "noise", "negatives")


def epoch(loader: stoker.Loader, number: int) -> list[dict]:
    loader.set_epoch(number)
    return list(loader)


def by_row(batches: list[dict]) -> dict[str, dict[int, object]]:
    """Each drawn column as {row_id: value} (lists as tuples)."""
    out: dict[str, dict[int, object]] = {name: {} for name in DRAWN}
    for batch in batches:
        ids = batch["row_id"].tolist()
        for name in DRAWN:
            for row, value in zip(ids, batch[name].tolist()):
                out[name][row] = tuple(value) if isinstance(value, list) else value
    return out


def test_same_epoch_replays_and_other_epochs_draw_anew(criteo: Path) -> None:
    loader = stoker.Loader(criteo, num_threads=1, **OPTIONS)
    first = epoch(loader, 0)
    assert_same_batches(epoch(loader, 0), first)
    assert_same_batches(epoch(stoker.Loader(criteo, num_threads=4, **OPTIONS), 0), first)
    draws0, draws1 = by_row(first), by_row(epoch(loader, 1))
    assert draws0["mask"].keys() == draws1["mask"].keys()  # the same rows, in another order
    for name, chance in (("noise", 0.0), ("negatives", 0.001), ("mask", 0.58)):
        same = sum(draws0[name][r] == draws1[name][r] for r in draws0[name]) / ROWS
        # A row's draws in epoch 1 are independent of epoch 0's: equal only by chance
        # (p^2 + (1-p)^2 = 0.58 for the mask, 10^-3 for three ints, ~0 for floats).
        assert abs(same - chance) < 0.02, (name, same)


def test_world_sizes_draw_the_same_for_each_row(criteo: Path) -> None:
    whole = by_row(epoch(stoker.Loader(criteo, **OPTIONS), 0))
    union: dict[str, dict[int, object]] = {name: {} for name in DRAWN}
    for rank in range(2):
        part = by_row(epoch(stoker.Loader(criteo, rank=rank, world_size=2, **OPTIONS), 0))
        for name in DRAWN:
            assert not union[name].keys() & part[name].keys()
            union[name].update(part[name])
    for name in DRAWN:
        assert len(union[name]) >= ROWS - 1  # at most world_size - 1 rows left out
        assert all(union[name][r] == whole[name][r] for r in union[name]), name


def test_a_resumed_epoch_draws_what_the_uninterrupted_one_did(criteo: Path) -> None:
    expected = epoch(stoker.Loader(criteo, **OPTIONS), 2)
    first = stoker.Loader(criteo, num_threads=3, **OPTIONS)
    first.set_epoch(2)
    it = iter(first)
    head = [next(it) for _ in range(9)]
    state = first.state_dict()
    resumed = stoker.Loader(criteo, num_threads=2, **OPTIONS)
    resumed.load_state_dict(state)
    assert_same_batches(head + list(resumed), expected)


def test_a_warm_cache_draws_like_a_cold_one_in_every_epoch(criteo: Path, tmp_path: Path) -> None:
    """The cache keeps units as they are before the first op that draws, so a warm epoch
    draws afresh for its own epoch number, exactly as a run without a cache."""
    uncached = stoker.Loader(criteo, **OPTIONS)
    expected = [epoch(uncached, e) for e in range(2)]
    cold = stoker.Loader(criteo, cache_dir=tmp_path / "cache", **OPTIONS)
    assert_same_batches(epoch(cold, 0), expected[0])
    assert cold.stats()["cache_hits"] == 0
    warm = stoker.Loader(criteo, cache_dir=tmp_path / "cache", **OPTIONS)
    assert_same_batches(epoch(warm, 1), expected[1])
    assert_same_batches(epoch(warm, 0), expected[0])
    assert warm.stats()["cache_misses"] == 0 and warm.stats()["cache_hits"] > 0


def test_a_key_column_keys_the_draws_whatever_the_rows_position(criteo: Path) -> None:
    """Keyed by row_id, a row draws the same whether or not a filter removed rows before it
    (which moves its position); keyed by position it would not."""
    keyed = [{"op": "uniform", "column": "noise", "low": 0.0, "high": 1.0, "key": "row_id"}]
    options = {"columns": ["row_id"], "batch_size": 1000, "seed": 5, "transforms": keyed}
    everything = {r: v for b in stoker.Loader(criteo, **options)
                  for r, v in zip(b["row_id"].tolist(), b["noise"].tolist())}
    some = stoker.Loader(criteo, filter=pc.field("I1") > 1.0, **options)
    seen = 0
    for batch in some:
        for r, v in zip(batch["row_id"].tolist(), batch["noise"].tolist()):
            assert everything[r] == v
            seen += 1
    assert 1000 < seen < ROWS  # the filter removed rows inside row groups


@pytest.fixture(scope="module")
def lists(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Variable-length lists of 0..19 items, some null."""
    out = tmp_path_factory.mktemp("lists")
    rng = np.random.default_rng(0)
    n = 6000
    items = [None if i % 50 == 0 else list(range(int(k)))
             for i, k in enumerate(rng.integers(0, 20, n))]
    pq.write_table(pa.table({"row_id": np.arange(n), "items": pa.array(items, pa.list_(pa.int32()))}),
                   out / "lists.parquet", row_group_size=1000)
    return out


def test_dropout_drops_each_element_with_probability_p(lists: Path) -> None:
    spec = [{"op": "dropout", "column": "items", "p": 0.25}]
    loader = stoker.Loader(lists, batch_size=500, seed=1, output="arrow", transforms=spec)
    batches = list(loader)
    assert_same_batches(list(stoker.Loader(lists, batch_size=500, seed=1, output="arrow",
                                           num_threads=1, transforms=spec)), batches)
    source = pq.read_table(lists).column("items").to_pylist()
    kept = total = 0
    for batch in batches:
        for row, items in zip(batch.column("row_id").to_pylist(),
                              batch.column("items").to_pylist()):
            original = source[row]
            if original is None:
                assert items is None
                continue
            it = iter(original)
            assert all(x in it for x in items)  # a subsequence, in order
            kept, total = kept + len(items), total + len(original)
    # The kept share is Binomial(total, 0.75) / total: within 5 standard deviations.
    assert abs(kept / total - 0.75) < 5 * math.sqrt(0.75 * 0.25 / total)


# --- distributions ------------------------------------------------------------------------------
# Critical values at significance 0.001, so a correct generator fails about once in a
# thousand runs of a given seed — and the seeds are fixed, so these tests are deterministic.
CHI2_CRITICAL_0_001 = {1: 10.828, 9: 27.877}  # chi-square quantiles 0.999 (standard tables)
KS_COEFFICIENT_0_001 = 1.9495  # sqrt(-ln(0.0005) / 2): D_n > c / sqrt(n) rejects at 0.001


def chi_square(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def ks_uniform(values: np.ndarray, low: float, high: float) -> float:
    """Kolmogorov-Smirnov statistic D_n of `values` against Uniform[low, high)."""
    u = np.sort((values - low) / (high - low))
    n = len(u)
    ranks = np.arange(1, n + 1)
    return float(max((ranks / n - u).max(), (u - (ranks - 1) / n).max()))


def drawn(criteo: Path, spec: list[dict], column: str, seed: int = 11) -> np.ndarray:
    loader = stoker.Loader(criteo, columns=["row_id"], batch_size=5000, seed=seed,
                           transforms=spec)
    return np.concatenate([b[column] for b in loader])


@pytest.mark.parametrize("seed", [0, 11])
def test_randint_passes_a_chi_square_test(criteo: Path, seed: int) -> None:
    values = drawn(criteo, [{"op": "randint", "column": "n", "low": 100, "high": 110,
                             "size": 2}], "n", seed).ravel()
    assert values.min() >= 100 and values.max() < 110
    observed = np.bincount(values - 100, minlength=10)
    statistic = chi_square(observed, np.full(10, len(values) / 10))
    assert statistic < CHI2_CRITICAL_0_001[9], statistic


@pytest.mark.parametrize("seed", [0, 11])
def test_bernoulli_mask_passes_a_chi_square_test(criteo: Path, seed: int) -> None:
    mask = drawn(criteo, [{"op": "bernoulli_mask", "column": "m", "p": 0.15,
                           "dtype": "int8"}], "m", seed)
    assert mask.dtype == np.int8
    ones = int(mask.sum())
    statistic = chi_square(np.array([ones, len(mask) - ones]),
                           np.array([0.15, 0.85]) * len(mask))
    assert statistic < CHI2_CRITICAL_0_001[1], statistic


@pytest.mark.parametrize("seed", [0, 11])
def test_uniform_passes_a_kolmogorov_smirnov_test(criteo: Path, seed: int) -> None:
    values = drawn(criteo, [{"op": "uniform", "column": "u", "low": -3.0, "high": 5.0,
                             "dtype": "float64"}], "u", seed)
    assert values.min() >= -3.0 and values.max() < 5.0
    statistic = ks_uniform(values, -3.0, 5.0)
    assert statistic < KS_COEFFICIENT_0_001 / math.sqrt(len(values)), statistic


def test_bad_random_ops_name_the_op_and_what_is_wrong(criteo: Path) -> None:
    cases = [
        ({"op": "bernoulli_mask", "column": "m", "p": 2}, ValueError, "p must be in"),
        ({"op": "uniform", "column": "I1", "low": 0, "high": 1}, ValueError, "exists already"),
        ({"op": "randint", "column": "n", "low": 5, "high": 5}, ValueError, "low < high"),
        ({"op": "dropout", "column": "I1", "p": 0.1}, TypeError, "variable-length lists"),
        ({"op": "uniform", "column": "u", "low": 0, "high": 1, "key": "nope"}, KeyError,
         "'nope' not found"),
    ]
    for spec, error, message in cases:
        with pytest.raises(error, match=message):
            stoker.Loader(criteo, columns=["row_id", "I1"], batch_size=10, transforms=[spec])


def test_remote_loaders_draw_what_a_local_loader_draws(criteo: Path, servers,
                                                       tmp_path: Path) -> None:
    """`stoker serve` runs the same pipeline: two servers sharing a plan, read by a
    RemoteLoader, deliver the local loader's draws, epoch by epoch."""
    from stoker_devtools.serve import COLUMNS
    from stoker_devtools.serve import OPTIONS as SERVED

    spec = [{"op": "uniform", "column": "noise", "low": 0.0, "high": 1.0},
            {"op": "randint", "column": "negatives", "low": 0, "high": 1000, "size": 2}]
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    locations = [servers("--transforms", str(tmp_path / "spec.json")).location
                 for _ in range(2)]
    remote = stoker.RemoteLoader(locations, **SERVED)
    local = stoker.Loader(criteo, columns=COLUMNS, transforms=spec, **SERVED)
    for number in (0, 1):
        assert_same_batches(epoch(remote, number), epoch(local, number))
