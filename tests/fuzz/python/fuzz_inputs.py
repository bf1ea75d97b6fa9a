"""What the Python fuzz targets share: a small dataset, Python values drawn from the fuzz
input, and the contract a bad argument must keep (tests/fuzz/README.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

# The exceptions a bad argument may raise: the natural built-in classes docs/design.md names.
# Anything else (RuntimeError, SystemError, IndexError, ...) or a crash is a finding.
EXPECTED_ERRORS = (TypeError, ValueError, KeyError, FileNotFoundError)

ROWS = 240


def dataset() -> Path:
    """A 240-row file in 4 row groups: i (int64), f (float64), s (string), l (list<float>),
    v (int64 ids); the vocabulary file `vocab.txt` beside it."""
    global _DATASET
    if _DATASET is None:
        out = Path(tempfile.mkdtemp(prefix="stoker-fuzz-"))
        ids = np.arange(ROWS, dtype=np.int64)
        table = pa.table({
            "i": ids,
            "f": ids * 0.5 - 10,
            "s": pa.array([f"t{k % 9}" for k in ids]),
            "l": pa.array([[float(k)] * int(k % 3) for k in ids], pa.list_(pa.float32())),
            "v": ids % 7,
        })
        pq.write_table(table, out / "data.parquet", row_group_size=60)
        (out / "vocab.txt").write_text("t1\nt2\nt3\n")
        _DATASET = out
    return _DATASET


_DATASET: Path | None = None


class Values:
    """Draws Python values off the front of a fuzz input; past its end every draw is 0 or
    empty. Plain Python, so `make test` replays kept inputs exactly without atheris."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk.ljust(n, b"\0")

    def below(self, n: int) -> int:
        """An int in [0, n)."""
        return self._take(1)[0] % n

    def pick(self, options: list[Any]) -> Any:
        return options[self.below(len(options))]

    def integer(self) -> int:
        """A small int, a wide one or one at the edge of the C++ integer types."""
        return self.pick([
            lambda: self.below(250) - 3,
            lambda: int.from_bytes(self._take(8), "little", signed=True),
            lambda: self.pick([2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**30]),
        ])()

    def number(self) -> float:
        return self.pick([
            lambda: self.integer() / 4,
            lambda: self.pick([float("nan"), float("inf"), -float("inf"), -0.0, 1e308, 5e-324]),
        ])()

    def text(self) -> str:
        return self._take(self.below(9)).decode("latin-1")

    def value(self, depth: int = 0) -> Any:
        """Any of: int, float, bool, None, str, bytes, and (not too deep) list, tuple, dict."""
        kinds = [self.integer, self.number, lambda: bool(self.below(2)), lambda: None,
                 self.text, lambda: self._take(self.below(5))]
        if depth < 2:
            kinds += [lambda: [self.value(depth + 1) for _ in range(self.below(4))],
                      lambda: (self.value(depth + 1), self.value(depth + 1)),
                      lambda: {self.text(): self.value(depth + 1) for _ in range(self.below(3))}]
        return self.pick(kinds)()
