"""Are the engine's pinned batches pinned by torch's account, and is their non_blocking copy to
the GPU asynchronous? For one host batch of `stoker.Loader(device="cuda")` (the engine's pinned
blocks), the same columns cloned into pageable memory, and torch's own pinned copy of them:
`Tensor.is_pinned()`, and for a `.to("cuda", non_blocking=True)` of every column queued behind
a GPU sleep of --sleep-ms: how long the call took on the host, whether it returned before the
copy finished (asynchronous), and the copy's own CUDA-event time and GB/s.

    python benchmarks/pinned_copy.py [--data DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from stoker_devtools.bench import write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a dataset (default: 100,000 rows of the embeddings "
                                       "preset written to a temporary folder)")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    import stoker
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 2
    data = args.data
    if data is None:
        from stoker.cli import gen as _gen
        data = Path(tempfile.mkdtemp(prefix="stoker-pinned-")) / "emb"
        _gen.generate(data, _gen.GenOptions(preset="embeddings", rows=100_000, files=2),
                      progress=False)
    loader = stoker.Loader(data, batch_size=args.batch_size, output="torch", device="cuda")
    epoch = loader._core.start_epoch(0, [])  # host batches, before the copy to the device
    while not epoch.wait_ready():
        pass
    engine = epoch.next()
    sources = {
        "engine": engine,
        "pageable": {k: t.clone() for k, t in engine.items()},
        "torch_pinned": {k: t.pin_memory() for k, t in engine.items()},
    }
    cycles = _sleep_cycles(torch, args.sleep_ms)
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "batch_bytes": sum(t.numel() * t.element_size()
                                                 for t in engine.values())}
    for name, batch in sources.items():
        result[name] = _copy(torch, batch, cycles)
    epoch.close()
    print(json.dumps(result, indent=2))
    if args.json:
        write_json(args.json, result)
    return 0


def _copy(torch: Any, batch: dict[str, Any], cycles: int) -> dict[str, Any]:
    """One non_blocking copy of `batch` queued behind a GPU sleep of `cycles`."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles)  # the stream is busy: an asynchronous copy cannot start yet
    start.record()
    began = time.perf_counter()
    on_device = [t.to("cuda", non_blocking=True) for t in batch.values()]
    call_s = time.perf_counter() - began
    end.record()
    returned_early = not end.query()  # the copy (behind the sleep) had not finished
    end.synchronize()
    copy_ms = start.elapsed_time(end)
    nbytes = sum(t.numel() * t.element_size() for t in on_device)
    return {"is_pinned": all(t.is_pinned() for t in batch.values()),
            "call_ms": call_s * 1000, "returned_before_copy_finished": returned_early,
            "copy_ms": copy_ms, "copy_gbps": nbytes / (copy_ms / 1000) / 1e9}


def _sleep_cycles(torch: Any, ms: float) -> int:
    """Cycles of torch.cuda._sleep that take about `ms` on this GPU."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(1_000_000)
    end.record()
    end.synchronize()
    return int(1_000_000 * ms / start.elapsed_time(end))


if __name__ == "__main__":
    sys.exit(main())
