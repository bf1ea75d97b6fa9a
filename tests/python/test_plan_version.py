"""Plan versions (docs/shuffle.md, "Plan versions"): each version a full shuffle of its own,
version 1 still the order of every release before versions existed (golden orders), a saved
state and a served stream keeping to their version, and a version out of range refused by
name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from stoker import _core
from stoker_devtools.serve import COLUMNS
from stoker_devtools.serve import OPTIONS as SERVED

ROWS = 20_000
# Windows of 5 row groups, 5,000 rows: 13 bits, where the versions' networks differ (version 1
# walks a 14-bit domain, version 2 a 13-bit one); 20 row groups, 5 bits: the unit order too.
OPTIONS = {"columns": ["row_id"], "batch_size": 1000, "seed": 7, "shuffle_window": 5000}


@pytest.fixture(scope="module")
def ids(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan_version")
    pq.write_table(pa.table({"row_id": np.arange(ROWS, dtype=np.int64)}), out / "ids.parquet",
                   row_group_size=1000)
    return out


def order(source: Path, epoch: int = 0, **options: object) -> np.ndarray:
    loader = stoker.Loader(source, **{**OPTIONS, **options})
    loader.set_epoch(epoch)
    return np.concatenate([b["row_id"] for b in loader])


def test_each_version_shuffles_every_row_once_and_the_same_way_every_time(ids: Path) -> None:
    orders = {}
    for version in (1, 2):
        orders[version] = order(ids, plan_version=version, num_threads=2)
        np.testing.assert_array_equal(np.sort(orders[version]), np.arange(ROWS))
        np.testing.assert_array_equal(orders[version],
                                      order(ids, plan_version=version, num_threads=1))
        assert not np.array_equal(orders[version], order(ids, epoch=1, plan_version=version))
    assert not np.array_equal(orders[1], orders[2])
    # Without a shuffle there is no permutation for a version to change.
    np.testing.assert_array_equal(order(ids, plan_version=1, shuffle=False),
                                  order(ids, plan_version=2, shuffle=False))


def test_the_default_is_the_latest_version(ids: Path) -> None:
    assert _core.LATEST_PLAN_VERSION == 2
    np.testing.assert_array_equal(order(ids), order(ids, plan_version=2))
    assert stoker.Loader(ids, **OPTIONS).state_dict()["plan_version"] == 2


def test_known_orders_are_stable(ids: Path) -> None:
    # Golden: a change here changes every user's batches and breaks their resume. Version 1's
    # are the orders of the releases before plan versions (an engine built at c33ada7 gave
    # these very rows).
    first = {version: order(ids, plan_version=version)[:8].tolist() for version in (1, 2)}
    assert first[1] == [11596, 5467, 5119, 5612, 6985, 11069, 11153, 15260]
    assert first[2] == [8798, 17227, 6700, 5039, 2691, 17990, 6951, 5651]


@pytest.mark.parametrize("version", [1, 2])
def test_a_state_resumes_under_its_own_version_only(ids: Path, version: int) -> None:
    full = stoker.Loader(ids, plan_version=version, **OPTIONS)
    expected = list(full)
    first = stoker.Loader(ids, plan_version=version, **OPTIONS)
    it = iter(first)
    head = [next(it) for _ in range(7)]
    state = json.loads(json.dumps(first.state_dict()))
    assert state["plan_version"] == version
    resumed = stoker.Loader(ids, plan_version=version, **OPTIONS)
    resumed.load_state_dict(state)
    assert_same_batches(head + list(resumed), expected)
    other = stoker.Loader(ids, plan_version=3 - version, **OPTIONS)
    with pytest.raises(ValueError, match="plan_version"):
        other.load_state_dict(state)


def test_a_state_from_before_versions_resumes_under_version_1(ids: Path) -> None:
    first = stoker.Loader(ids, plan_version=1, **OPTIONS)
    it = iter(first)
    head = [next(it) for _ in range(3)]
    state = first.state_dict()
    del state["plan_version"]  # what a release before versions wrote
    resumed = stoker.Loader(ids, plan_version=1, **OPTIONS)
    resumed.load_state_dict(state)
    assert_same_batches(head + list(resumed), list(stoker.Loader(ids, plan_version=1, **OPTIONS)))
    # A fresh loader reads the latest version: the error says how to resume the old order.
    with pytest.raises(ValueError, match=r"plan_version differs: saved 1, now 2 \(make the "
                       r"loader with plan_version=1 to resume this run's order\)"):
        stoker.Loader(ids, **OPTIONS).load_state_dict(state)


@pytest.mark.parametrize("version", [0, 3, -1])
def test_a_version_out_of_range_is_refused_by_name(ids: Path, version: int) -> None:
    with pytest.raises(ValueError, match=f"plan_version must be 1 to 2, got {version}"):
        stoker.Loader(ids, plan_version=version, **OPTIONS)


def test_a_mixture_follows_its_version(ids: Path) -> None:
    def mixed(version: int) -> np.ndarray:
        mixture = stoker.Mixture([stoker.Source(ids, name="a", weight=1, columns=["row_id"]),
                                  stoker.Source(ids, name="b", weight=1, columns=["row_id"])])
        loader = stoker.MixtureLoader(mixture, batch_size=1000, seed=7, shuffle_window=5000,
                                      plan_version=version)
        assert loader.state_dict()["plan_version"] == version
        return np.concatenate([b["row_id"] for b in loader])

    np.testing.assert_array_equal(mixed(1), mixed(1))
    assert not np.array_equal(mixed(1), mixed(2))


def test_a_served_stream_follows_the_servers_version(criteo: Path, servers) -> None:
    server = servers("--plan-version", "1")
    options = {"columns": COLUMNS, **SERVED}
    remote = stoker.RemoteLoader([server.location], **options)
    assert remote._servers.config["plan_version"] == 1
    local = stoker.Loader(criteo, plan_version=1, **options)
    assert_same_batches(list(remote), list(local))
    assert not np.array_equal(
        np.concatenate([b["row_id"] for b in stoker.Loader(criteo, **options)]),
        np.concatenate([b["row_id"] for b in local]))
    with pytest.raises(ValueError, match="plan_version: asked 2, served 1"):
        stoker.RemoteLoader([server.location], plan_version=2, **options)
