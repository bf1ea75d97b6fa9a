"""What the timeline costs: shuffled epochs with `trace=` on and off, alternating, medians of
--repeats (docs/observability.md).

    python benchmarks/trace_cost.py --rows 2000000 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from statistics import median


def epoch_rate(source: Path, trace: Path | None, batch_size: int) -> float:
    import stoker

    loader = stoker.Loader(source, batch_size=batch_size, trace=trace)
    start = time.perf_counter()
    rows = sum(len(next(iter(batch.values()))) for batch in loader)  # the trace is written too
    return rows / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=4096)
    args = parser.parse_args()
    from stoker.cli import gen as _gen

    work = Path(tempfile.mkdtemp(prefix="stoker-trace-cost-"))
    _gen.generate(work / "criteo", _gen.GenOptions(preset="criteo", rows=args.rows, files=4),
                  progress=False)
    epoch_rate(work / "criteo", None, args.batch_size)  # warm-up: page cache, first touch
    off, on = [], []
    for _ in range(args.repeats):
        off.append(epoch_rate(work / "criteo", None, args.batch_size))
        on.append(epoch_rate(work / "criteo", work / "trace.json", args.batch_size))
    size = (work / "trace.json").stat().st_size
    print(f"trace off: {median(off) / 1e6:.2f}M rows/s  (runs {', '.join(f'{r / 1e6:.2f}' for r in off)})")
    print(f"trace on:  {median(on) / 1e6:.2f}M rows/s  (runs {', '.join(f'{r / 1e6:.2f}' for r in on)})")
    print(f"on / off:  {median(on) / median(off):.3f}; trace file {size / 1e6:.1f} MB per epoch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
