"""Writes the seed inputs of the filter fuzz target: expressions serialized the way
stoker.Loader(filter=...) serializes them, which only pyarrow can write. The other targets
start from files (tests/data/parquet-testing, and the inputs kept under regressions/<target>/,
tickets and transform specs among them).

    python tests/fuzz/make_seeds.py OUT_DIR      # writes OUT_DIR/filter/*
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from stoker._options.convert import serialize_filter

# Over the columns of the fuzz targets' sample table (tests/fuzz/fuzz_support.cc).
FILTERS = [
    pc.field("i") > 0,
    pc.field("f") <= 10.5,
    (pc.field("i") > -10) & (pc.field("f") < 3.0),
    pc.field("s") == "v3",
    pc.field("b"),
    ~pc.field("b") | pc.field("i").is_null(),
    pc.field("i").isin([1, 2, 3]),
    pc.multiply(pc.field("n"), 7) == 21,
    pc.is_nan(pc.field("f")),
    pc.field("ts") > pa.scalar(5000, pa.timestamp("us")),
    pc.list_value_length(pc.field("l")) > 1,
    pc.field("f").cast(pa.int32(), safe=False) == 2,
]


def main() -> None:
    out = Path(sys.argv[1]) / "filter"
    out.mkdir(parents=True, exist_ok=True)
    for i, expression in enumerate(FILTERS):
        (out / f"seed-{i:02d}").write_bytes(serialize_filter(expression))


if __name__ == "__main__":
    main()
