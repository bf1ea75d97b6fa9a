"""output="torchrec" against TorchRec itself (its own environment: `make test-torchrec`,
tests/torchrec/requirements.txt): every batch's KeyedJaggedTensor equals the one TorchRec's
``from_lengths_sync`` builds from the same rows; the batch is TorchRec's Pipelineable Batch; a
small DLRM over an EmbeddingBagCollection trains from Stoker's batches on the CPU and resumes
mid-epoch with bit-identical losses; docs/torchrec.md's script runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import stoker
import torch
from stoker.cli import gen as _gen
from torchrec.datasets.utils import Batch
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
from torchrec.streamable import Pipelineable

ROOT = Path(__file__).resolve().parents[2]
SPARSE = [f"C{i}" for i in range(1, 27)]
DENSE = [f"I{i}" for i in range(1, 14)]


@pytest.fixture(scope="module")
def multihot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("multihot")
    _gen.generate(path, _gen.GenOptions(preset="multihot", rows=6000, files=3,
                                        row_group_size=1000), progress=False)
    return path


def options(**more: object) -> dict:
    return {"batch_size": 512, "seed": 11, "shuffle_window": 2500, "num_threads": 2, **more}


def features(**more: object) -> dict:
    return {"sparse": SPARSE, "dense": DENSE, "labels": ["label"], **more}


def expected(batch: pa.RecordBatch, keys: list[str], dtype: torch.dtype) -> KeyedJaggedTensor:
    """TorchRec's own KeyedJaggedTensor of the rows, from per-key lengths and values."""
    values, lengths = [], []
    for key in keys:
        column = batch.column(key)
        lengths.append(np.diff(column.offsets.to_numpy()).astype(np.int32))
        values.append(column.flatten().to_numpy())
    return KeyedJaggedTensor.from_lengths_sync(
        keys=keys, values=torch.from_numpy(np.concatenate(values)).to(dtype),
        lengths=torch.from_numpy(np.concatenate(lengths)))


def assert_same_kjt(got: KeyedJaggedTensor, want: KeyedJaggedTensor) -> None:
    assert got.keys() == want.keys()
    assert got.stride() == want.stride()
    assert got.values().dtype == want.values().dtype
    assert torch.equal(got.values(), want.values())
    assert torch.equal(got.lengths(), want.lengths())
    assert got.length_per_key() == want.length_per_key()
    assert got.offset_per_key() == want.offset_per_key()
    assert torch.equal(got.offsets(), want.offsets())


@pytest.mark.parametrize("values_dtype", [None, "int64"])
@pytest.mark.parametrize("shuffle", [True, False])
def test_every_kjt_equals_torchrecs_own_from_the_same_rows(multihot: Path, shuffle: bool,
                                                           values_dtype: str | None) -> None:
    reference = list(stoker.Loader(multihot, output="arrow", shuffle=shuffle, **options()))
    loader = stoker.Loader(multihot, output="torchrec", shuffle=shuffle,
                           torchrec=features(values_dtype=values_dtype), **options())
    dtype = torch.int32 if values_dtype is None else torch.int64
    batches = list(loader)
    assert len(batches) == len(reference) == len(loader) == 12
    for got, rows in zip(batches, reference, strict=True):
        assert isinstance(got, Batch) and isinstance(got, Pipelineable)
        assert_same_kjt(got.sparse_features, expected(rows, SPARSE, dtype))
        dense = np.stack([rows.column(c).to_numpy() for c in DENSE], axis=1)
        assert torch.equal(got.dense_features, torch.from_numpy(dense))
        assert torch.equal(got.labels, torch.from_numpy(rows.column("label").to_numpy()))
        moved = got.to(torch.device("cpu"), non_blocking=True)  # Pipelineable's to()
        assert torch.equal(moved.sparse_features.values(), got.sparse_features.values())


def test_a_resumed_epoch_gives_the_rest_of_the_same_batches(multihot: Path) -> None:
    loader = stoker.Loader(multihot, output="torchrec", torchrec=features(), **options())
    whole = list(loader)
    resumed = stoker.Loader(multihot, output="torchrec", torchrec=features(), **options())
    taken = iter(resumed)
    for _ in range(4):
        next(taken)
    state = resumed.state_dict()
    fresh = stoker.Loader(multihot, output="torchrec", torchrec=features(), **options())
    fresh.load_state_dict(state)
    rest = list(fresh)
    assert len(rest) == len(whole) - 4
    for got, want in zip(rest, whole[4:], strict=True):
        assert_same_kjt(got.sparse_features, want.sparse_features)


def test_weights_and_one_hot_keys(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 4, 300)
    ids = [rng.integers(0, 50, n).tolist() for n in lengths]
    pq.write_table(pa.table({
        "ids": pa.array(ids, pa.list_(pa.int64())),
        "w": pa.array([rng.random(len(r)).astype(np.float32).tolist() for r in ids],
                      pa.list_(pa.float32())),
        "one": pa.array(rng.integers(0, 9, 300), pa.int64()),
        "label": pa.array(rng.random(300), pa.float32())}), tmp_path / "a.parquet")
    spec = {"sparse": ["ids", "one"], "weights": {"ids": "w"}, "labels": ["label"]}
    batches = list(stoker.Loader(tmp_path, batch_size=100, output="torchrec", torchrec=spec))
    rows = list(stoker.Loader(tmp_path, batch_size=100, output="arrow"))
    for got, want in zip(batches, rows, strict=True):
        kjt = got.sparse_features
        assert kjt.keys() == ["ids", "one"]
        per_row = [len(r) for r in want.column("ids").to_pylist()]
        assert kjt.lengths().tolist() == per_row + [1] * 100
        weights = [x for r in want.column("w").to_pylist() for x in r] + [1.0] * 100
        np.testing.assert_allclose(kjt.weights().numpy(), np.array(weights, np.float32))
        assert kjt["one"].values().tolist() == want.column("one").to_pylist()


def make_model() -> torch.nn.Module:
    from torchrec.models.dlrm import DLRM
    from torchrec.modules.embedding_configs import EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    torch.manual_seed(0)
    tables = [EmbeddingBagConfig(name=f"t_{key}", embedding_dim=8, num_embeddings=cardinality,
                                 feature_names=[key])
              for key, cardinality in zip(SPARSE, _gen.CRITEO_CARDINALITIES, strict=True)]
    return DLRM(embedding_bag_collection=EmbeddingBagCollection(tables=tables),
                dense_in_features=len(DENSE), dense_arch_layer_sizes=[16, 8],
                over_arch_layer_sizes=[16, 1])


def train(loader: stoker.Loader, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
          steps: int) -> list[float]:
    losses = []
    loss_fn = torch.nn.BCEWithLogitsLoss()
    # range first: zip then stops before taking a batch it would not train on.
    for _, batch in zip(range(steps), loader, strict=False):
        optimizer.zero_grad()
        logits = model(batch.dense_features, batch.sparse_features).squeeze(-1)
        loss = loss_fn(logits, batch.labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_dlrm_trains_and_resumes_mid_epoch_with_bit_identical_losses(multihot: Path) -> None:
    torch.use_deterministic_algorithms(True)
    def fresh() -> tuple[stoker.Loader, torch.nn.Module, torch.optim.Optimizer]:
        model = make_model()
        # The counters' logarithms, as DLRM trains on Criteo's.
        log1p = [{"op": "log1p", "column": c} for c in DENSE]
        loader = stoker.Loader(multihot, output="torchrec", torchrec=features(),
                               transforms=log1p, **options())
        return loader, model, torch.optim.Adagrad(model.parameters(), lr=0.05)

    loader, model, optimizer = fresh()
    whole = train(loader, model, optimizer, 11)
    assert len(whole) == 11 and whole[-1] < whole[0]  # it learns

    loader, model, optimizer = fresh()
    first = train(loader, model, optimizer, 5)
    saved = {"loader": loader.state_dict(), "model": model.state_dict(),
             "optimizer": optimizer.state_dict()}
    loader, model, optimizer = fresh()
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    loader.load_state_dict(saved["loader"])
    rest = train(loader, model, optimizer, 6)
    assert first + rest == whole  # bit-identical, float for float


def docs_script(tmp_path: Path) -> Path:
    text = (ROOT / "docs" / "torchrec.md").read_text()
    script = re.search(r"```python\n(# train_dlrm\.py.*?)```", text, re.DOTALL)
    assert script is not None, "docs/torchrec.md lost its train_dlrm.py block"
    path = tmp_path / "train_dlrm.py"
    path.write_text(script.group(1))
    return path


def test_the_docs_script_runs_as_written(multihot: Path, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(docs_script(tmp_path)), str(multihot),
                          "--epochs", "1"],
                         check=False, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "rank 0 epoch 0: 12 steps" in run.stdout


def test_the_docs_script_runs_under_torchrun(multihot: Path, tmp_path: Path) -> None:
    torchrun = Path(sys.executable).parent / "torchrun"
    run = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", "29531",
                          str(docs_script(tmp_path)), str(multihot), "--epochs", "1"],
                         check=False, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    # Each rank its own equal share of the epoch: 3,000 rows, 6 batches of 512.
    assert "rank 0 epoch 0: 6 steps" in run.stdout
    assert "rank 1 epoch 0: 6 steps" in run.stdout


def test_bad_jagged_data_is_named_and_nothing_changes_silently(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    spec = {"sparse": ["ids"], "labels": ["label"]}
    def write(name: str, ids: pa.Array, **more: pa.Array) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        pq.write_table(pa.table({"ids": ids, "label": pa.array([0.0] * len(ids), pa.float32()),
                                 **more}), folder / "part-0.parquet")
        return folder

    # A null id inside a list: the file and row group named, before any batch.
    nulls = write("nulls", pa.array([[1, None], [2]], pa.list_(pa.int64())))
    with pytest.raises(ValueError, match=r"column 'ids' has null values in '.*part-0\.parquet' "
                                         r"\(row group 0\)"):
        list(stoker.Loader(nulls, batch_size=2, output="torchrec", torchrec=spec))
    # A null list is an empty one: length 0, no id.
    empty = write("empty", pa.array([[1, 2], None, [3]], pa.list_(pa.int64())))
    (batch,) = stoker.Loader(empty, batch_size=3, shuffle=False, output="torchrec",
                             torchrec=spec)
    assert batch.sparse_features.lengths().tolist() == [2, 0, 1]
    assert batch.sparse_features.values().tolist() == [1, 2, 3]
    # Nested lists where a flat one is needed: refused when the loader is made.
    nested = write("nested", pa.array([[[1]], [[2]]], pa.list_(pa.list_(pa.int64()))))
    with pytest.raises(TypeError, match="column 'ids' has type list<element: list<element: "):
        stoker.Loader(nested, batch_size=2, output="torchrec", torchrec=spec)
    # Ids past the chosen values dtype: an error naming the column and the id.
    wide = write("wide", pa.array([[1 << 40]], pa.list_(pa.int64())))
    with pytest.raises(ValueError, match="column 'ids': id 1099511627776 does not fit"):
        list(stoker.Loader(wide, batch_size=1, output="torchrec",
                           torchrec={**spec, "values_dtype": "int32"}))
    # Weights whose lengths differ from their ids'.
    weighted = write("weighted", pa.array([[1, 2], [3]], pa.list_(pa.int64())),
                     w=pa.array([[0.5], [1.0]], pa.list_(pa.float32())))
    with pytest.raises(ValueError, match="weights 'w' of key 'ids': row 0 of the batch has 1 "
                                         "weights for 2 ids"):
        list(stoker.Loader(weighted, batch_size=2, shuffle=False, output="torchrec",
                           torchrec={**spec, "weights": {"ids": "w"}}))
    # A key missing from some files: the files named.
    pq.write_table(pa.table({"label": pa.array([0.0], pa.float32())}), empty / "part-1.parquet")
    with pytest.raises(ValueError, match="files disagree on their columns: .*part-0.parquet"):
        stoker.Loader(empty, batch_size=3, output="torchrec", torchrec=spec)
    (empty / "part-1.parquet").unlink()
    # A key missing from the dataset: named with the columns there are.
    with pytest.raises(KeyError, match="sparse key 'C9' is not a column of the loader"):
        stoker.Loader(empty, batch_size=3, output="torchrec", torchrec={"sparse": ["C9"]})


def batches_of(loader: stoker.Loader) -> list[KeyedJaggedTensor]:
    return [b.sparse_features for b in loader]


def test_served_batches_are_the_local_loaders(multihot: Path) -> None:
    import re as regex
    server = subprocess.Popen(
        [sys.executable, "-m", "stoker", "serve", str(multihot), "--port", "0",
         "--batch-size", "512", "--seed", "11", "--shuffle-window", "2500",
         "--num-threads", "1", "--transforms", str(ragged_spec(multihot))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        match = regex.search(r"listening on (\S+://[\d.]+:\d+)", line)
        assert match, line + server.stderr.read()
        remote = stoker.RemoteLoader([match.group(1)], output="torchrec", torchrec=features())
        local = stoker.Loader(multihot, output="torchrec", torchrec=features(),
                              transforms=ragged_ops(), **options())
        got, want = list(remote), list(local)
        assert len(got) == len(want) == 12
        for a, b in zip(got, want, strict=True):
            assert_same_kjt(a.sparse_features, b.sparse_features)
            assert torch.equal(a.dense_features, b.dense_features)
    finally:
        server.terminate()
        server.wait(timeout=20)


def ragged_ops() -> list[dict]:
    return [{"op": "ragged", "column": c} for c in SPARSE]


def ragged_spec(folder: Path) -> Path:
    """The ragged ops as the JSON file `stoker serve --transforms` reads (a server's batches
    are Arrow; the ragged ops make its configuration the local loader's)."""
    path = folder.parent / "ragged.json"
    path.write_text(json.dumps(ragged_ops()))
    return path


def test_elastic_resume_shares_out_the_rest_of_the_epoch_exactly_once(multihot: Path) -> None:
    two = [stoker.Loader(multihot, output="torchrec", torchrec=features(), rank=r,
                         world_size=2, **options()) for r in range(2)]
    iterators = [iter(loader) for loader in two]
    seen = [next(it).sparse_features for it in iterators for _ in range(2)]
    state = two[0].state_dict()
    one = stoker.Loader(multihot, output="torchrec", torchrec=features(), **options())
    one.load_state_dict(state)
    rest = batches_of(one)
    whole_rows = sum(k.stride() for k in seen) + sum(k.stride() for k in rest)
    assert whole_rows == 6000 - 6000 % 2  # every row once (world_size 2 drops none here)
    reference = stoker.Loader(multihot, output="arrow", **options())
    reference.load_state_dict(state)
    for got, rows in zip(rest, reference, strict=True):
        assert_same_kjt(got, expected(rows, SPARSE, torch.int32))


def test_eval_mode_and_the_cache_give_the_same_batches(multihot: Path, tmp_path: Path) -> None:
    plain = batches_of(stoker.Loader(multihot, output="torchrec", torchrec=features(),
                                     **options()))
    cache = tmp_path / "cache"
    for _ in range(2):  # cold, then warm
        cached = batches_of(stoker.Loader(multihot, output="torchrec", torchrec=features(),
                                          cache_dir=cache, **options()))
        for a, b in zip(cached, plain, strict=True):
            assert_same_kjt(a, b)
    evaluated = [stoker.Loader(multihot, output="torchrec", torchrec=features(), mode="eval",
                               rank=r, world_size=2, shuffle=False, **options())
                 for r in range(2)]
    rows = sum(k.stride() for loader in evaluated for k in batches_of(loader))
    assert rows == 6000  # evaluation: every row exactly once
