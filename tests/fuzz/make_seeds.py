"""Writes the seed inputs of the fuzz targets that have no corpus of their own (the parquet
target starts from tests/data/parquet-testing): filter expressions serialized the way
stoker.Loader(filter=...) serializes them, and tickets in the form docs/serve.md gives.

    python tests/fuzz/make_seeds.py OUT_DIR      # writes OUT_DIR/filter/*, OUT_DIR/ticket/*
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from stoker._options import serialize_filter

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

TICKETS = [
    "stoker1;config=00;epoch=0;rank=0;world=1;rounds=;shards=1;shard=0;chunk=1;first=0",
    "stoker1;epoch=3;rank=1;world=2;rounds=4:10,2:3",
    "stoker1;shards=3;shard=2;chunk=2;first=1",
    "stoker1;world=3;rank=2;rounds=1:100",
    "stoker1",
]


def main() -> None:
    out = Path(sys.argv[1])
    for kind, seeds in (("filter", [serialize_filter(f) for f in FILTERS]),
                        ("ticket", [t.encode() for t in TICKETS])):
        (out / kind).mkdir(parents=True, exist_ok=True)
        for i, seed in enumerate(seeds):
            (out / kind / f"seed-{i:02d}").write_bytes(seed)


if __name__ == "__main__":
    main()
