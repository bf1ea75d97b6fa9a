"""Which row group each row came from, for the two reader paths that need it (an NGram's
windows, a ``rowgroup_selector``'s picks): the Loader reads with ``with_row_origin``, and each
row's file and row in that file are placed among the row groups of the files' footers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from stoker.petastorm._metadata import resolve_url

# The columns with_row_origin adds: the NGram path and rowgroup_selector read them; they are
# not delivered.
ORIGIN_COLUMNS = ("_file_index", "_row_in_file")


class RowGroups:
    """Which row group each row of a ``with_row_origin`` batch belongs to, from the row
    counts in the files' footers (read once, one request per file)."""

    def __init__(self, files: Sequence[str]) -> None:
        self._starts = []  # per file: the first row (in the file) of each row group
        self._first_key = []  # per file: the dataset-wide number of its first row group
        key = 0
        for file in files:
            filesystem, path, _ = resolve_url(file)
            with filesystem.open_input_file(path) as f:
                metadata = pq.ParquetFile(f).metadata
            counts = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
            self._starts.append(np.cumsum([0, *counts[:-1]], dtype=np.int64))
            self._first_key.append(key)
            key += len(counts)

    def locate(self, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
        """(each row's dataset-wide row-group number, its row in its file)."""
        file_column, row_column = ORIGIN_COLUMNS
        files = batch.column(file_column).to_numpy()
        rows = batch.column(row_column).to_numpy()
        keys = np.empty(len(rows), dtype=np.int64)
        for file in np.unique(files):
            mine = files == file
            keys[mine] = self._first_key[file] + np.searchsorted(
                self._starts[file], rows[mine], side="right") - 1
        return keys, rows
