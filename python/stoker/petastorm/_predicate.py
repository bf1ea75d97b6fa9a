"""A Petastorm predicate (``in_lambda``, ``in_set``, any object with ``get_fields`` and
``do_include``) run in Python on the rows the Loader delivers: the slow path of
make_reader / make_batch_reader's ``predicate`` (the fast one is a pyarrow.compute
expression)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np


class PythonPredicate:
    """``predicate`` over the fields ``names`` the reader reads. make_reader gives
    ``do_include`` one row's fields as a dict; make_batch_reader gives it the batch's fields as
    a pandas DataFrame and takes a boolean per row back, as Petastorm's batch reader does,
    falling back to one call per row for a predicate that cannot take a DataFrame. A predicate
    naming no field, or a field not read, fails each ``next()`` with Petastorm's ValueError
    (``error``), not when the reader is made."""

    def __init__(self, predicate: Any, names: Sequence[str]) -> None:
        if not (hasattr(predicate, "get_fields") and hasattr(predicate, "do_include")):
            raise TypeError(f"predicate must be a pyarrow.compute expression (the fast path) or "
                            f"a Petastorm predicate with get_fields() and do_include(), got "
                            f"{predicate!r}")
        self.predicate = predicate
        self.fields = sorted(set(predicate.get_fields()))
        self.error: ValueError | None = None
        missing = sorted(set(self.fields) - set(names))
        if not self.fields:
            self.error = ValueError("At least one field name must be returned by predicate's "
                                    "get_fields() method")
        elif missing:
            self.error = ValueError(f"the predicate reads {missing}, which are not among the "
                                    f"fields read ({', '.join(names)}): add them to "
                                    f"schema_fields")
        warnings.warn("a Python predicate runs per row in the consumer's thread (the slow path); "
                      "a pyarrow.compute expression runs in the C++ workers and prunes row "
                      "groups (docs/petastorm.md)", stacklevel=5)

    def includes_row(self, row: dict[str, Any]) -> bool:
        return bool(self.predicate.do_include({f: row[f] for f in self.fields}))

    def mask(self, columns: dict[str, np.ndarray], rows: int) -> np.ndarray:
        """Which of a batch's ``rows`` rows to keep."""
        import pandas as pd

        frame = pd.DataFrame({f: list(columns[f]) if columns[f].ndim > 1 else columns[f]
                              for f in self.fields})
        try:
            keep = np.asarray(self.predicate.do_include(frame))
        except (TypeError, ValueError):
            keep = None  # it takes one row's values, not a DataFrame's columns
        if keep is None or keep.shape != (rows,) or keep.dtype != bool:
            keep = np.array([self.includes_row({f: columns[f][i] for f in self.fields})
                             for i in range(rows)], dtype=bool)
        return keep

    def matches_nothing(self, partitions: list[dict[str, str]], dtypes: dict[str, Any]) -> bool:
        """Whether, over a dataset's partition keys alone (one dict per file), the predicate
        keeps no file: Petastorm evaluates such a predicate before reading and warns."""
        if not partitions or set(self.fields) != set(partitions[0]):
            return False
        return not any(self.predicate.do_include({f: dtypes[f](keys[f]) for f in self.fields})
                       for keys in partitions)
