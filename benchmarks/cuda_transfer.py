"""device="cuda" on a machine with a CUDA GPU (docs/frameworks.md, "GPUs"): host-to-device
GB/s of Stoker's epoch against a plain pinned copy of the same bytes, the GPU's idle share
under a synthetic step of --step-ms, and whether the device batches equal the host batches
bit for bit.

    python benchmarks/cuda_transfer.py --rows 1000000 --step-ms 5
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from stoker_devtools.bench import write_json


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--list-size", type=int, default=128, help="embedding width")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    import stoker
    import torch
    from stoker.cli import gen as _gen

    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="stoker-cuda-"))
    _gen.generate(work / "emb", _gen.GenOptions(preset="embeddings", rows=args.rows, files=4,
                                                list_size=args.list_size), progress=False)
    options = {"batch_size": args.batch_size, "seed": 1, "output": "torch", "drop_last": True}
    result = {"device": torch.cuda.get_device_name(), "rows": args.rows}

    # Bit-identical: every device batch against the host batch of the same loader options.
    host = stoker.Loader(work / "emb", **options)
    device = stoker.Loader(work / "emb", device="cuda", **options)
    result["bit_identical"] = all(
        all(torch.equal(d[k].cpu(), h[k]) for k in h) for d, h in zip(device, host))

    # A plain pinned copy of one batch's bytes, repeated: the link's rate.
    batch = next(iter(stoker.Loader(work / "emb", **options)))
    nbytes = sum(t.numel() * t.element_size() for t in batch.values())
    pinned = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    target = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    start, repeats = time.perf_counter(), 200
    for _ in range(repeats):
        target.copy_(pinned, non_blocking=True)
    torch.cuda.synchronize()
    result["plain_pinned_gbps"] = nbytes * repeats / (time.perf_counter() - start) / 1e9

    # Stoker's epoch to the device with no step: the bytes it delivers per second.
    loader = stoker.Loader(work / "emb", device="cuda", **options)
    list(loader)  # warm: page cache, pinned blocks
    torch.cuda.synchronize()
    start, batches = time.perf_counter(), 0
    for _ in loader:
        batches += 1
    torch.cuda.synchronize()
    result["stoker_gbps"] = nbytes * batches / (time.perf_counter() - start) / 1e9

    # GPU idle share: a step that keeps the GPU busy --step-ms per batch.
    cycles = _calibrate(torch, args.step_ms)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    busy_ms, first = 0.0, True
    for batch in loader:
        if first:
            begin.record()
            first = False
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(cycles)
        batch["embedding"].sum()  # the step reads the batch
        e.record()
        e.synchronize()
        busy_ms += s.elapsed_time(e)
    end.record()
    end.synchronize()
    wall_ms = begin.elapsed_time(end)
    result.update(step_ms=args.step_ms, gpu_idle_share=max(0.0, 1 - busy_ms / wall_ms))
    print(json.dumps(result, indent=2))
    if args.json:
        write_json(args.json, result)
    return 0


def _calibrate(torch, step_ms: float) -> int:
    """Cycles of torch.cuda._sleep that take about step_ms on this GPU."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    torch.cuda._sleep(1_000_000)
    e.record()
    e.synchronize()
    return int(1_000_000 * step_ms / s.elapsed_time(e))


if __name__ == "__main__":
    sys.exit(main())
