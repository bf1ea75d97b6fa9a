"""PyTorch's conventions: the Loader inside torch.utils.data.DataLoader (through
stoker.torch.IterableDataset), a clear error for the map-style misuse and for worker
processes, set_epoch as DistributedSampler users call it, an epoch claimed at its first
next() (not at iter()), a state saved at an epoch's last batch resuming at the next epoch,
and a warning when torch.distributed runs several ranks and the loader has one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import stoker
from conftest import assert_same_batches

torch = pytest.importorskip("torch")
import stoker.torch  # after the importorskip: it imports torch

OPTIONS = {"columns": ["row_id", "I1"], "batch_size": 700, "seed": 11, "shuffle_window": 4500}
EPOCH_BATCHES = 29  # 20,000 rows in batches of 700


def ids(batches: list) -> list[int]:
    return [int(i) for b in batches for i in b["row_id"]]


def test_torch_dataloader_over_the_iterable_dataset_gives_the_loaders_batches(
        criteo: Path) -> None:
    loader = stoker.Loader(criteo, output="torch", **OPTIONS)
    data = torch.utils.data.DataLoader(stoker.torch.IterableDataset(loader), batch_size=None)
    assert len(data) == EPOCH_BATCHES
    assert_same_batches(list(data), _epoch(criteo, 0))
    assert_same_batches(list(data), _epoch(criteo, 1))  # the next pass: the next epoch


def _epoch(criteo: Path, epoch: int) -> list:
    loader = stoker.Loader(criteo, **OPTIONS)
    loader.set_epoch(epoch)
    return list(loader)


def test_numpy_batches_become_tensors_through_the_dataloader(criteo: Path) -> None:
    data = torch.utils.data.DataLoader(
        stoker.torch.IterableDataset(stoker.Loader(criteo, **OPTIONS)), batch_size=None)
    batch = next(iter(data))
    assert isinstance(batch["row_id"], torch.Tensor) and len(batch["row_id"]) == 700


def test_worker_processes_are_refused_clearly(criteo: Path) -> None:
    data = torch.utils.data.DataLoader(
        stoker.torch.IterableDataset(stoker.Loader(criteo, **OPTIONS)), batch_size=None,
        num_workers=1)
    with pytest.raises(RuntimeError, match="num_workers=0"):
        next(iter(data))


def test_the_map_style_misuse_says_what_to_do(criteo: Path) -> None:
    data = torch.utils.data.DataLoader(stoker.Loader(criteo, **OPTIONS), batch_size=None)
    with pytest.raises(TypeError, match=r"not a map-style dataset.*stoker.torch.IterableDataset"):
        next(iter(data))


def test_iter_without_next_uses_no_epoch_and_reads_nothing(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    for _ in range(3):
        iter(loader)  # checked and dropped, as Lightning does
    assert loader.stats()["units_read"] == 0
    assert loader.state_dict()["epoch"] == 0
    assert_same_batches(list(loader), _epoch(criteo, 0))


def test_an_iterator_closed_before_its_first_batch_never_starts(criteo: Path) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    it = iter(loader)
    it.close()
    assert next(it, None) is None and len(it) == 0
    assert loader.stats()["units_read"] == 0 and loader.state_dict()["epoch"] == 0


@pytest.mark.parametrize("end", ["last batch taken", "StopIteration"])
def test_a_state_at_the_epochs_last_batch_resumes_at_the_next_epoch(criteo: Path,
                                                                     end: str) -> None:
    loader = stoker.Loader(criteo, **OPTIONS)
    it = iter(loader)
    for _ in range(EPOCH_BATCHES):
        next(it)
    if end == "StopIteration":
        assert next(it, None) is None
    state = loader.state_dict()
    assert (state["epoch"], state["rounds"]) == (1, [])
    resumed = stoker.Loader(criteo, **OPTIONS)
    resumed.load_state_dict(state)
    assert_same_batches(list(resumed), _epoch(criteo, 1))


def test_a_fully_consumed_state_from_before_the_fix_loads_as_the_next_epoch(
        criteo: Path) -> None:
    state = stoker.Loader(criteo, **OPTIONS).state_dict()
    state["rounds"] = [[1, 20_000]]  # what an older Stoker saved at the last batch
    resumed = stoker.Loader(criteo, **OPTIONS)
    resumed.load_state_dict(state)
    assert resumed.state_dict()["epoch"] == 1
    assert len(list(resumed)) == EPOCH_BATCHES


def test_set_epoch_keeps_a_loaded_mid_epoch_position(criteo: Path) -> None:
    """The DistributedSampler habit: load the checkpoint, then set_epoch(e) before each
    epoch from the saved one on. The saved epoch continues where it stood."""
    reference = _epoch(criteo, 2) + _epoch(criteo, 3)
    first = stoker.Loader(criteo, **OPTIONS)
    first.set_epoch(2)
    it = iter(first)
    for _ in range(5):
        next(it)
    state = first.state_dict()
    resumed = stoker.Loader(criteo, **OPTIONS)
    resumed.load_state_dict(state)
    got = []
    for epoch in (2, 3):
        resumed.sampler.set_epoch(epoch)  # Lightning calls loader.sampler.set_epoch
        got += list(resumed)
    assert_same_batches(got, reference[5:])
    resumed.set_epoch(1)  # another epoch: from its start
    assert_same_batches(list(resumed), _epoch(criteo, 1))


def test_a_warning_when_torch_distributed_has_ranks_and_the_loader_one(criteo: Path,
                                                                      tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys, warnings
        import torch.distributed as dist
        import stoker
        rank = int(sys.argv[1])
        dist.init_process_group("gloo", init_method="file://{tmp_path}/rendezvous",
                                rank=rank, world_size=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            next(iter(stoker.Loader({str(criteo)!r}, batch_size=700)))
            next(iter(stoker.Loader({str(criteo)!r}, batch_size=700, rank=rank,
                                    world_size=2)))
        print("warnings:", [str(w.message) for w in caught])
        dist.destroy_process_group()
    """)
    ranks = [subprocess.Popen([sys.executable, "-c", script, str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    for process in ranks:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.count("torch.distributed runs 2 ranks but this loader has world_size=1") == 1


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int16",
                                   "int32", "int64", "float16", "float32", "float64", "bool"])
def test_every_fixed_width_type_becomes_a_tensor_over_the_same_memory(dtype: str) -> None:
    # torch columns come through torch.from_numpy, but wide unsigned ones through DLPack (NumPy's
    # ulonglong is refused by from_numpy): both must give torch's type of the same width.
    values = np.arange(7).astype(dtype) if dtype != "bool" else np.arange(7) % 3 == 0
    columns = {"x": pa.array(values)}
    if dtype != "bool":  # fixed-size lists take numbers
        columns["v"] = pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(values, 2)), 2)
    batch = pa.record_batch(columns)
    out = stoker._core.to_tensors(batch, "torch")
    assert out["x"].dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(out["x"].numpy(), values)
    if "v" in out:
        assert out["v"].dtype == getattr(torch, dtype) and out["v"].shape == (7, 2)
        np.testing.assert_array_equal(out["v"].numpy(), np.repeat(values, 2).reshape(7, 2))
    if dtype != "bool":  # Arrow's bits are copied into bytes for a tensor; the rest is viewed
        column = batch.column("x")
        start = column.buffers()[1].address + column.offset * values.itemsize
        assert out["x"].data_ptr() == start
