"""Child process of test_corpus.py: loads ONE file with stoker and with pyarrow and prints the
outcome as one JSON line on stdout. Run in its own process so that a crash or a hang of the
engine kills only this child, which the parent then attributes to the file.

    python _corpus_probe.py arrow|numpy PATH

Progress goes to stderr ("stage: ...") before every step that could crash, so the parent can
say where a child died. The JSON result is one of:

    {"status": "ok", ...}                           stoker loaded the file and matched pyarrow
    {"status": "error", "type": ..., "message": ...} stoker raised (construction or iteration)
    {"status": "mismatch", "detail": ...}           stoker loaded values that differ from pyarrow

plus, always, "reference": pyarrow's own outcome ("ok" or "error: Class: message").
"""

from __future__ import annotations

import faulthandler
import json
import struct
import sys
import traceback

faulthandler.enable()  # a crash dumps the Python stack to stderr before the signal kills us

BATCH_SIZE = 1000
NUM_THREADS = 2


def stage(text: str) -> None:
    print(f"stage: {text}", file=sys.stderr, flush=True)


def describe(exc: BaseException) -> dict:
    # KeyError's str() adds quotes; the message proper is its first argument.
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(message)}


def read_reference(path: str):
    """pyarrow's table for the file, or the exception pyarrow raised."""
    import pyarrow.parquet as pq

    stage("pyarrow.parquet.read_table")
    try:
        return pq.read_table(path), None
    except Exception as exc:  # noqa: BLE001 - any pyarrow failure just means "unreadable"
        return None, exc


def reference_info(table, exc) -> dict:
    if exc is not None:
        return {"reference": f"error: {type(exc).__name__}: {exc}"}
    return {
        "reference": "ok",
        "reference_rows": table.num_rows,
        "reference_schema": str(table.schema.remove_metadata()),
    }


def load_stoker(path: str, output: str):
    """(loader, batches) or raises whatever stoker raises."""
    import stoker

    stage(f"stoker.Loader(output={output!r}) construction")
    loader = stoker.Loader(
        path, batch_size=BATCH_SIZE, shuffle=False, seed=0, num_threads=NUM_THREADS, output=output
    )
    batches = []
    for i, batch in enumerate(loader):
        stage(f"stoker batch {i} received")
        batches.append(batch)
    stage("stoker epoch finished")
    return loader, batches


def check_batch_sizes(sizes: list[int], total: int, expected_batches: int) -> str | None:
    if sum(sizes) != total:
        return f"stoker delivered {sum(sizes)} rows, pyarrow reads {total}"
    if any(size != BATCH_SIZE for size in sizes[:-1]) or (
        sizes and not 0 < sizes[-1] <= BATCH_SIZE
    ):
        return f"batch sizes {sizes} are not {BATCH_SIZE} except a short last one"
    if len(sizes) != expected_batches:
        return f"len(loader) is {expected_batches} but {len(sizes)} batches came"
    return None


def _bitwise(value):
    """A value of to_pylist() with every float replaced by its bits, so NaN equals NaN."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, (list, tuple)):
        return tuple(_bitwise(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _bitwise(v)) for k, v in value.items())
    return value


def columns_equal(got, want) -> bool:
    """ChunkedArray.equals, with NaN equal to NaN. Arrow's equals says NaN != NaN, so a column
    holding a NaN is not even equal to itself; when equals fails, the values are compared
    again through Python with every float compared bit for bit."""
    if got.type != want.type or len(got) != len(want):
        return False
    return got.equals(want) or _bitwise(got.to_pylist()) == _bitwise(want.to_pylist())


def probe_arrow(path: str) -> dict:
    import pyarrow as pa

    try:
        loader, batches = load_stoker(path, "arrow")
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which judges it
        result = {"status": "error", **describe(exc)}
        result.update(reference_info(*read_reference(path)))
        return result
    table, exc = read_reference(path)
    result = reference_info(table, exc)
    result["stoker_rows"] = sum(b.num_rows for b in batches)
    result["stoker_schema"] = str(loader.schema.remove_metadata())
    if exc is not None:
        return {
            "status": "mismatch",
            **result,
            "detail": "stoker loaded the file but pyarrow cannot read it",
        }

    stage("comparing with pyarrow")
    expected_schema = table.schema.remove_metadata()
    if not loader.schema.remove_metadata().equals(expected_schema, check_metadata=False):
        return {
            "status": "mismatch",
            **result,
            "detail": f"loader.schema differs:\n  stoker:  {loader.schema}\n"
            f"  pyarrow: {expected_schema}",
        }
    for i, batch in enumerate(batches):
        if not batch.schema.equals(loader.schema, check_metadata=False):
            return {
                "status": "mismatch",
                **result,
                "detail": f"batch {i} schema {batch.schema} differs from loader.schema",
            }
    problem = check_batch_sizes([b.num_rows for b in batches], table.num_rows, len(loader))
    if problem:
        return {"status": "mismatch", **result, "detail": problem}

    got = pa.Table.from_batches(batches, schema=loader.schema).combine_chunks()
    want = table.combine_chunks()
    if got.num_rows != want.num_rows:
        return {
            "status": "mismatch",
            **result,
            "detail": f"{got.num_rows} rows from stoker, {want.num_rows} from pyarrow",
        }
    for name, got_col, want_col in zip(want.column_names, got.columns, want.columns):
        if not columns_equal(got_col, want_col):
            return {
                "status": "mismatch",
                **result,
                "detail": f"column {name!r} differs:\n  stoker:  {got_col.to_string()[:400]}"
                f"\n  pyarrow: {want_col.to_string()[:400]}",
            }
    if not got.equals(want) and not all(
        columns_equal(g, w) for g, w in zip(got.columns, want.columns)
    ):
        return {"status": "mismatch", **result, "detail": "tables differ (Table.equals)"}
    return {"status": "ok", **result}


def numpy_eligible(table) -> bool:
    """Every column numeric/bool/fixed-size list of numbers, with no nulls anywhere."""
    import pyarrow as pa
    import pyarrow.types as pt

    def ok_type(t: pa.DataType) -> bool:
        if pt.is_integer(t) or pt.is_floating(t) or pt.is_boolean(t):
            return True
        return (
            pt.is_fixed_size_list(t) and not pt.is_boolean(t.value_type) and ok_type(t.value_type)
        )

    def has_nulls(arr) -> bool:
        if arr.null_count:
            return True
        return pa.types.is_fixed_size_list(arr.type) and has_nulls(arr.flatten())

    return table.num_columns > 0 and all(
        ok_type(col.type) and not any(has_nulls(chunk) for chunk in col.chunks)
        for col in table.columns
    )


def to_numpy_reference(column):
    """pyarrow's to_numpy of a column; fixed-size lists become extra trailing dimensions."""
    import numpy as np
    import pyarrow as pa

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    shape = [len(arr)]
    while pa.types.is_fixed_size_list(arr.type):
        shape.append(arr.type.list_size)
        arr = arr.flatten()
    return np.asarray(arr.to_numpy(zero_copy_only=False)).reshape(shape)


def probe_numpy(path: str) -> dict:
    import numpy as np

    table, exc = read_reference(path)
    result = reference_info(table, exc)
    result["eligible"] = exc is None and numpy_eligible(table)
    try:
        loader, batches = load_stoker(path, "numpy")
    except Exception as exc2:  # noqa: BLE001 - reported to the parent, which judges it
        return {"status": "error", **result, **describe(exc2)}
    if exc is not None:
        return {
            "status": "mismatch",
            **result,
            "detail": "stoker loaded the file but pyarrow cannot read it",
        }

    stage("comparing with pyarrow to_numpy")
    for i, batch in enumerate(batches):
        if not isinstance(batch, dict) or list(batch) != table.column_names:
            return {
                "status": "mismatch",
                **result,
                "detail": f"batch {i} is not a dict of the columns {table.column_names}: "
                f"{type(batch).__name__} {list(batch)[:20]}",
            }
        bad = [k for k, v in batch.items() if not isinstance(v, np.ndarray)]
        if bad:
            return {
                "status": "mismatch",
                **result,
                "detail": f"batch {i}: columns {bad} are not numpy arrays",
            }
    sizes = [len(next(iter(b.values()))) if b else 0 for b in batches]
    problem = check_batch_sizes(sizes, table.num_rows, len(loader))
    if problem:
        return {"status": "mismatch", **result, "detail": problem}
    for name, column in zip(table.column_names, table.columns):
        want = to_numpy_reference(column)
        got = (
            np.concatenate([b[name] for b in batches])
            if batches
            else np.empty(want.shape, want.dtype)
        )
        if got.dtype != want.dtype or got.shape != want.shape:
            return {
                "status": "mismatch",
                **result,
                "detail": f"column {name!r}: stoker gives {got.dtype}{got.shape}, "
                f"pyarrow to_numpy {want.dtype}{want.shape}",
            }
        # Bitwise: NaN payloads and signed zeros must survive too.
        if np.ascontiguousarray(got).tobytes() != np.ascontiguousarray(want).tobytes():
            first = next(
                i
                for i in range(len(got))
                if np.asarray(got[i]).tobytes() != np.asarray(want[i]).tobytes()
            )
            return {
                "status": "mismatch",
                **result,
                "detail": f"column {name!r} differs first at row {first}: "
                f"stoker {got[first]!r}, pyarrow {want[first]!r}",
            }
    return {"status": "ok", **result}


def main() -> None:
    mode, path = sys.argv[1], sys.argv[2]
    try:
        result = probe_arrow(path) if mode == "arrow" else probe_numpy(path)
    except BaseException:  # noqa: BLE001 - a bug in the probe itself, not in stoker
        result = {"status": "probe-bug", "traceback": traceback.format_exc()}
    stage("done")
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
