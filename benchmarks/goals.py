"""What `make bench` compares and what it holds Stoker to: the loaders, in the order every
table (report.py) and chart (charts.py) lists them, and the goals the issue set, which both
draw (docs/benchmarks.md, "Goals")."""

from __future__ import annotations

__all__ = [
    "FLAT_MEMORY",
    "LOADER_ORDER",
    "RATE_GOALS",
    "STALL_GOAL_FAST_RATE",
    "STALL_GOAL_PEER",
    "STALL_GOAL_STOKER",
]

LOADER_ORDER = (
    "stoker", "stoker-warm", "stoker-unshuffled", "pyarrow", "torch-dataloader", "petastorm",
    "ray-data", "streaming", "grain",
)  # fmt: skip
# Goals the issue holds Stoker to, as (peer, minimum ratio of Stoker's rows/s to the peer's);
# a target of None: the ratio is reported, with no goal.
RATE_GOALS = (
    ("stoker-unshuffled", 0.9), ("pyarrow", 1.0), ("petastorm", 10.0), ("ray-data", 15.0),
    ("streaming", None), ("grain", None),
)  # fmt: skip
STALL_GOAL_STOKER = 0.05  # Stoker's stall share must stay under this ...
STALL_GOAL_PEER = 0.50  # ... at an R where Petastorm's exceeds this.
STALL_GOAL_FAST_RATE = 4_000_000  # ... and at this R (rows/s) on criteo, too.
FLAT_MEMORY = 1.25  # Peak memory at the largest size over that at 1x: at most this is "flat".
