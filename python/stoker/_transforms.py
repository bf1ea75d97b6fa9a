"""The transform spec: a list of dicts, checked here for shape and normalized for the engine,
which validates it against the dataset's columns and types (docs/transforms.md)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from stoker import _core

# op -> {"required": keys, "optional": keys, "singular": {key: list key it stands for}}, from
# the engine's op descriptors (src/transform/ops/), in their order.
_OPS: dict[str, dict[str, Any]] = {op["name"]: op for op in _core.transform_ops()}

def _number(label: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{label}: {key} must be a number, got {value!r}")
    return float(value)


def _integer(label: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{label}: {key} must be an int, got {value!r}")
    return value


def normalize(transforms: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The ops as complete dicts for the engine; shape errors name the op's position."""
    if transforms is None:
        return []
    if isinstance(transforms, dict) or not isinstance(transforms, Sequence):
        raise TypeError("transforms must be a list of dicts such as "
                        "{'op': 'log1p', 'column': 'x'}")
    out = []
    for i, spec in enumerate(transforms):
        if not isinstance(spec, dict) or "op" not in spec:
            raise TypeError(f"transform {i}: expected a dict with an 'op' key, got {spec!r}")
        name = spec["op"]
        label = f"transform {i} ({name})"
        if name not in _OPS:
            raise ValueError(f"transform {i}: unknown op {name!r}; the ops are "
                             f"{', '.join(_OPS)}")
        required, optional = _OPS[name]["required"], _OPS[name]["optional"]
        spec = dict(spec)
        for one, many in _OPS[name]["singular"].items():
            if one in spec and many not in spec:
                spec[many] = [spec.pop(one)]
        allowed = {"op", *required, *optional}
        unknown = sorted(set(spec) - allowed)
        if unknown:
            raise ValueError(f"{label}: unknown key(s) {', '.join(unknown)}; it takes "
                             f"{', '.join(sorted(allowed - {'op'}))}")
        missing = [key for key in required if key not in spec]
        if missing:
            raise ValueError(f"{label}: missing {', '.join(missing)}")
        # Keys left out keep TransformOp's defaults (the engine fills them in).
        op = {"op": name}
        if "column" in spec:
            if not isinstance(spec["column"], str):
                raise TypeError(f"{label}: column must be a column name, got {spec['column']!r}")
            op["columns"] = [spec["column"]]
        if "columns" in spec:
            columns = spec["columns"]
            if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
                raise TypeError(f"{label}: columns must be a list of names, got {columns!r}")
            op["columns"] = list(columns)
        if "key" in spec:
            if not isinstance(spec["key"], str):
                raise TypeError(f"{label}: key must be a column name, got {spec['key']!r}")
            op["key"] = spec["key"]
        for key in ("output", "to"):
            if key in spec:
                if not isinstance(spec[key], str):
                    raise TypeError(f"{label}: {key} must be a column name")
                op["output"] = spec[key]
        if "dtype" in spec:
            op["dtype"] = str(spec["dtype"])
        if "value" in spec:
            value = spec["value"]
            op["value"] = value if isinstance(value, str) else _number(label, "value", value)
        for key in ("min", "max", "mean", "std", "p", "low", "high"):
            if key in spec:
                op[key] = _number(label, key, spec[key])
        if "boundaries" in spec:
            op["boundaries"] = [_number(label, "boundaries", b) for b in spec["boundaries"]]
        for key in ("num_buckets", "default", "length", "size"):
            if key in spec:
                op[key] = _integer(label, key, spec[key])
        if "path" in spec:
            op["path"] = os.fspath(spec["path"])
        out.append(op)
    return out
