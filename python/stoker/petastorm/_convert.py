"""Arrow columns of a Stoker batch as the values Petastorm delivers: numpy arrays of each
field's shape (a decoded codec column is one nested level per dimension: fixed-size lists
where the size is known, lists where it is not), numpy scalars, str, or None for a null."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def row_getter(array: pa.Array) -> Callable[[int], Any]:
    """A function giving row i of ``array`` as Petastorm would deliver it."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    kind = array.type
    if not (pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind)):
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
            values = array.to_numpy(zero_copy_only=False)
            if array.null_count == 0:
                return values.__getitem__
            return lambda i: None if not array[i].is_valid else values[i]
        values = array.to_pylist()
        return values.__getitem__
    if _all_fixed(kind):
        dims = _fixed_dims(kind)
        flat = _leaf(array)
        tensors = flat.reshape((len(array), *dims))
        if array.null_count == 0:
            return tensors.__getitem__
        return lambda i: None if not array[i].is_valid else tensors[i]
    return lambda i: _ragged_row(array, i)


def column_values(array: pa.Array) -> Any:
    """The whole column as Petastorm's batch reader delivers it: a numpy array of shape
    (rows, *shape) when every row has the same shape, else an object array of per-row arrays."""
    if (pa.types.is_fixed_size_list(array.type) and _all_fixed(array.type)
            and array.null_count == 0):
        return _leaf(array).reshape((len(array), *_fixed_dims(array.type)))
    if not (pa.types.is_fixed_size_list(array.type) or pa.types.is_list(array.type)):
        if array.null_count == 0 and (pa.types.is_integer(array.type)
                                      or pa.types.is_floating(array.type)):
            return array.to_numpy()
        out = np.empty(len(array), dtype=object)
        out[:] = array.to_pylist()
        return out
    get = row_getter(array)
    out = np.empty(len(array), dtype=object)
    for i in range(len(array)):
        out[i] = get(i)
    return stack_rows(out)


def stack_rows(values: np.ndarray) -> np.ndarray:
    """An object array of per-row arrays as one array of shape (rows, *shape) when every row
    is an array of one shape (Petastorm's batch reader stacks list columns so); else as it is."""
    if (values.dtype == object and len(values)
            and all(isinstance(v, np.ndarray) for v in values)
            and len({(v.shape, v.dtype) for v in values}) == 1):
        return np.stack(list(values))
    return values


def _all_fixed(kind: pa.DataType) -> bool:
    while pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind):
        if pa.types.is_list(kind):
            return False
        kind = kind.value_type
    return True


def _fixed_dims(kind: pa.DataType) -> list[int]:
    dims = []
    while pa.types.is_fixed_size_list(kind):
        dims.append(kind.list_size)
        kind = kind.value_type
    return dims


def _leaf(array: pa.Array) -> np.ndarray:
    """The values under every list level of ``array`` (its offset applied), as a numpy array
    of its own: writable, as Petastorm's values are (one copy per batch)."""
    while pa.types.is_fixed_size_list(array.type) or pa.types.is_list(array.type):
        if pa.types.is_fixed_size_list(array.type):
            # .values keeps the slots of null rows (flatten() drops them), so that row i is
            # still at i * size; a null row's slots are filled with 0 and never delivered.
            size = array.type.list_size
            array = array.values.slice(array.offset * size, len(array) * size)
            if array.null_count:
                array = pc.fill_null(array, 0)
        else:
            array = array.flatten()
    return np.array(array.to_numpy(zero_copy_only=False))


def _ragged_row(array: pa.Array, i: int) -> Any:
    if not array[i].is_valid:
        return None
    # Follows row i down the levels: its slice [start, stop) of each level and its size there.
    start, stop, dims, level = i, i + 1, [], array
    while pa.types.is_fixed_size_list(level.type) or pa.types.is_list(level.type):
        if pa.types.is_fixed_size_list(level.type):
            size = level.type.list_size
            start, stop = (level.offset + start) * size, (level.offset + stop) * size
        else:
            offsets = level.offsets.to_numpy()
            first, last = int(offsets[start]), int(offsets[stop])
            size = int(offsets[start + 1] - offsets[start]) if stop > start else 0
            start, stop = first, last
        dims.append(size)
        level = level.values
    values = level.slice(start, stop - start).to_numpy(zero_copy_only=False)
    return np.array(values).reshape(dims)
