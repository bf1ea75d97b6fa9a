"""`stoker bench`: Stoker's loader, shuffled and unshuffled, against plain pyarrow reading of
the same columns.

Each measurement runs in a fresh child process (`python -m stoker.cli.bench KIND OPTIONS_JSON`)
that prints its result as one JSON line, so peak resident memory and CPU time belong to one
reader alone. The pyarrow run reads the files in order with `ParquetFile.iter_batches` and
converts every column to numpy, without shuffling: the decode floor Stoker is measured against.
Stoker runs as asked and, when asked to shuffle, once more without: the two ratios to the floor
and their quotient tell what decoding costs and what the shuffle adds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from stoker._options import keywords as _keywords
from stoker.cli import flags as _flags
from stoker.cli.console import Progress, format_bytes, format_count, format_table
from stoker.cli.inspect import resolve_sources
from stoker.cli.meter import drain

__all__ = [
    "DESCRIPTION",
    "HELP",
    "OUTPUTS",
    "BenchOptions",
    "add_arguments",
    "arrow_to_numpy",
    "format_text",
    "run",
    "run_bench",
]

OUTPUTS = ("numpy", "torch", "arrow")
KINDS = ("stoker", "pyarrow")  # What a child process measures.
# The readers of a result, in table order: key -> (child kind, column heading).
READERS = {
    "stoker": ("stoker", "stoker"),
    "stoker_unshuffled": ("stoker", "stoker no-shuffle"),
    "pyarrow": ("pyarrow", "pyarrow"),
}
# The ratios of a result: key -> (reader over reader, how the text output names it).
RATIOS = {
    "shuffled_vs_pyarrow": ("stoker", "pyarrow", "stoker / pyarrow"),
    "unshuffled_vs_pyarrow": ("stoker_unshuffled", "pyarrow", "stoker no-shuffle / pyarrow"),
    "shuffled_vs_unshuffled": ("stoker", "stoker_unshuffled", "stoker / stoker no-shuffle"),
}

# Seconds-per-stage keys of Loader.stats(), in pipeline order, with their table labels.
STAGE_KEYS = (
    ("read_seconds", "read s"),
    ("decode_seconds", "decode s"),
    ("assemble_seconds", "assemble s"),
    ("wait_seconds", "wait s (stall)"),
)
WARM_CHUNK_BYTES = 8 << 20


@dataclasses.dataclass(frozen=True)
class BenchOptions:
    """One benchmark run. Loader options mirror `stoker.Loader` and keep its defaults; the loader
    validates them itself, `validate()` checks only what the benchmark relies on."""

    source: str
    columns: list[str] | None = None  # None: every column.
    batch_size: int = 4096
    shuffle: bool = True
    seed: int = 0
    shuffle_window: int | None = None  # None: the loader's default.
    num_threads: int | None = None  # None: the loader's default.
    prefetch: int | None = None  # None: the loader's default.
    epochs: int = 1  # Passes over the data; the pyarrow run makes as many.
    output: str = "numpy"  # One of OUTPUTS; the pyarrow run always converts to numpy.

    def validate(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {', '.join(OUTPUTS)}, got {self.output!r}")
        if self.columns is not None and not self.columns:
            raise ValueError("columns must name at least one column")


def run_bench(
    options: BenchOptions, *, pyarrow: bool = True, unshuffled: bool = True
) -> dict[str, Any]:
    """Measures Stoker as `options` say, then (if `unshuffled` and `options.shuffle`) Stoker
    without shuffle, then (if `pyarrow`) the pyarrow baseline, each in a child process.

    Returns {"source", "options", "stoker", "stoker_unshuffled", "pyarrow", "ratios", "ratio"}:
    a reader not measured is None, and so is every ratio that needs it. "ratios" maps each key
    of RATIOS to a quotient of rows/s; "ratio" is its "shuffled_vs_pyarrow" (Stoker as asked
    over the baseline), kept for scripts written before the unshuffled run. Raises
    FileNotFoundError when the source names no files and ChildProcessError when a measurement
    fails (its messages are on stderr).
    """
    options.validate()
    # The first reader would otherwise pay for cold reads that the next ones get for free.
    _warm_page_cache(resolve_sources([options.source]))
    wanted = {
        "stoker": options,
        "stoker_unshuffled": dataclasses.replace(options, shuffle=False)
        if unshuffled and options.shuffle
        else None,
        "pyarrow": options if pyarrow else None,
    }
    readers = {
        name: _run_child(READERS[name][0], reader_options) if reader_options else None
        for name, reader_options in wanted.items()
    }
    ratios = {key: _ratio(readers[top], readers[bottom]) for key, (top, bottom, _) in RATIOS.items()}
    return {
        "source": options.source,
        "options": dataclasses.asdict(options),
        **readers,
        "ratios": ratios,
        "ratio": ratios["shuffled_vs_pyarrow"],
    }


def _ratio(top: dict[str, Any] | None, bottom: dict[str, Any] | None) -> float | None:
    if top is None or bottom is None or bottom["rows_per_s"] <= 0:
        return None
    return top["rows_per_s"] / bottom["rows_per_s"]


def _warm_page_cache(files: list[str]) -> None:
    total = sum(os.path.getsize(path) for path in files)
    print(
        f"stoker bench: warming the page cache: {len(files)} file(s), {format_bytes(total)}",
        file=sys.stderr,
        flush=True,
    )
    for path in files:
        with open(path, "rb", buffering=0) as f:
            while f.read(WARM_CHUNK_BYTES):
                pass


def _run_child(kind: str, options: BenchOptions) -> dict[str, Any]:
    # The child sees the parent's import path, so it finds the same stoker (source tree,
    # editable or installed) however the parent found it.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [sys.executable, "-m", "stoker.cli.bench", kind, json.dumps(dataclasses.asdict(options))]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=env, check=False)
    if done.returncode != 0:
        raise ChildProcessError(
            f"the {kind} measurement failed (exit code {done.returncode}); see its messages above"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _measure(kind: str, options: BenchOptions) -> dict[str, Any]:
    """Runs one reader over the data for `options.epochs` epochs in this process.

    The clock starts just before the reader is built (Loader construction, or the pyarrow run's
    footer reads), so time to first batch includes setup. CPU time counts from the same point;
    peak RSS is the process's high-water mark, reported beside the one it had before the start.
    """
    if kind == "stoker" and options.output == "torch":
        import torch  # noqa: F401  (imported before the baseline so its import is not measured)
    baseline_rss = _peak_rss_bytes()
    cpu_before = _cpu_seconds()
    started = time.perf_counter()
    if kind == "stoker":
        loader = _make_loader(options)
        epoch_batches = len(loader)
        batches: Iterable[Any] = (batch for _ in range(options.epochs) for batch in loader)
        stats = loader.stats
    else:
        stats = None
        files = resolve_sources([options.source])
        epoch_batches = _pyarrow_batch_count(files, options.batch_size)
        batches = (b for _ in range(options.epochs) for b in _pyarrow_batches(files, options))
    progress = _progress(kind, epoch_batches * options.epochs, started)
    result = drain(iter(batches), started=started, on_batch=progress)
    result["cpu_seconds"] = _cpu_seconds() - cpu_before
    result["peak_rss_bytes"] = _peak_rss_bytes()
    result["baseline_rss_bytes"] = baseline_rss
    result["stats"] = dict(stats()) if stats is not None else None
    return result


def _make_loader(options: BenchOptions) -> Any:
    from stoker import Loader  # Needs the compiled engine, which gen and inspect do not.

    return Loader(
        options.source,
        columns=options.columns,
        batch_size=options.batch_size,
        shuffle=options.shuffle,
        seed=options.seed,
        shuffle_window=options.shuffle_window,
        num_threads=options.num_threads,
        prefetch=options.prefetch,
        output=options.output,
    )


def _pyarrow_batch_count(files: list[str], batch_size: int) -> int:
    import pyarrow.parquet as pq

    return sum(math.ceil(pq.read_metadata(path).num_rows / batch_size) for path in files)


def _pyarrow_batches(files: list[str], options: BenchOptions) -> Iterator[dict[str, Any]]:
    import pyarrow.parquet as pq

    for path in files:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=options.batch_size, columns=options.columns):
            yield arrow_to_numpy(batch)


def arrow_to_numpy(batch: Any) -> dict[str, Any]:
    """An Arrow record batch as {column: numpy array}, fixed-size lists as one more dimension,
    as Stoker delivers them, done by PyArrow itself (`to_numpy`): the PyArrow floor and the
    harness's PyArrow-based peers must measure PyArrow's own conversion, not the engine's
    (`_core.to_tensors`, which RemoteLoader uses)."""
    return {
        name: _column_to_numpy(column)
        for name, column in zip(batch.schema.names, batch.columns, strict=True)
    }


def _column_to_numpy(array: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_fixed_size_list(array.type):
        values = _column_to_numpy(array.flatten())
        return values.reshape(len(array), array.type.list_size, *values.shape[1:])
    return array.to_numpy(zero_copy_only=False)


def _progress(kind: str, total_batches: int, started: float) -> Callable[[int, int], None]:
    """Progress on stderr for `drain`, at most every few seconds."""
    ticker = Progress(f"stoker bench ({kind})")

    def report(count: int, rows: int) -> None:
        if ticker.due():
            rate = format_count(rows / (time.perf_counter() - started))
            ticker.write(f"batch {count:,}/{total_batches:,}, {rate} rows/s")

    return report


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports kilobytes.


def format_text(result: dict[str, Any]) -> str:
    """A table with one column per reader, then the throughput ratios."""
    options = result["options"]
    readers = [
        (heading, result[name])
        for name, (_, heading) in READERS.items()
        if result.get(name) is not None
    ]
    shuffle = f"shuffle (seed {options['seed']})" if options["shuffle"] else "no shuffle"
    columns = ",".join(options["columns"]) if options["columns"] else "all columns"
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("rows", lambda r: f"{r['rows']:,}"),
        ("batches", lambda r: f"{r['batches']:,}"),
        ("rows/s", lambda r: format_count(r["rows_per_s"])),
        ("MB/s", lambda r: f"{r['mb_per_s']:.1f}"),
        ("first batch s", lambda r: _seconds(r["first_batch_seconds"])),
        ("wall s", lambda r: _seconds(r["seconds"])),
        ("CPU s (user+sys)", lambda r: _seconds(r["cpu_seconds"])),
        ("cores busy", lambda r: f"{r['cpu_seconds'] / r['seconds']:.2f}"),
        ("peak RSS", lambda r: format_bytes(r["peak_rss_bytes"])),
        ("RSS growth", lambda r: format_bytes(r["peak_rss_bytes"] - r["baseline_rss_bytes"])),
        ("bytes read", lambda r: _stat(r, "bytes_read", format_bytes)),
        *((label, lambda r, key=key: _stat(r, key, _seconds)) for key, label in STAGE_KEYS),
    ]
    table = [["", *(kind for kind, _ in readers)]]
    table += [[label, *(cell(reader) for _, reader in readers)] for label, cell in rows]
    heading = (
        f"{result['source']}: batch size {options['batch_size']}, {shuffle}, "
        f"{options['epochs']} epoch(s), {options['output']} output, {columns}"
    )
    lines = [heading, *format_table(table)]
    for key, (_, _, label) in RATIOS.items():
        value = result["ratios"][key]
        if value is not None:
            lines.append(f"{label} rows/s: {value:.2f}x")
    return "\n".join(lines)


def _stat(reader: dict[str, Any], key: str, fmt: Any) -> str:
    stats = reader["stats"]
    if stats is None or key not in stats:
        return "-"
    return fmt(stats[key])


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _child_main(argv: list[str]) -> int:
    kind, options_json = argv
    if kind not in KINDS:
        raise SystemExit(f"unknown measurement {kind!r}; expected one of {', '.join(KINDS)}")
    options = BenchOptions(**json.loads(options_json))
    try:
        result = _measure(kind, options)
    except (ImportError, OSError, ValueError, KeyError, TypeError) as exc:
        # KeyError's str() is the repr of its key; show the message as written.
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"stoker bench ({kind}): error: {message}", file=sys.stderr)
        return 1
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))


# The command line: `stoker bench`.
HELP = "measure the loader, shuffled and not, against plain pyarrow reading"
DESCRIPTION = (
    "Run the Stoker loader over SOURCE, then (when it shuffles) the same loader without "
    "shuffle, then plain pyarrow reading the same columns in file order (the decode floor), "
    "each in a fresh process, and compare rows/s, MB/s, time to first batch, CPU time and peak "
    "memory: shuffled / floor, unshuffled / floor and shuffled / unshuffled."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help="a Parquet file, directory or glob")
    _keywords.add_flags(parser, ("columns", "batch_size", "shuffle", "seed", "shuffle_window",
                                 "num_threads", "prefetch"), defaults={"batch_size": 4096})
    parser.add_argument(
        "--epochs", type=_flags.positive_int, default=1, help="default: %(default)s"
    )
    parser.add_argument("--output", choices=OUTPUTS, default="numpy", help="default: %(default)s")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--skip-pyarrow", action="store_true", help="measure Stoker only, without the baseline"
    )
    parser.add_argument(
        "--skip-unshuffled",
        action="store_true",
        help="do not measure Stoker a second time without shuffle",
    )


def run(args: argparse.Namespace) -> int:
    options = _flags.options(BenchOptions, args)
    result = run_bench(options, pyarrow=not args.skip_pyarrow, unshuffled=not args.skip_unshuffled)
    print(json.dumps(result, indent=2) if args.json else format_text(result))
    return 0
