"""TorchRec's DLRM_DCN on one GPU, fed three ways (issue 46, item 8; docs/torchrec.md).

1. ceiling: the epoch's batches staged in GPU memory beforehand and looped (the GPU never
   waits on data);
2. stoker: ``output="torchrec"`` batches through ``TrainPipelineSparseDist`` (pinned host
   batches, the pipeline's own copy, input distribution and model overlapped);
3. python: the same rows as ragged numpy batches, the KeyedJaggedTensor built per batch in
   Python (what users write today), through the same pipeline.

Reports samples/s of each, stoker / ceiling, and the GPU's busy share (torch.cuda's
utilization over the timed steps, when pynvml is present). Needs a CUDA GPU with torch,
TorchRec and fbgemm-gpu installed there, and a multihot dataset:

    stoker gen DATA --preset multihot --rows 2000000 --files 16
    python benchmarks/studies/torchrec_gpu.py DATA --steps 200 --json $OUT/torchrec_gpu.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import stoker
import torch
import torch.distributed as dist
from stoker_devtools.bench import write_json
from torchrec.datasets.utils import Batch
from torchrec.distributed import DistributedModelParallel
from torchrec.distributed.train_pipeline import TrainPipelineSparseDist
from torchrec.models.dlrm import DLRM_DCN, DLRMTrain
from torchrec.modules.embedding_configs import EmbeddingBagConfig
from torchrec.modules.embedding_modules import EmbeddingBagCollection
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor


def schema_of(data: str) -> tuple[list[str], list[str], dict[str, int]]:
    first = min(p for p in os.listdir(data) if p.endswith(".parquet"))
    schema = pq.read_schema(os.path.join(data, first))
    sparse = [f.name for f in schema if f.name.startswith("C")]
    dense = [f.name for f in schema if f.name.startswith("I")]
    return sparse, dense, {k: int(schema.field(k).metadata[b"cardinality"]) for k in sparse}


def model_and_pipeline(sparse: list[str], dense: list[str], cardinality: dict[str, int],
                       device: torch.device) -> TrainPipelineSparseDist:
    torch.manual_seed(0)
    tables = [EmbeddingBagConfig(name=f"t_{k}", embedding_dim=128,
                                 num_embeddings=cardinality[k], feature_names=[k])
              for k in sparse]
    dlrm = DLRM_DCN(embedding_bag_collection=EmbeddingBagCollection(
                        tables=tables, device=torch.device("meta")),
                    dense_in_features=len(dense), dense_arch_layer_sizes=[512, 256, 128],
                    over_arch_layer_sizes=[1024, 1024, 512, 256, 1], dcn_num_layers=3,
                    dcn_low_rank_dim=512, dense_device=device)
    model = DistributedModelParallel(DLRMTrain(dlrm), device=device)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
    return TrainPipelineSparseDist(model, optimizer, device)


def timed(pipeline: TrainPipelineSparseDist, batches: Iterator[Any], steps: int,
          batch_size: int) -> dict[str, float]:
    for _ in range(10):  # warm: kernels, the pipeline's stages
        pipeline.progress(batches)
    torch.cuda.synchronize()
    busy = []
    started = time.perf_counter()
    for _ in range(steps):
        pipeline.progress(batches)
        with contextlib.suppress(Exception):  # torch.cuda.utilization needs pynvml
            busy.append(torch.cuda.utilization())
    torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    return {"samples_per_second": steps * batch_size / seconds,
            "gpu_busy_percent": float(np.mean(busy)) if busy else float("nan")}


def forever(loader: Any) -> Iterator[Any]:
    epoch = 0
    while True:
        loader.set_epoch(epoch)
        yield from loader
        epoch += 1


def python_batches(loader: Any, sparse: list[str], dense: list[str]) -> Iterator[Any]:
    for b in forever(loader):
        values = torch.from_numpy(np.concatenate([b[k] for k in sparse]))
        lengths = torch.from_numpy(np.concatenate(
            [np.diff(b[f"{k}_offsets"]).astype(np.int32) for k in sparse]))
        kjt = KeyedJaggedTensor.from_lengths_sync(keys=sparse, values=values, lengths=lengths)
        yield Batch(dense_features=torch.from_numpy(np.stack([b[c] for c in dense], axis=1)),
                    sparse_features=kjt, labels=torch.from_numpy(b["label"])).pin_memory()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--batch-size", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--json")
    args = parser.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=0, world_size=1)
    device = torch.device("cuda:0")
    sparse, dense, cardinality = schema_of(args.data)
    features = {"sparse": sparse, "dense": dense, "labels": ["label"]}
    common = {"batch_size": args.batch_size, "num_threads": args.threads, "drop_last": True}
    results: dict[str, Any] = {"batch_size": args.batch_size, "threads": args.threads}

    # 1. The ceiling: one epoch's batches (up to `steps`) on the GPU, looped.
    loader = stoker.Loader(args.data, output="torchrec", torchrec=features, **common)
    staged = [b.to(device) for b, _ in zip(loader, range(args.steps), strict=False)]
    def looped() -> Iterator[Any]:
        while True:
            yield from staged
    results["ceiling"] = timed(model_and_pipeline(sparse, dense, cardinality, device),
                               looped(), args.steps, args.batch_size)
    staged.clear()  # the GPU memory back before the next pipeline

    # 2. Stoker's batches, pinned on the host, through the pipeline.
    pinned = stoker.Loader(args.data, output="torchrec", torchrec=features, **common)
    results["stoker"] = timed(model_and_pipeline(sparse, dense, cardinality, device),
                              (b.pin_memory() for b in forever(pinned)), args.steps,
                              args.batch_size)

    # 3. The Python conversion from ragged numpy columns.
    numpy_loader = stoker.Loader(args.data, transforms=[{"op": "ragged", "column": k}
                                                        for k in sparse], **common)
    results["python"] = timed(model_and_pipeline(sparse, dense, cardinality, device),
                              python_batches(numpy_loader, sparse, dense), args.steps,
                              args.batch_size)
    ceiling = results["ceiling"]["samples_per_second"]
    results["stoker_over_ceiling"] = results["stoker"]["samples_per_second"] / ceiling
    results["python_over_ceiling"] = results["python"]["samples_per_second"] / ceiling
    print(json.dumps(results, indent=1))
    if args.json:
        write_json(args.json, results, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
