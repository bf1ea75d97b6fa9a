"""What the timeline costs: shuffled epochs with `trace=` on and off, alternating, medians of
--repeats (docs/observability.md).

    python benchmarks/studies/trace_cost.py --rows 2000000 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from statistics import median

from stoker_devtools.bench import epoch_rate, interleaved, listed


def traced_rate(source: Path, trace: Path | None, batch_size: int) -> float:
    """Rows/s of one epoch (the trace is written too), the Loader built before the clock."""
    import stoker

    return epoch_rate(stoker.Loader(source, batch_size=batch_size, trace=trace))


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
    traced_rate(work / "criteo", None, args.batch_size)  # warm-up: page cache, first touch
    runs = interleaved({trace: lambda _, trace=trace: traced_rate(work / "criteo", trace,
                                                                  args.batch_size)
                        for trace in (None, work / "trace.json")}, args.repeats)
    off, on = runs[None], runs[work / "trace.json"]
    size = (work / "trace.json").stat().st_size
    print(f"trace off: {median(off) / 1e6:.2f}M rows/s  (runs {listed(off, 1e-6)})")
    print(f"trace on:  {median(on) / 1e6:.2f}M rows/s  (runs {listed(on, 1e-6)})")
    print(f"on / off:  {median(on) / median(off):.3f}; trace file {size / 1e6:.1f} MB per epoch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
