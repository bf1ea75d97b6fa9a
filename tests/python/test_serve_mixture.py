"""A served mixture (docs/serve.md, "Mixtures"): one or two servers over a stoker.Mixture (what
`stoker serve --mixture` and a stoker.ray.Fleet of a mixture run: stoker._remote.serve.start) give
every rank the batches its local MixtureLoader gives, in training and in padded evaluation
(two servers splitting a rank's batches pad alike), and resume across local and remote
loaders both ways, at the same and at another world size."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import stoker
from conftest import assert_same_batches
from stoker._remote import serve as _serve

SIZES = {"a": 1201, "b": 603}
OPTIONS = {"batch_size": 50, "seed": 5, "shuffle_window": 400, "num_threads": 1}


def _write(directory: Path, src: int, rows: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    ids = np.arange(rows, dtype=np.int64)
    table = pa.table({"id": ids, "src": pa.array(np.full(rows, src, np.int8)),
                      "x": pa.array((ids * 0.25 + src).astype(np.float32))})
    for f in range(2):
        pq.write_table(table.slice(f * rows // 2, rows - rows // 2 if f else rows // 2),
                       directory / f"part-{f}.parquet", row_group_size=150)
    return directory


@pytest.fixture(scope="module")
def mixture(tmp_path_factory: pytest.TempPathFactory) -> stoker.Mixture:
    root = tmp_path_factory.mktemp("served-mixture")
    paths = {name: _write(root / name, i, rows) for i, (name, rows) in enumerate(SIZES.items())}
    return stoker.Mixture([stoker.Source(paths["a"], name="a", weight=0.7),
                           stoker.Source(paths["b"], name="b", weight=0.3)], stop="all")


class Servers:
    """In-process servers of one mixture and options (what `stoker serve` runs)."""

    def __init__(self, source: stoker.Mixture, count: int, **options) -> None:
        self.options = {**OPTIONS, **options}
        self.servers = [_serve.start(source, serve_options={"host": "127.0.0.1", "port": 0,
                                                            "chunk_batches": 3},
                                     loader_options=self.options)[1] for _ in range(count)]
        self.locations = [f"grpc://127.0.0.1:{s.port}" for s in self.servers]

    def loader(self, rank: int, world_size: int, **kw) -> stoker.RemoteLoader:
        return stoker.RemoteLoader(self.locations, rank=rank, world_size=world_size, **kw)

    def close(self) -> None:
        for server in self.servers:
            server.shutdown()


@pytest.fixture
def served(mixture):
    made: list[Servers] = []

    def start(count: int, **options) -> Servers:
        made.append(Servers(mixture, count, **options))
        return made[-1]

    yield start
    for servers in made:
        servers.close()


def _local(mixture: stoker.Mixture, rank: int, world_size: int, **options):
    return stoker.Loader(mixture, rank=rank, world_size=world_size, **{**OPTIONS, **options})


@pytest.mark.parametrize("count", [1, 2])
def test_every_rank_gets_its_local_batches(mixture, served, count):
    servers = served(count)
    for rank in range(2):
        remote = servers.loader(rank, 2)
        local = _local(mixture, rank, 2)
        assert len(remote) == len(local)
        assert_same_batches(list(remote), list(local))
    assert servers.loader(0, 2).schema == _local(mixture, 0, 2, output="arrow").schema


def test_padded_evaluation_over_two_servers_equals_the_local_loader(mixture, served):
    options = {"mode": "eval", "pad_to_equal_steps": True}
    servers = served(2, **options)
    delivered: Counter = Counter()
    for rank in range(3):
        remote = list(servers.loader(rank, 3))
        assert_same_batches(remote, list(_local(mixture, rank, 3, **options)))
        for batch in remote:
            valid = batch["_valid"]
            delivered.update(zip(batch["src"][valid].tolist(), batch["id"][valid].tolist()))
    whole = list(_local(mixture, 0, 1, mode="eval"))  # one rank, no padding
    epoch = Counter(zip(*(np.concatenate([b[c] for b in whole]).tolist() for c in ("src", "id"))))
    assert delivered == epoch


def test_states_move_between_local_and_remote_loaders(mixture, served):
    servers = served(2)
    for rank in range(2):
        whole = list(_local(mixture, rank, 2))
        remote = servers.loader(rank, 2)
        it = iter(remote)
        head = [next(it) for _ in range(4)]
        state = json.loads(json.dumps(remote.state_dict()))
        local = _local(mixture, rank, 2)
        local.load_state_dict(state)
        assert_same_batches(head + list(local), whole)
        # And back: a local state resumed by a remote loader.
        local = _local(mixture, rank, 2)
        it = iter(local)
        head = [next(it) for _ in range(3)]
        remote = servers.loader(rank, 2)
        remote.load_state_dict(local.state_dict())
        assert_same_batches(head + list(remote), whole)


def test_an_elastic_remote_resume_keeps_every_position_once(mixture, served):
    options = {"mode": "eval"}
    servers = served(1, **options)
    consumed: Counter = Counter()
    state = None
    for rank in range(2):
        remote = servers.loader(rank, 2)
        it = iter(remote)
        for batch in [next(it) for _ in range(3)]:
            consumed.update(zip(batch["src"].tolist(), batch["id"].tolist()))
        if rank == 0:
            state = remote.state_dict()
    for rank in range(3):
        remote = servers.loader(rank, 3)
        remote.load_state_dict(state)
        for batch in remote:
            consumed.update(zip(batch["src"].tolist(), batch["id"].tolist()))
    whole = Counter()
    for batch in _local(mixture, 0, 1, **options):
        whole.update(zip(batch["src"].tolist(), batch["id"].tolist()))
    assert consumed == whole


def test_servers_of_other_mixtures_or_options_are_told_apart(mixture, served, criteo):
    ours = served(1)
    other_seed = served(1, seed=6)
    with pytest.raises(ValueError, match="serves another configuration"):
        stoker.RemoteLoader(ours.locations + other_seed.locations, rank=0, world_size=1)
    _, plain = _serve.start(criteo, serve_options={"host": "127.0.0.1", "port": 0},
                            loader_options={"batch_size": 50})
    try:
        with pytest.raises(ValueError, match="serves another configuration"):
            stoker.RemoteLoader(ours.locations + [f"grpc://127.0.0.1:{plain.port}"], rank=0,
                                world_size=1)
    finally:
        plain.shutdown()
    # A loader state of the plain dataset does not load into the mixture's remote loader.
    with pytest.raises(ValueError, match="the state does not match"):
        ours.loader(0, 1).load_state_dict(stoker.Loader(criteo, batch_size=50).state_dict())


def test_stoker_serve_takes_a_mixture_spec(mixture, tmp_path):
    """The command line: `stoker serve --mixture spec.json` (stoker_devtools.serve's child process)
    with the loader flags, read by a RemoteLoader: the local MixtureLoader's batches."""
    from stoker_devtools.serve import OPTIONS as SERVED
    from stoker_devtools.serve import Server

    spec = {"sources": [{"path": str(s.path), "name": s.name, "weight": s.weight}
                        for s in mixture.sources], "stop": "all"}
    (tmp_path / "mix.json").write_text(json.dumps(spec))
    server = Server(Path(), "--mixture", str(tmp_path / "mix.json"), "--mode", "eval",
                    mixture=True)
    try:
        options = {**OPTIONS, **SERVED, "mode": "eval"}  # stoker_devtools.serve's flags
        for rank in range(2):
            remote = stoker.RemoteLoader([server.location], rank=rank, world_size=2)
            local = stoker.Loader(stoker.Mixture([stoker.Source(s.path, name=s.name,
                                                                weight=s.weight)
                                                  for s in mixture.sources], stop="all"),
                                  rank=rank, world_size=2, **options)
            assert_same_batches(list(remote), list(local))
    finally:
        server.stop()


def test_a_mixture_spec_names_what_it_cannot_take(tmp_path):
    from stoker._loading import mixture as _mixture

    with pytest.raises(ValueError, match=r"spec.json: unknown key\(s\) \['weights'\]"):
        _mixture.from_spec({"sources": [], "weights": []}, where="spec.json")
    with pytest.raises(ValueError, match="a filter has no JSON form"):
        _mixture.from_spec({"sources": [{"path": "x", "filter": "a > 1"}]})
    with pytest.raises(ValueError, match="source 0 must be an object"):
        _mixture.from_spec({"sources": ["x"]})
