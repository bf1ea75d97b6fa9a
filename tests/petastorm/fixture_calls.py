"""The calls of Petastorm's dataset writers (petastorm/tests/test_common.py) that the reader
tests make, and the key each is cached under. build_fixtures.py makes every call here once,
with Spark, in Petastorm's environment; stoker_plugin.py answers the same calls from that cache
in Stoker's. Plain Python: both environments import it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# (writer, rows, keyword arguments): rows is the row ids of create_test_dataset, the row count
# of the other two. Each comment names the fixture or test that makes the call.
CALLS: list[tuple[str, Any, dict[str, Any]]] = [
    ("create_test_dataset", range(100), {}),  # conftest.py: synthetic_dataset
    ("create_test_dataset", range(99), {"num_files": 1}),  # test_ngram_end_to_end
    ("create_test_dataset", [0, 3, 8, 10, 11, 20, 23], {"num_files": 1}),  # test_ngram_end_to_end
    ("create_test_dataset", range(0, 99, 5), {}),  # test_ngram_end_to_end
    ("create_test_scalar_dataset", 100, {}),  # conftest.py: scalar_dataset
    ("create_test_scalar_dataset", 4, {}),  # test_parquet_reader
    ("create_test_scalar_dataset", 10, {"partition_by": ["id"]}),  # test_parquet_reader
    ("create_test_scalar_dataset", 10, {"partition_by": ["string"]}),  # test_parquet_reader
    ("create_test_scalar_dataset", 10, {"partition_by": ["string", "id"]}),  # test_parquet_reader
    ("create_test_scalar_dataset", 1000, {"partition_by": ["id_div_700"]}),  # test_parquet_reader
    ("create_test_scalar_dataset", 3000, {"partition_by": ["id_div_700"]}),  # test_end_to_end
    ("create_many_columns_non_petastorm_dataset", 10, {}),  # conftest.py: many_columns_...
]


def call_key(writer: str, rows: Any, kwargs: dict[str, Any]) -> str:
    """The cache folder name of one writer call: its arguments but the URL and Spark session."""
    if isinstance(rows, Iterable):
        ids = list(rows)
        step = ids[1] - ids[0] if len(ids) > 1 else 1
        if ids == list(range(ids[0], ids[-1] + 1, step)) if ids else True:
            rows_text = f"{ids[0]}-{ids[-1]}-by{step}" if ids else "none"
        else:
            rows_text = "_".join(map(str, ids))
    else:
        rows_text = str(rows)
    parts = [writer, rows_text]
    for name in sorted(kwargs):
        if name == "spark":
            continue
        value = kwargs[name]
        parts.append(f"{name}={'+'.join(value) if isinstance(value, list) else value}")
    return "__".join(parts)
