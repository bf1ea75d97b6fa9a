"""Rows per second delivered into each framework: the same shuffled epoch read as numpy,
torch, jax, tensorflow (dict of tensors), through stoker.tf.dataset (tf.data) and through
stoker.keras.PyDataset — alternating, medians of --repeats (docs/frameworks.md). Every framework's
array is made when the batch is handed over (DLPack imports are eager), so the consumer only
counts rows: indexing a jax.Array or tf.Tensor would launch an op per column and measure
that framework's dispatch instead.

    python benchmarks/studies/framework_rates.py --rows 2000000 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from statistics import median

from stoker_devtools.bench import epoch_rate, interleaved, write_json

ROUTES = ("numpy", "torch", "jax", "tensorflow", "tf.data", "keras.PyDataset")


def route_rate(source: Path, route: str, batch_size: int) -> float:
    """Rows/s of one epoch through `route`; the loader is built before the clock starts, the
    route's adapter (tf.data, PyDataset) after."""
    import stoker

    output = {"tf.data": "tensorflow", "keras.PyDataset": "numpy"}.get(route, route)
    loader = stoker.Loader(source, batch_size=batch_size, output=output, seed=1)

    def batches() -> Iterator[dict]:  # a generator: the adapter is made on the clock
        if route == "tf.data":
            import stoker.tf
            yield from stoker.tf.dataset(loader)
        elif route == "keras.PyDataset":
            import stoker.keras
            data = stoker.keras.PyDataset(loader)
            yield from (data[i] for i in range(len(data)))
        else:
            yield from loader

    return epoch_rate(batches(), lambda batch: next(iter(batch.values())).shape[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    import jax
    jax.config.update("jax_enable_x64", True)  # Stoker's int64 columns stay int64
    from stoker.cli import gen as _gen

    work = Path(tempfile.mkdtemp(prefix="stoker-framework-rates-"))
    _gen.generate(work / "criteo", _gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                  progress=False)
    for route in ROUTES:  # warm-up: page cache, imports, first touch
        route_rate(work / "criteo", route, args.batch_size)
    rates = interleaved({route: lambda _, route=route: route_rate(work / "criteo", route,
                                                                  args.batch_size)
                         for route in ROUTES}, args.repeats)
    numpy = median(rates["numpy"])
    result = {route: {"rows_per_second": median(r), "vs_numpy": median(r) / numpy,
                      "runs": r} for route, r in rates.items()}
    for route, figures in result.items():
        print(f"{route:>16}: {figures['rows_per_second'] / 1e6:6.2f} M rows/s "
              f"({figures['vs_numpy']:.2f}x numpy)")
    if args.json:
        write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
