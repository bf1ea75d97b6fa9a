"""How busy a loader keeps a GPU: a small DLRM-style model (an embedding bag per categorical id
column of the criteo preset, an MLP over its dense columns, their pairwise dot products, a top
MLP, binary cross-entropy on the label) trained for --steps steps of --batch-size rows, fed by
Stoker (`output="torch", device="cuda"`) and by a plain `torch.utils.data.DataLoader` over
PyArrow (benchmarks/loaders.py's "torch-dataloader", --workers worker processes, pinned
batches copied with non_blocking=True). Reports samples/s and the GPU's busy share two ways:

- step span: CUDA-event time from each step's first kernel to its last, summed, over the wall
  time of the timed steps (the share of the time the GPU had a step under way);
- NVML: the driver's utilization (a kernel running), sampled every 50 ms in a thread, when
  `pynvml` (nvidia-ml-py) is importable.

    python benchmarks/gpu_utilization.py --data data/criteo --steps 300 --workers 4 \\
        --json gpu_utilization.json

--data is written (`stoker gen --preset criteo --rows ROWS`) when the folder does not exist.
`--device cpu` runs the same loop on the CPU (no GPU figures): a smoke test for a machine
without CUDA. Without CUDA and without `--device cpu` it exits with status 2.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from stoker_devtools.bench import write_json

NVML_PERIOD_S = 0.05
WARMUP_STEPS = 20  # untimed: workers starting, the allocator's pools, cuBLAS's first calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a criteo-preset dataset folder")
    parser.add_argument("--rows", type=int, default=2_000_000,
                        help="rows to generate when --data does not exist")
    parser.add_argument("--steps", type=int, default=300, help="timed steps per loader")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    parser.add_argument("--embedding-dim", type=int, default=16)
    parser.add_argument("--device", default="cuda", help='"cuda", "cuda:N" or "cpu"')
    parser.add_argument("--loaders", default="stoker,torch-dataloader",
                        help="comma-separated: stoker, torch-dataloader")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be >= 1")
    unknown = set(args.loaders.split(",")) - {"stoker", "torch-dataloader"}
    if unknown:
        parser.error(f"--loaders: unknown {sorted(unknown)}")

    try:
        import torch
    except ImportError:
        print("gpu_utilization.py needs torch", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"no CUDA device (torch {torch.__version__}: torch.cuda.is_available() is False); "
              "use --device cpu for a smoke test", file=sys.stderr)
        return 2

    data = Path(args.data).resolve()
    if not data.exists():
        from stoker.cli import gen as _gen
        _gen.generate(data, _gen.GenOptions(preset="criteo", rows=args.rows, files=8),
                      progress=False)
    dense, categorical, cardinalities = criteo_columns(data)
    columns = ["label", *dense, *categorical]
    feeds = {"stoker": stoker_batches, "torch-dataloader": dataloader_batches}

    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "data": str(data), "batch_size": args.batch_size,
        "steps": args.steps, "workers": args.workers, "loaders": {},
    }
    for name in args.loaders.split(","):
        torch.manual_seed(0)
        model = make_model(len(dense), cardinalities, args.embedding_dim).to(device)
        batches = feeds[name](data, columns, args, device)
        result["loaders"][name] = train(model, batches, dense, categorical, args.steps, device)
        batches.close()  # the loader's threads or worker processes end here
    print_table(result)
    if args.json:
        write_json(args.json, result)
    return 0


def criteo_columns(data: Path) -> tuple[list[str], list[str], list[int]]:
    """The dense (I*) and categorical (C*) columns of a criteo-preset dataset, and each
    categorical column's cardinality (field metadata `stoker gen` writes)."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(next(iter(sorted(data.rglob("*.parquet")))))
    dense = [f.name for f in schema if f.name.startswith("I")]
    categorical = [f.name for f in schema if f.name.startswith("C")]
    if not dense or not categorical:
        raise SystemExit(f"{data}: not a criteo-preset dataset (no I*/C* columns)")
    cardinalities = [int(schema.field(c).metadata[b"cardinality"]) for c in categorical]
    return dense, categorical, cardinalities


def make_model(dense: int, cardinalities: list[int], dim: int) -> Any:
    """The DLRM-style model (defined here, where torch is imported: the script parses its
    arguments and fails cleanly without torch)."""
    import torch
    from torch import nn

    def mlp(*widths: int) -> nn.Sequential:
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(widths):
            layers += [nn.Linear(a, b), nn.ReLU()]
        return nn.Sequential(*layers[:-1])  # no activation after the last layer

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # sparse: a step touches 26 rows x batch of the tables, not all ~3.5M of them
            self.tables = nn.ModuleList(
                nn.EmbeddingBag(n, dim, mode="sum", sparse=True) for n in cardinalities)
            self.bottom = mlp(dense, 512, 256, dim)
            vectors = len(cardinalities) + 1
            self.top = mlp(dim + vectors * (vectors - 1) // 2, 512, 256, 1)

        def forward(self, dense_x: torch.Tensor, ids: list[torch.Tensor]) -> torch.Tensor:
            x = self.bottom(dense_x)
            vectors = torch.stack(
                [x] + [t(i.view(-1, 1)) for t, i in zip(self.tables, ids)], dim=1)
            dots = torch.bmm(vectors, vectors.transpose(1, 2))
            upper = torch.triu_indices(vectors.shape[1], vectors.shape[1], 1, device=x.device)
            return self.top(torch.cat([x, dots[:, upper[0], upper[1]]], dim=1)).squeeze(1)

    return Model()


def stoker_batches(data: Path, columns: list[str], args: Any, device: Any) -> Iterator[dict]:
    """Stoker's epochs, one after another, on the device already (device="cuda")."""
    import stoker

    loader = stoker.Loader(data, columns=columns, batch_size=args.batch_size, drop_last=True,
                           output="torch", device=str(device) if device.type == "cuda" else None)
    return endless(lambda: iter(loader))


def dataloader_batches(data: Path, columns: list[str], args: Any,
                       device: Any) -> Iterator[dict]:
    """The harness's DataLoader over PyArrow, pinned, each batch copied non_blocking."""
    import loaders  # benchmarks/, this script's folder

    on_gpu = device.type == "cuda"
    spec = loaders.Spec(loader="torch-dataloader", dataset=str(data), columns=columns,
                        batch_size=args.batch_size,
                        settings={"num_workers": args.workers, "pin_memory": on_gpu})
    for batch in endless(lambda: loaders.LOADERS["torch-dataloader"].batches(spec)):
        yield {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def endless(epoch: Callable[[], Iterator[dict]]) -> Iterator[dict]:
    """Epoch after epoch: --steps may exceed one."""
    while True:
        yield from epoch()


def train(model: Any, batches: Iterator[dict], dense: list[str], categorical: list[str],
          steps: int, device: Any) -> dict[str, Any]:
    """WARMUP_STEPS untimed steps, then `steps` timed ones: samples/s and the busy shares."""
    import torch

    cuda = device.type == "cuda"
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)  # SGD takes sparse gradients
    loss_fn = torch.nn.BCEWithLogitsLoss()
    spans: list[tuple[Any, Any]] = []  # (start, end) CUDA events of each timed step
    nvml = NvmlSampler(device) if cuda else None
    rows = 0
    for step in range(WARMUP_STEPS + steps):
        if step == WARMUP_STEPS:
            if cuda:
                torch.cuda.synchronize(device)
            if nvml:
                nvml.start()
            start, rows = time.perf_counter(), 0
        batch = next(batches)
        timed = step >= WARMUP_STEPS
        if cuda and timed:
            spans.append((torch.cuda.Event(enable_timing=True),
                          torch.cuda.Event(enable_timing=True)))
            spans[-1][0].record()
        dense_x = torch.log1p(torch.stack([batch[c] for c in dense], dim=1).clamp_min(0))
        logits = model(dense_x, [batch[c] for c in categorical])
        loss = loss_fn(logits, batch["label"])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if cuda and timed:
            spans[-1][1].record()
        rows += batch["label"].shape[0]
    if cuda:
        torch.cuda.synchronize(device)
    wall = time.perf_counter() - start
    out: dict[str, Any] = {"samples_per_s": rows / wall, "wall_s": wall,
                           "final_loss": loss.item()}
    if cuda:
        busy_ms = sum(s.elapsed_time(e) for s, e in spans)
        out["step_span_share"] = busy_ms / 1000 / wall
    if nvml:
        out["nvml_utilization"] = nvml.stop()
    return out


class NvmlSampler:
    """The GPU's utilization (NVML: the share of the last sample period with a kernel
    running) every NVML_PERIOD_S in a thread of its own, joined by stop(); None without
    pynvml."""

    def __init__(self, device: Any) -> None:
        import torch

        self._index = device.index if device.index is not None else torch.cuda.current_device()
        self._samples: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        try:
            import pynvml
        except ImportError:
            return
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(self._index)

        def sample() -> None:
            while not self._stop.wait(NVML_PERIOD_S):
                self._samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)

        self._thread = threading.Thread(target=sample, name="nvml-sampler")
        self._thread.start()

    def stop(self) -> float | None:
        """The mean utilization in [0, 1] over the samples (None: no pynvml, no samples)."""
        if self._thread is None:
            return None
        self._stop.set()
        self._thread.join()
        return sum(self._samples) / len(self._samples) / 100 if self._samples else None


def print_table(result: dict[str, Any]) -> None:
    print(f"{result['device']}, torch {result['torch']}, batch {result['batch_size']}, "
          f"{result['steps']} timed steps")
    print(f"{'loader':<18} {'samples/s':>12} {'step span':>10} {'NVML util':>10} {'loss':>8}")
    for name, r in result["loaders"].items():
        span, nvml = (r.get(key) for key in ("step_span_share", "nvml_utilization"))
        print(f"{name:<18} {r['samples_per_s']:>12,.0f} {_share(span):>10} {_share(nvml):>10} "
              f"{r['final_loss']:>8.4f}")


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


if __name__ == "__main__":
    sys.exit(main())
