"""Every feature with every other (docs/combinations.md): a pairwise covering array over the
factors source × placement × mode × row work × cache × resume × output × error policy
(matrix_support.FACTORS). Each case either delivers, on every rank, the batches the plain
local Loader gives for the same source, rows, plan and options (output numpy, no cache, no
resume), or is refused when it is made with the one error docs/combinations.md lists for it.

Resume: "mid_epoch" saves each rank's state after 2 batches and finishes the epoch in a new
loader of the same world size (the batches must be the uninterrupted ones); "two_to_three"
saves after 2 batches at world size 2 and finishes on 3 ranks (the elastic rule: the first
batches are the uninterrupted ones, and the epoch holds no row twice and every row of the
dataset but at most 2 in training, none in evaluation).

`make test-matrix` runs every case; `make test` the cases without a Ray fleet (the fleet's
are marked slow)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import stoker
from matrix_support import (
    S3,
    Case,
    Lake,
    masked_pairs,
    pairwise_cases,
    uncovered_pairs,
    unmasked,
)

pytest.importorskip("allpairspy")
pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
pytest.importorskip("moto")

BASE = {"batch_size": 64, "seed": 11, "shuffle_window": 600, "num_threads": 1}
COLUMNS = ["id", "x", "label", "part"]
CODECS = [{"column": "emb", "codec": "ndarray", "dtype": "float32", "shape": [4]}]
RANDOM_OPS = [{"op": "uniform", "column": "noise", "low": 0.0, "high": 1.0}]
FILTER = pc.field("x") >= 300.0
BEFORE = 2  # batches each rank reads before its state is saved

def twice(batch: Any) -> Any:
    """The batch_transform of the matrix: adds x2 = 2x, whatever the output type."""
    if isinstance(batch, pa.RecordBatch):
        return batch.append_column("x2", pc.multiply(batch["x"], 2))
    return {**batch, "x2": batch["x"] * 2}


def refusal(case: Case) -> str | None:
    """The error that refuses the case when it is made (docs/combinations.md), or None."""
    if case.source != "mixture":
        return None
    if case.errors != "raise":
        return "on_error= is not supported with a Mixture"
    if case.row_work == "codecs":
        return "codecs= is not supported with a Mixture"
    return None


# The covering array, and a case of its own for each pair that delivers alone but meets a
# refusal in every case of the array that holds it (masked).
CASES = unmasked(pairwise_cases(), refusal)


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory):
    s3 = S3()
    made: dict[bool, Lake] = {}

    def lake(damaged: bool) -> Lake:
        if damaged not in made:
            made[damaged] = Lake(tmp_path_factory.mktemp("lake"), damaged, s3)
        return made[damaged]

    yield lake
    s3.stop()


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=4, object_store_memory=100 * 1024 * 1024, include_dashboard=False,
             log_to_driver=False)
    yield
    ray.shutdown()


def source_and_options(case: Case, lake: Lake) -> tuple[Any, dict[str, Any]]:
    """The source and the Loader options of a case (without rank, world size, output,
    cache and batch_transform), in the order a mixture refuses them."""
    options: dict[str, Any] = dict(BASE)
    if case.mode != "train":
        options["mode"] = "eval"
    if case.mode == "eval_padded":
        options["pad_to_equal_steps"] = True
    if case.errors == "skip_damaged":
        options["on_error"] = "skip"
    columns = COLUMNS if case.row_work != "codecs" else ["id", "x", "emb"]
    row_work: dict[str, Any] = {}
    if case.row_work == "filter":
        row_work["filter"] = FILTER
    if case.row_work == "random_op":
        row_work["transforms"] = RANDOM_OPS
    if case.source == "mixture":
        if case.row_work == "codecs":
            options["codecs"] = CODECS
        return stoker.Mixture([
            stoker.Source(lake.directory, weight=0.6, columns=columns, name="a", **row_work),
            stoker.Source(stoker.delta_table(lake.other, version=0), weight=0.4,
                          columns=columns, name="b", **row_work)],
        ), options
    source, extra = lake.source(case.source)
    options.update(extra, columns=columns, **row_work)
    if case.row_work == "codecs":
        options["codecs"] = CODECS
    return source, options


class Placement:
    """Makes a case's loaders: local ones, or RemoteLoaders over in-process servers (what
    `stoker serve` runs: stoker._remote.serve.start) or over a Ray fleet."""

    def __init__(self, case: Case, source: Any, options: dict[str, Any]) -> None:
        self.case, self.source, self.options = case, source, options
        self.transform = twice if case.row_work == "batch_transform" else None
        self.servers: list[Any] = []
        self.fleet: Any = None
        self.locations: list[str] = []
        if case.placement in ("server", "two_servers"):
            from stoker._remote import serve as _serve

            for _ in range(1 if case.placement == "server" else 2):
                _, server = _serve.start(source, serve_options={
                    "host": "127.0.0.1", "port": 0, "chunk_batches": 3},
                    loader_options=options)
                self.servers.append(server)
                self.locations.append(f"grpc://127.0.0.1:{server.port}")
        elif case.placement == "ray_fleet":
            from stoker.ray import Fleet

            self.fleet = Fleet.start(source, num_servers=2, chunk_batches=3, **options)

    def loader(self, rank: int, world_size: int) -> Any:
        kw = {"rank": rank, "world_size": world_size, "output": self.case.output}
        if self.transform is not None:
            kw["batch_transform"] = self.transform
        if self.case.placement == "local":
            return stoker.Loader(self.source, **self.options, **kw)
        return stoker.RemoteLoader(self.fleet or self.locations, **kw)

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()
        if self.fleet is not None:
            self.fleet.shutdown()


def as_numpy(batch: Any) -> dict[str, np.ndarray]:
    """A batch of any output as {column: numpy array}."""
    if isinstance(batch, pa.RecordBatch):
        out = {}
        for name, column in zip(batch.schema.names, batch.columns):
            if pa.types.is_fixed_size_list(column.type):
                values = column.flatten().to_numpy(zero_copy_only=False)
                out[name] = values.reshape(len(column), column.type.list_size)
            else:
                out[name] = column.to_numpy(zero_copy_only=False)
        return out
    return {name: np.asarray(value.numpy() if hasattr(value, "numpy") else value)
            for name, value in batch.items()}


def same(got: list[Any], want: list[dict[str, np.ndarray]], what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} batches, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        g = as_numpy(g)
        assert sorted(g) == sorted(w), f"{what}, batch {i}: columns {sorted(g)} != {sorted(w)}"
        for name in w:
            np.testing.assert_array_equal(g[name], w[name], err_msg=f"{what}, batch {i}, {name}")


def rows_of(batches: list[Any]) -> list[tuple]:
    """Each real row (not padding) of the batches, as a tuple of its values' bytes."""
    out = []
    for batch in map(as_numpy, batches):
        names = sorted(n for n in batch if n != "_valid")
        valid = batch.get("_valid", np.ones(len(batch[names[0]]), bool))
        out += [tuple(batch[n][i].tobytes() for n in names)
                for i in range(len(valid)) if valid[i]]
    return out


def reference(case: Case, source: Any, options: dict[str, Any], world_size: int) -> list[list]:
    """Each rank's batches from the plain local Loader: numpy, no cache, no resume."""
    transform = {"batch_transform": twice} if case.row_work == "batch_transform" else {}
    out, skipped = [], []
    for rank in range(world_size):
        loader = stoker.Loader(source, rank=rank, world_size=world_size, **options, **transform)
        out.append([as_numpy(b) for b in loader])
        stats = loader.stats()  # a mixture's: each source engine's under "sources"
        for engine in [s["engine"] for s in stats.get("sources", [])] or [stats]:
            skipped += engine["skipped_units"]
    # The damaged lake's broken row group is in every source: some rank skipped it.
    assert bool(skipped) == (case.errors == "skip_damaged"), skipped
    return out


def run_case(case: Case, lake: Lake, tmp_path: Path) -> None:
    source, options = source_and_options(case, lake)
    want = reference(case, source, options, 2)
    if case.cache != "off":
        options = {**options, "cache_dir": str(tmp_path / "cache")}
    if case.cache == "warm":  # a whole epoch through the cache before the one compared
        for _batch in stoker.Loader(source, **options):
            pass
    placement = Placement(case, source, options)
    try:
        if case.resume == "none":
            for rank in range(2):
                same(list(placement.loader(rank, 2)), want[rank], f"rank {rank}")
        elif case.resume == "mid_epoch":
            for rank in range(2):
                first = placement.loader(rank, 2)
                it = iter(first)
                got = [next(it) for _ in range(BEFORE)]
                state = first.state_dict()
                resumed = placement.loader(rank, 2)
                resumed.load_state_dict(state)
                same(got + list(resumed), want[rank], f"rank {rank}, resumed")
        else:
            check_elastic(case, placement, want, source, options)
    finally:
        placement.close()


def check_elastic(case: Case, placement: Placement, want: list[list], source: Any,
                  options: dict[str, Any]) -> None:
    delivered: list[Any] = []
    states = []
    for rank in range(2):
        first = placement.loader(rank, 2)
        it = iter(first)
        got = [next(it) for _ in range(BEFORE)]
        same(got, want[rank][:BEFORE], f"rank {rank} of 2")
        delivered += got
        states.append(first.state_dict())
    for rank in range(3):
        resumed = placement.loader(rank, 3)
        resumed.load_state_dict(states[0])  # rank 0's: the one to save (docs/evaluation.md)
        delivered += list(resumed)
    rows = rows_of(delivered)
    twice_seen = [row for row, n in Counter(rows).items() if n > 1]
    assert not twice_seen, f"{len(twice_seen)} rows delivered twice"
    transform = {"batch_transform": twice} if case.row_work == "batch_transform" else {}
    everything = set(rows_of(stoker.Loader(source, **options, **transform)))
    assert set(rows) <= everything, "rows the dataset does not hold"
    missing = len(everything) - len(rows)
    assert missing <= (2 if case.mode == "train" else 0), f"{missing} rows never delivered"


def test_the_cases_cover_every_pair_of_levels() -> None:
    assert not uncovered_pairs(CASES)
    # Every pair that can deliver does in some case: none is met only beside a refusal.
    assert not masked_pairs(CASES, refusal)
    assert masked_pairs(pairwise_cases(), refusal)  # which the covering array alone leaves
    assert len(set(CASES)) == len(CASES)
    # Every refusal the matrix expects is one docs/combinations.md lists.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "combinations.md").read_text()
    for words in {refusal(case) for case in CASES} - {None}:
        option = re.fullmatch(r"(\w+)= is not supported with a Mixture", words)
        if option is None:
            assert words in doc, words
            continue
        # The options a mixture does not take share one row: "<option>= is not supported ...".
        rows = [line for line in doc.splitlines() if "is not supported with a Mixture" in line]
        assert any(f"`{option[1]}`" in row.split("|")[1] for row in rows), words


@pytest.mark.parametrize("case", [
    pytest.param(case, id=case.id,
                 marks=[pytest.mark.slow] if case.placement == "ray_fleet" else [])
    for case in CASES])
def test_a_case_gives_the_local_batches_or_its_refusal(case: Case, lakes, tmp_path: Path,
                                                       request: pytest.FixtureRequest) -> None:
    if case.output in ("torch", "jax", "tensorflow"):
        pytest.importorskip({"torch": "torch", "jax": "jax", "tensorflow": "tensorflow"}
                            [case.output])
    if case.placement == "ray_fleet":
        request.getfixturevalue("ray_cluster")
    if case.output == "jax":  # the lake's ids are int64: JAX keeps them only with x64 on
        import jax

        was = jax.config.jax_enable_x64
        jax.config.update("jax_enable_x64", True)
        request.addfinalizer(lambda: jax.config.update("jax_enable_x64", was))
    lake = lakes(case.errors == "skip_damaged")
    words = refusal(case)
    if words is None:
        run_case(case, lake, tmp_path)
        return
    source, options = source_and_options(case, lake)
    with pytest.raises(ValueError, match=re.escape(words)):
        Placement(case, source, options).loader(0, 2)
