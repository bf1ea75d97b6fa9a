"""docs/recipes.md's code, run as it stands on the page: each test takes the ```python blocks
under a recipe's heading, replaces only the literals that name a place (the S3 endpoint, the
cache directory; each must appear exactly once), runs them against real parts (moto's S3
server on loopback, a Delta table written by deltalake, a local two-node Ray cluster) and
then checks what the recipe delivered against references built here: deltalake's own read
of the version, a local Loader, an uninterrupted run and the documented draw formula. A
change to the page's code that breaks it, or makes it deliver other batches, fails here."""

from __future__ import annotations

import builtins
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from stoker.cli import gen as _gen

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "recipes.md"
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # per Ray node: small, the batches go over Flight


def recipe(heading: str, places: dict[str, str]) -> Any:
    """The code of the section `## heading`, its fenced python blocks in order, with each
    literal of `places` replaced; compiled under the page's name."""
    sections = re.split(r"(?m)^## ", RECIPES.read_text())
    [section] = [s for s in sections if s.startswith(heading + "\n")]
    blocks = re.findall(r"(?ms)^```python\n(.*?)^```$", section)
    assert blocks, f"no python blocks under '## {heading}'"
    code = "\n".join(blocks)
    for literal, value in places.items():
        assert code.count(literal) == 1, f"{literal} should appear once in '## {heading}'"
        code = code.replace(literal, value)
    return compile(code, f"{RECIPES} ## {heading}", "exec")


def run(code: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "recipe"}
    exec(code, namespace)  # noqa: S102 (the page's own code, the point of this test)
    return namespace


# --- A Delta table on S3 served by a Ray fleet ---------------------------------------------


@pytest.fixture
def ray_cluster(monkeypatch: pytest.MonkeyPatch):
    """A head node and a worker node on this machine (as test_ray.py's); RAY_ADDRESS names
    it, so the recipe's own ray.init() joins it."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 2, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False})
    cluster.add_node(num_cpus=2, object_store_memory=OBJECT_STORE_BYTES)
    cluster.wait_for_nodes()
    real_print = builtins.print  # a Ray driver printing workers' logs replaces it (tqdm_ray)
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)
    yield cluster
    ray.shutdown()
    cluster.shutdown()
    builtins.print = real_print


@pytest.mark.slow
def test_a_delta_table_on_s3_served_by_a_ray_fleet(ray_cluster,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    deltalake = pytest.importorskip("deltalake")
    pytest.importorskip("moto")
    from stoker_devtools.s3 import KEY, SECRET, MotoServer

    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    # Every RemoteLoader the recipe makes, with the batches it delivered.
    remotes: list[Any] = []

    class RecordingRemoteLoader(stoker.RemoteLoader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.delivered: list[dict] = []
            remotes.append(self)

        def __iter__(self):
            for batch in super().__iter__():
                self.delivered.append(batch)
                yield batch

    monkeypatch.setattr(stoker, "RemoteLoader", RecordingRemoteLoader)
    server = MotoServer()
    try:
        pafs.S3FileSystem(access_key=KEY, secret_key=SECRET, endpoint_override=server.endpoint,
                          scheme="http", region="us-east-1",
                          allow_bucket_creation=True).create_dir("lake")
        code = recipe("A Delta table on S3 served by a Ray fleet",
                      {'"minio.internal:9000"': repr(server.endpoint)})
        page = run(code)

        storage, options = page["storage"], page["options"]
        assert storage["endpoint_override"] == server.endpoint
        uri = "s3://lake/clicks"
        delta_storage = page["delta_storage"]
        # deltalake wrote three versions; the fleet served version 1 all along.
        assert deltalake.DeltaTable(uri, storage_options=delta_storage).version() == 2
        v1 = deltalake.DeltaTable(uri, version=1,
                                  storage_options=delta_storage).to_pyarrow_table()
        assert v1.num_rows == 12_000
        assert [(x._cursor.rank, x._cursor.world_size) for x in remotes] == [(0, 2), (1, 2)]
        served = []
        for rank, remote in enumerate(remotes):
            assert len(remote.delivered) == 12 and remote.stats()["batches"] == 12
            reference = stoker.Loader(stoker.delta_table(uri, version=1), rank=rank,
                                      world_size=2, **options)
            assert_same_batches(remote.delivered, list(reference))
            served += remote.delivered
        # Every row of version 1 exactly once across the two ranks, with its values as
        # deltalake reads them; none of version 2's appended rows.
        ids = np.concatenate([b["id"] for b in served])
        assert Counter(ids.tolist()) == Counter(range(12_000))
        order = np.argsort(ids)
        by_id = v1.sort_by("id")
        np.testing.assert_array_equal(ids[order], by_id["id"].to_numpy())
        for column in ("x", "label"):
            np.testing.assert_array_equal(np.concatenate([b[column] for b in served])[order],
                                          by_id[column].to_numpy())
        # The recipe stopped its fleet.
        from stoker.ray import Fleet

        with pytest.raises(ValueError, match="no Stoker fleet named 'clicks-v1'"):
            Fleet.get("clicks-v1")

        # What the page says of a RemoteLoader's state: no table field, and a local loader
        # over another version refuses it (the fingerprint) while one over version 1 loads it.
        state = remotes[0].state_dict()
        assert "table" not in state
        latest = stoker.Loader(stoker.delta_table(uri), **options)
        with pytest.raises(ValueError, match="the dataset .* differs"):
            latest.load_state_dict(state)
        stoker.Loader(stoker.delta_table(uri, version=1), **options).load_state_dict(state)
    finally:
        server.stop()


# --- Random ops with the disk cache and an elastic resume ----------------------------------


def mix64(x: int) -> int:
    """SplitMix64's finalizer (docs/transforms.md, "The hash")."""
    mask = (1 << 64) - 1
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & mask
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & mask
    return x ^ (x >> 31)


def philox_uniform(seed: int, op: int, epoch: int, row: int) -> float:
    """Draw 0 of row `row` by the op at position `op`, as docs/transforms.md defines it:
    Philox-4x32-10, a uniform of 53 bits in [0, 1)."""
    key = mix64((seed + 0x9E3779B97F4A7C15 * (op + 1)) & ((1 << 64) - 1))
    k = [key & 0xFFFFFFFF, key >> 32]
    c = [row & 0xFFFFFFFF, row >> 32, 0, epoch & 0xFFFFFFFF]
    for round_ in range(10):
        if round_:
            k = [(k[0] + 0x9E3779B9) & 0xFFFFFFFF, (k[1] + 0xBB67AE85) & 0xFFFFFFFF]
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & 0xFFFFFFFF, (p0 >> 32) ^ c[3] ^ k[1],
             p0 & 0xFFFFFFFF]
    return ((c[0] | c[1] << 32) >> 11) * 2.0**-53


def test_random_ops_with_the_disk_cache_and_an_elastic_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the recipe's data/ and ckpt/ are relative paths
    _gen.generate(tmp_path / "data" / "clicks", _gen.GenOptions(
        preset="criteo", rows=19_000, files=4, row_group_size=1500), progress=False)
    made: list[stoker.Loader] = []  # every Loader the recipe makes, in order

    class RecordingLoader(stoker.Loader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(stoker, "Loader", RecordingLoader)
    cache = tmp_path / "cache"
    page = run(recipe("Random ops with the disk cache and an elastic resume",
                      {'"/local/nvme/stoker-cache"': repr(str(cache))}))

    seen, options, spec = page["seen"], page["options"], page["spec"]
    assert options["cache_dir"] == str(cache)
    first, second = made[:2], made[2:5]
    assert [(x._cursor.rank, x._cursor.world_size) for x in first + second] == [
        (0, 2), (1, 2), (0, 3), (1, 3), (2, 3)]
    assert len(seen) == 2 * 10 + 3 * 6

    # Every row of the epoch exactly once across the two jobs.
    rows = Counter(r for batch in seen for r in batch["row_id"].tolist())
    assert rows == Counter(range(19_000))

    # The cache was used: the first job filled it, the second job read every unit from it.
    assert len(list(cache.rglob("*.stkc"))) == 16  # one entry per row group
    assert first[0].stats()["cache_misses"] == 16
    for loader in second:
        assert loader.stats()["cache_misses"] == 0 and loader.stats()["cache_hits"] > 0

    # Each job's batches, bit for bit, are those of loaders without a cache and with other
    # thread counts: the first 10 of an uninterrupted 2-rank epoch, then the rest of the epoch
    # split over 3 ranks by the elastic rule.
    plain = {**options, "cache_dir": None, "num_threads": 3}
    for rank in range(2):
        uninterrupted = list(stoker.Loader("data/clicks/", rank=rank, world_size=2, **plain))
        assert_same_batches(seen[10 * rank:10 * rank + 10], uninterrupted[:10])
    state = first[0].state_dict()
    for rank in range(3):
        resumed = stoker.Loader("data/clicks/", rank=rank, world_size=3, **plain)
        resumed.load_state_dict(state)
        assert_same_batches(seen[20 + 6 * rank:26 + 6 * rank], list(resumed))

    # The draws are the documented function of (seed, epoch 0, op position, row id): row
    # ids are positions in the dataset, which row_id numbers.
    [(noise_op, noise), (mask_op, mask)] = [(i, op) for i, op in enumerate(spec)
                                            if op["op"] in ("uniform", "bernoulli_mask")]
    seed = options["seed"]
    for batch in seen[::7]:
        for row, got_noise, got_mask in zip(batch["row_id"].tolist(), batch["noise"].tolist(),
                                            batch["mask"].tolist()):
            u = philox_uniform(seed, noise_op, 0, row)
            low, high = noise["low"], noise["high"]
            assert got_noise == float(np.float32(low + (high - low) * u)), row
            assert got_mask == (philox_uniform(seed, mask_op, 0, row) < mask["p"]), row

    # A warm cache draws each epoch anew: epoch 1 from the cache equals epoch 1 without it.
    warm = stoker.Loader("data/clicks/", **options)
    warm.set_epoch(1)
    cold = stoker.Loader("data/clicks/", **plain)
    cold.set_epoch(1)
    warm_epoch = list(warm)
    assert_same_batches(warm_epoch, list(cold))
    assert warm.stats()["cache_misses"] == 0
    ours = {r: n for b in warm_epoch for r, n in zip(b["row_id"].tolist(), b["noise"].tolist())}
    epoch0 = {r: n for b in seen for r, n in zip(b["row_id"].tolist(), b["noise"].tolist())}
    assert sum(ours[r] == epoch0[r] for r in ours) < 100  # float draws: equal by chance only


# --- Evaluating a mixture on several ranks -------------------------------------------------


def test_evaluating_a_mixture_on_several_ranks(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the recipe's data/ is a relative path
    sizes = {"clicks": 10_007, "views": 5_003}
    for seed, (name, rows) in enumerate(sizes.items(), start=1):
        _gen.generate(tmp_path / "data" / "val" / name, _gen.GenOptions(
            preset="criteo", rows=rows, seed=seed, files=2, row_group_size=2000),
            progress=False)
    real_loader = stoker.Loader
    made: list[tuple[Any, list]] = []  # every loader the recipe makes, with its batches

    class Recording:
        def __init__(self, loader: Any) -> None:
            self.loader, self.batches = loader, []
            made.append((loader, self.batches))

        def __iter__(self):
            for batch in self.loader:
                self.batches.append(batch)
                yield batch

    monkeypatch.setattr(stoker, "Loader", lambda *a, **kw: Recording(real_loader(*a, **kw)))
    page = run(recipe("Evaluating a mixture on several ranks", {}))

    assert page["rows"] == sum(sizes.values())
    assert [(loader._rank, loader._world_size) for loader, _ in made] == [(0, 3), (1, 3), (2, 3)]
    # Every rank: the same number of full batches, the mask last.
    assert {len(batches) for _, batches in made} == {5}
    assert all(len(b["label"]) == 1024 and list(b)[-1] == "_valid"
               for _, batches in made for b in batches)

    # The real rows are the two datasets' rows, each once (a row: all its values).
    def rows(tables: list[dict]) -> Counter:
        out: Counter = Counter()
        for t in tables:
            names = sorted(n for n in t if n != "_valid")
            valid = np.asarray(t.get("_valid", np.ones(len(t[names[0]]), bool)))
            columns = [np.asarray(t[n])[valid] for n in names]
            out.update(zip(*(c.tolist() for c in columns)))
        return out

    delivered = rows([b for _, batches in made for b in batches])
    stored = rows([pq.read_table(tmp_path / "data" / "val" / name).to_pydict()
                   for name in sizes])
    assert delivered == stored and sum(delivered.values()) == 15_010
    # Rank shares of 5,004, 5,003 and 5,003 rows; the padding repeats each rank's last real row.
    assert [sum(int(np.sum(b["_valid"])) for b in batches) for _, batches in made] == \
        [5004, 5003, 5003]
    labels = np.concatenate([pq.read_table(tmp_path / "data" / "val" / name)["label"]
                             .to_numpy() for name in sizes]).astype(np.float64)
    assert page["mean_loss"] == pytest.approx(float(np.mean((labels - 0.25) ** 2)), rel=1e-9)
    # Each rank's stats count the rows it delivered from each source (padding not included).
    assert sum((Counter(loader.stats()["rows_per_source"]) for loader, _ in made),
               Counter()) == sizes
