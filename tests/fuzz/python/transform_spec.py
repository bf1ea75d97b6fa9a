"""Fuzz target: transform specs (lists of dicts) through stoker.Loader — the spec's parser
(_core.transforms_from_spec, its shape checks), the engine's compile against the schema — and,
when the loader accepts one, an epoch of it. A bad spec may only raise the natural built-in
exceptions (fuzz_inputs.EXPECTED_ERRORS).

    python tests/fuzz/python/transform_spec.py [libFuzzer flags] [corpus dirs]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import stoker
from fuzz_inputs import EXPECTED_ERRORS, ROWS, Values, dataset
from stoker import _core

OPS = [op["name"] for op in _core.transform_ops()]
KEYS = sorted({key for op in _core.transform_ops()
               for key in [*op["required"], *op["optional"], *op["singular"]]})
COLUMNS = ["i", "f", "s", "l", "v", "nope"]
DTYPES = ["int8", "int32", "int64", "uint16", "float16", "float32", "float64", "bool", "utf8"]


def _field(values: Values, key: str) -> Any:
    """A value for `key`: mostly one of the right kind, sometimes anything at all."""
    if values.below(4) == 0:
        return values.value()
    if key in ("column", "output", "to"):
        return values.pick(COLUMNS)
    if key == "columns":
        return [values.pick(COLUMNS) for _ in range(values.below(4))]
    if key == "dtype":
        return values.pick(DTYPES)
    if key == "path":
        return values.pick([str(dataset() / "vocab.txt"), str(dataset() / "missing.txt"), ""])
    if key == "boundaries":
        return [values.number() for _ in range(values.below(5))]
    if key in ("num_buckets", "default", "length"):
        return values.integer()
    return values.number()


def spec(values: Values) -> Any:
    ops = []
    for _ in range(values.below(4)):
        op: dict[Any, Any] = {"op": values.pick(OPS) if values.below(8) else values.value()}
        for _ in range(values.below(5)):
            key = values.pick(KEYS) if values.below(8) else values.text()
            op[key] = _field(values, key)
        ops.append(op)
    return ops if values.below(16) < 15 else values.value()


def run(data: bytes) -> None:
    values = Values(data)
    transforms = spec(values)
    output = values.pick(["arrow", "numpy"])
    try:
        loader = stoker.Loader(str(dataset()), batch_size=50, shuffle_window=120, num_threads=2,
                               seed=1, output=output, transforms=transforms)
    except EXPECTED_ERRORS:
        return
    try:
        batches = list(loader)
    except EXPECTED_ERRORS:
        return
    # Arrow batches say their rows (a numpy batch of ragged columns holds values + offsets).
    rows = sum(batch.num_rows for batch in batches if output == "arrow")
    if output == "arrow" and rows != ROWS:
        raise AssertionError(f"an epoch of {transforms!r} delivered {rows} rows of {ROWS}")


if __name__ == "__main__":
    import atheris

    atheris.instrument_all()  # coverage of the Python code: stoker's and pyarrow's
    atheris.Setup(sys.argv, run)
    atheris.Fuzz()
