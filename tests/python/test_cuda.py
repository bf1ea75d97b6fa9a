"""device="cuda": batches assembled in pinned host memory, copied to the GPU ahead of the
consumer. The GPU tests run where torch sees a CUDA device and skip elsewhere; the errors a
machine without one gives are tested everywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import stoker
from stoker import _core

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device (torch.cuda.is_available())")
OPTIONS = {"batch_size": 1000, "seed": 3, "columns": ["row_id", "label", "embedding"]}


def test_device_needs_torch_output_and_a_cuda_device(embeddings: Path) -> None:
    with pytest.raises(ValueError, match='set output="torch"'):
        stoker.Loader(embeddings, device="cuda", **OPTIONS)
    with pytest.raises(ValueError, match='must be "cuda" or "cuda:N"'):
        stoker.Loader(embeddings, device="cpu", output="torch", **OPTIONS)
    with pytest.raises(ValueError, match="device_prefetch must be >= 1"):
        stoker.Loader(embeddings, device="cuda" if CUDA else None, output="torch",
                      device_prefetch=0, **OPTIONS)
    if not CUDA:
        with pytest.raises(RuntimeError, match="torch sees no CUDA device"):
            stoker.Loader(embeddings, device="cuda", output="torch", **OPTIONS)


def _engine_loader(source: Path, pinned: bool) -> object:
    options = _core.LoaderOptions()
    options.sources = [str(source)]
    options.batch_size = OPTIONS["batch_size"]
    options.columns = OPTIONS["columns"]
    options.pinned_output = pinned
    return _core.Loader(options, "torch")


@pytest.mark.skipif(CUDA, reason="checks the error of a machine without a CUDA runtime")
def test_pinned_output_without_a_cuda_runtime_names_it(embeddings: Path) -> None:
    # No runtime at all, or one without a device (a CUDA install on a CPU machine, as here).
    with pytest.raises(NotImplementedError, match="libcudart"):
        _engine_loader(embeddings, pinned=True)


@needs_cuda
def test_host_batches_are_pinned(embeddings: Path) -> None:
    # As stoker.Loader(device=...) does (_cuda.check_device): torch calls nothing pinned until
    # its CUDA is initialised.
    torch.cuda.init()
    epoch = _engine_loader(embeddings, pinned=True).start_epoch(0, [])
    while not epoch.wait_ready():
        pass
    batch = epoch.next()
    assert all(t.is_pinned() for t in batch.values())
    epoch.close()


@needs_cuda
def test_a_cuda_loader_initialises_torch_cuda_before_its_first_pinned_batch(
        embeddings: Path) -> None:
    # In a fresh process: this one's torch CUDA is initialised by the tests before.
    script = f"""
import torch, stoker
loader = stoker.Loader({str(embeddings)!r}, output="torch", device="cuda", **{OPTIONS!r})
assert torch.cuda.is_initialized()
epoch = loader._core.start_epoch(0, [])  # the host batches, before the copy to the device
while not epoch.wait_ready():
    pass
assert all(t.is_pinned() for t in epoch.next().values())
epoch.close()
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


@needs_cuda
def test_device_batches_equal_host_batches_bit_for_bit(embeddings: Path) -> None:
    host = list(stoker.Loader(embeddings, output="torch", **OPTIONS))
    device = list(stoker.Loader(embeddings, output="torch", device="cuda", **OPTIONS))
    assert len(device) == len(host)
    for d, h in zip(device, host):
        for name in h:
            assert d[name].device.type == "cuda"
            np.testing.assert_array_equal(d[name].cpu().numpy(), h[name].numpy(), err_msg=name)


@needs_cuda
def test_device_memory_is_bounded_by_the_prefetch(embeddings: Path) -> None:
    loader = stoker.Loader(embeddings, output="torch", device="cuda", device_prefetch=2,
                           **OPTIONS)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    batch_bytes = 0
    for batch in loader:
        batch_bytes = max(batch_bytes, sum(t.numel() * t.element_size() for t in batch.values()))
        del batch
    # In flight: device_prefetch batches, plus the one the consumer holds, plus allocator
    # rounding (blocks of 512 bytes per tensor).
    assert torch.cuda.max_memory_allocated() - base <= 4 * batch_bytes + 64 * 1024


@needs_cuda
def test_resume_counts_batches_taken_not_batches_in_flight(embeddings: Path) -> None:
    full = [b["row_id"].cpu() for b in stoker.Loader(embeddings, output="torch", **OPTIONS)]
    loader = stoker.Loader(embeddings, output="torch", device="cuda", **OPTIONS)
    it = iter(loader)
    next(it)  # two more batches are in flight to the device now
    state = loader.state_dict()
    it.close()
    resumed = stoker.Loader(embeddings, output="torch", device="cuda", **OPTIONS)
    resumed.load_state_dict(state)
    rest = [b["row_id"].cpu() for b in resumed]
    assert len(rest) == len(full) - 1
    for r, f in zip(rest, full[1:]):
        assert torch.equal(r, f)
