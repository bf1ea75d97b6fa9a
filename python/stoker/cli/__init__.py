"""The `stoker` command: `gen` writes synthetic datasets, `inspect` describes datasets from their
footers, `index` writes a dataset's summary file `_metadata`, `bench` measures the loader against plain pyarrow reading, `cache` inspects or clears
a disk cache, `serve` streams batches over Arrow Flight, `state` shows where a saved checkpoint
stands, `doctor` measures an epoch and names what slows the data down."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import stoker
from stoker import _core
from stoker._loading import cache_dir as _cache_cli
from stoker._loading import mixture as _mixture
from stoker._options import keywords as _keywords
from stoker._remote import serve as _serve
from stoker.cli import bench as _bench
from stoker.cli import doctor as _doctor
from stoker.cli import gen as _gen
from stoker.cli import index as _index_cli
from stoker.cli import inspect as _inspect
from stoker.cli import state as _state_cli

__all__ = ["main"]

# The server options' defaults, from the engine's own option struct (the loader flags take
# theirs from _keywords, which reads LoaderOptions): the command line restates none of them.
_SERVE = _core.ServeOptions()


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line `argv` (default: sys.argv[1:]) and returns the exit code.

    Usage errors exit with 2 (argparse's convention); errors in the data or the environment
    (missing files, non-Parquet files, a failed measurement) print one line and return 1.
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        # Whoever read stdout stopped early (`stoker inspect ... | head`): nothing to report, but
        # stdout must not be flushed again at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (OSError, ValueError, TypeError) as exc:
        # TypeError: an option or a column the engine cannot serve (e.g. strings or nulls
        # into numpy/torch output); the message names it and the fix.
        print(f"stoker {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"stoker {args.command}: interrupted", file=sys.stderr)
        return 130


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="stoker", description="Stoker: a Parquet data loader for ML training."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {stoker.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_gen(commands)
    _add_inspect(commands)
    _add_index(commands)
    _add_bench(commands)
    _add_cache(commands)
    _add_serve(commands)
    _add_state(commands)
    _add_doctor(commands)
    return parser


def _add_state(commands: argparse._SubParsersAction) -> None:
    state = commands.add_parser(
        "state", help="show where a saved checkpoint stands",
        description="Print where a saved Loader.state_dict() stands: epoch, batches and rows "
        "consumed and left, world size and rank, the options digest. FILE is JSON, a pickle "
        "of plain data or a torch.save file (read with weights_only=True); the state may be "
        "nested in it, e.g. {'model': ..., 'data': loader.state_dict()} (docs/state.md).")
    state.add_argument("file", metavar="FILE")
    state.add_argument("--json", action="store_true", help="print JSON")
    state.set_defaults(run=_run_state)


def _run_state(args: argparse.Namespace) -> int:
    print(_state_cli.show(args.file, as_json=args.json))
    return 0


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve", help="stream batches to trainers over Arrow Flight",
        description="Run an Arrow Flight server that streams this dataset's batches to "
        "stoker.RemoteLoader trainers (docs/serve.md). Stops on Ctrl-C or SIGTERM.")
    serve.add_argument("source", metavar="SOURCE", nargs="?",
                       help="a file, directory or glob; delta://PATH_OR_S3_URI for a Delta "
                            "table (pinned with --delta-version); or --mixture")
    serve.add_argument("--delta-version", type=_int_at_least(0), metavar="N",
                       help="the version of a delta:// SOURCE to serve (default: the latest "
                            "when the server starts; either way the version is pinned)")
    serve.add_argument("--mixture", metavar="JSON_FILE",
                       help="serve a weighted mixture instead of SOURCE: {\"sources\": "
                            "[{\"path\": ..., \"weight\": ...}, ...], \"stop\": ...} "
                            "(docs/serve.md)")
    serve.add_argument("--host", default=_SERVE.host, help="bind address (default %(default)s)")
    serve.add_argument("--port", type=int, default=8815,
                       help="port to listen on (default %(default)s; 0 picks a free one)")
    serve.add_argument("--token-file", help="require this bearer token (file content)")
    serve.add_argument("--tls-cert", help="PEM certificate (with --tls-key): serve grpc+tls")
    serve.add_argument("--tls-key", help="PEM private key")
    serve.add_argument("--max-streams", type=_int_at_least(1), default=_SERVE.max_streams,
                       help="streams served at once; more are refused until one ends "
                            "(default %(default)s)")
    serve.add_argument("--chunk-batches", type=_int_at_least(1), default=_SERVE.chunk_batches,
                       help="batches per chunk when several servers share a plan (default "
                            "%(default)s)")
    serve.add_argument("--stream-idle-timeout", type=_int_at_least(0),
                       default=_SERVE.stream_idle_timeout_s,
                       help="seconds a client may ask for no batch before its stream is "
                            "released (its memory and threads freed; 0: never; default "
                            "%(default)s)")
    serve.add_argument("--trace", metavar="PATH",
                       help="keep a timeline of the engine's work for every stream and write "
                            "it to PATH as Chrome trace JSON (every 5 s while serving and at "
                            "exit)")
    serve.add_argument("--metrics-port", type=_int_at_least(0),
                       help="serve Prometheus metrics on this port (0: a free one; needs "
                            "stoker[metrics])")
    _add_loader_options(serve)
    serve.set_defaults(run=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    if (args.source is None) == (args.mixture is None):
        raise ValueError("stoker serve: give SOURCE or --mixture JSON_FILE (one of them)")
    source: Any = args.source
    if args.delta_version is not None and not str(source).startswith("delta://"):
        raise ValueError("stoker serve: --delta-version needs a delta:// SOURCE")
    if source is not None and source.startswith("delta://"):
        # The Loader resolves it once, when it is made: every batch served is of one version.
        source = stoker.delta_table(source, version=args.delta_version)
    if args.mixture is not None:
        source = _mixture.from_spec(json.loads(Path(args.mixture).read_text()),
                                    where=args.mixture)
    return _serve.serve(
        source, host=args.host, port=args.port, token_file=args.token_file,
        tls_cert=args.tls_cert, tls_key=args.tls_key, max_streams=args.max_streams,
        chunk_batches=args.chunk_batches, stream_idle_timeout_s=args.stream_idle_timeout,
        transforms_file=args.transforms, metrics_port=args.metrics_port, trace=args.trace,
        loader_options=_loader_options(args))


def _add_doctor(commands: argparse._SubParsersAction) -> None:
    doctor = commands.add_parser(
        "doctor", help="measure an epoch and name what slows the data down",
        description="Run a bounded, measured epoch of the loader through a simulated training "
        "step and report the loader's rate against the step's, the stage breakdown, whether "
        "the loader or the step is the bottleneck, the CPU budget against the threads "
        "running, CPU/memory/I/O pressure, run-queue delay, page faults and their latency, "
        "storage throughput, swap and transparent huge pages, each finding with a "
        "recommendation (docs/observability.md). Exits 0 whatever it finds; 1 when the epoch "
        "itself fails.")
    doctor.add_argument("source", metavar="SOURCE")
    _add_loader_options(doctor)
    doctor.add_argument("--step-ms", type=_float_at_least(0), default=0.0,
                        help="simulated training step per batch, in ms (default 0: none)")
    doctor.add_argument("--step-mode", choices=_doctor.STEP_MODES, default="sleep",
                        help="sleep: the step leaves the CPU free (an accelerator's); spin: "
                             "it keeps a CPU busy (default %(default)s)")
    doctor.add_argument("--seconds", type=_float_at_least(0.1), default=_doctor.DEFAULT_SECONDS,
                        help="stop after this many seconds (default %(default)s)")
    doctor.add_argument("--batches", type=_int_at_least(1), help="stop after this many batches")
    doctor.add_argument("--output", choices=("numpy", "torch", "arrow"), default="numpy",
                        help="what the batches become (torch: imports torch, whose intra-op "
                             "threads then count against the budget; default %(default)s)")
    doctor.add_argument("--no-probe", dest="probe", action="store_false",
                        help="do not run the page-fault probe")
    doctor.add_argument("--json", action="store_true", help="print the report as JSON")
    doctor.set_defaults(run=_run_doctor)


def _run_doctor(args: argparse.Namespace) -> int:
    transforms = json.loads(Path(args.transforms).read_text()) if args.transforms else None
    report = _doctor.measure(args.source,
                             loader_options={**_loader_options(args), "output": args.output},
                             transforms=transforms, step_ms=args.step_ms,
                             step_mode=args.step_mode, seconds=args.seconds,
                             batches=args.batches, probe=args.probe)
    print(json.dumps(report, indent=2) if args.json else _doctor.format_text(report))
    return 0


# The Loader options `serve` and `doctor` take as flags: every one a command line can spell
# (their help, defaults and checks are the Loader's: _keywords); --transforms names a file the
# command reads.
_LOADER_FLAGS = _keywords.LOADER_FLAGS


def _add_loader_options(parser: argparse.ArgumentParser) -> None:
    """The Loader options of the commands that run one (serve, doctor); `_loader_options`
    reads them back, but for --transforms (a file the command reads)."""
    _keywords.add_flags(parser, _LOADER_FLAGS, required=("batch_size",))
    parser.add_argument("--transforms", metavar="JSON_FILE", help="transform spec (a JSON list)")


def _loader_options(args: argparse.Namespace) -> dict[str, object]:
    return _keywords.flag_values(args, _LOADER_FLAGS)


def _add_cache(commands: argparse._SubParsersAction) -> None:
    cache = commands.add_parser(
        "cache", help="inspect or clear a disk cache",
        description="Inspect or clear a Stoker disk cache directory (docs/cache.md).")
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    info = actions.add_parser("info", help="entries and bytes a cache holds")
    info.add_argument("dir", metavar="DIR")
    info.add_argument("--json", action="store_true", help="print JSON")
    clear = actions.add_parser("clear", help="delete every entry of a cache")
    clear.add_argument("dir", metavar="DIR")
    cache.set_defaults(run=_run_cache)


def _run_cache(args: argparse.Namespace) -> int:
    if args.action == "info":
        print(_cache_cli.info(args.dir, as_json=args.json))
    else:
        print(_cache_cli.clear(args.dir))
    return 0


def _add_gen(commands: argparse._SubParsersAction) -> None:
    gen = commands.add_parser(
        "gen",
        help="write a synthetic Parquet dataset",
        description="Write a deterministic synthetic Parquet dataset: the same options give "
        "byte-identical files. Every preset has a row_id column numbering rows 0..N-1 in file "
        "order and a float32 0/1 label (25% positive).",  # a description is not %-formatted
    )
    gen.add_argument("out", metavar="OUT", help="output directory (created if missing)")
    gen.add_argument(
        "--preset",
        required=True,
        choices=_gen.PRESETS,
        help="criteo: 13 dense float32 + 26 skewed int64 ids; criteo-nulls: the same with 10%% "
        "nulls in the odd-numbered columns and a string column (domain); wide: --columns "
        "float32 features; embeddings: item_id + two fixed-size float32 vectors of --list-size; "
        "multihot: criteo's dense columns + 26 list<int32> bags of skewed ids, MLPerf "
        "DLRM-DCNv2's multi-hot sizes (1 to 100 ids a row on average); sequences: user_id, "
        "item_id and a user's history of items (list<int64>) with paired history_ts, "
        f"history_action and history_weight lists, 1 to {_gen.SEQUENCE_MAX_LENGTH} events "
        f"(median {_gen.SEQUENCE_MEDIAN_LENGTH})",
    )
    gen.add_argument("--rows", required=True, type=_positive_int, help="total rows")
    gen.add_argument("--seed", type=_non_negative_int, default=0, help="default: %(default)s")
    gen.add_argument(
        "--files", type=_positive_int, default=1, help="files to split rows into (default: 1)"
    )
    gen.add_argument(
        "--row-group-size",
        type=_positive_int,
        default=_gen.DEFAULT_ROW_GROUP_SIZE,
        help="rows per row group (default: %(default)s)",
    )
    gen.add_argument(
        "--compression", choices=_gen.COMPRESSIONS, default="snappy", help="default: snappy"
    )
    gen.add_argument(
        "--columns",
        type=_positive_int,
        help=f"wide only: feature columns (default: {_gen.DEFAULT_WIDE_COLUMNS})",
    )
    gen.add_argument(
        "--list-size",
        type=_positive_int,
        help=f"embeddings only: vector length (default: {_gen.DEFAULT_LIST_SIZE})",
    )
    gen.add_argument(
        "--overwrite", action="store_true", help="replace part-*.parquet files already in OUT"
    )
    gen.set_defaults(run=_run_gen, usage_error=gen.error)


def _run_gen(args: argparse.Namespace) -> int:
    options = _options(_gen.GenOptions, args)
    result = _gen.generate(args.out, options, overwrite=args.overwrite)
    print(_gen.summary_line(args.out, result))
    return 0


def _add_inspect(commands: argparse._SubParsersAction) -> None:
    inspect = commands.add_parser(
        "inspect",
        help="describe Parquet files from their footers",
        description="Print each file's row groups, rows and compressed bytes, the totals and "
        "the Arrow schema. Reads footers only.",
    )
    inspect.add_argument(
        "sources",
        metavar="SOURCE",
        nargs="+",
        help="a Parquet file, a directory (every *.parquet below it) or a glob pattern",
    )
    inspect.add_argument("--json", action="store_true", help="print JSON instead of a table")
    inspect.set_defaults(run=_run_inspect)


def _run_inspect(args: argparse.Namespace) -> int:
    report = _inspect.inspect_sources(args.sources)
    if args.json:
        print(json.dumps(_inspect.to_json(report), indent=2))
    else:
        print(_inspect.format_text(report))
    return 0


def _add_index(commands: argparse._SubParsersAction) -> None:
    index = commands.add_parser(
        "index",
        help="write a dataset directory's summary file _metadata",
        description="Read every data file's footer under SOURCE (a directory, local or "
        "s3://) and write SOURCE/_metadata: the Parquet summary file pyarrow, Dask and Spark "
        "use, plus each file's size and modification time in its key-value metadata. A "
        "Loader then starts from one listing and one read, and refuses an index that no "
        "longer matches the files (docs/large-datasets.md).",
    )
    index.add_argument("source", metavar="SOURCE", help="a dataset directory or s3:// prefix")
    index.add_argument("--overwrite", action="store_true",
                       help="replace an existing _metadata (a stale one, or another tool's)")
    index.add_argument("--checksums", action="store_true",
                       help="also record every column chunk's checksum (reads all the data "
                       "once): index=\"trust\" then checks the bytes it reads instead of "
                       "asking the store about each file, and catches any change to them")
    index.add_argument("--storage-options", metavar="JSON",
                       help="how to reach s3:// (a JSON object, as Loader's storage_options)")
    index.add_argument("--json", action="store_true", help="print JSON")
    index.set_defaults(run=_run_index)


def _run_index(args: argparse.Namespace) -> int:
    report = _index_cli.write(args.source, overwrite=args.overwrite, checksums=args.checksums,
                              storage_options=_index_cli.storage_from_json(args.storage_options))
    print(json.dumps(report, indent=2) if args.json else _index_cli.format_text(report))
    return 0


def _add_bench(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser(
        "bench",
        help="measure the loader, shuffled and not, against plain pyarrow reading",
        description="Run the Stoker loader over SOURCE, then (when it shuffles) the same "
        "loader without shuffle, then plain pyarrow reading the same columns in file order "
        "(the decode floor), each in a fresh process, and compare rows/s, MB/s, time to first "
        "batch, CPU time and peak memory: shuffled / floor, unshuffled / floor and shuffled / "
        "unshuffled.",
    )
    bench.add_argument("source", metavar="SOURCE", help="a Parquet file, directory or glob")
    _keywords.add_flags(bench, ("columns", "batch_size", "shuffle", "seed", "shuffle_window",
                                "num_threads", "prefetch"), defaults={"batch_size": 4096})
    bench.add_argument("--epochs", type=_positive_int, default=1, help="default: %(default)s")
    bench.add_argument(
        "--output", choices=_bench.OUTPUTS, default="numpy", help="default: %(default)s"
    )
    bench.add_argument("--json", action="store_true", help="print the results as JSON")
    bench.add_argument(
        "--skip-pyarrow", action="store_true", help="measure Stoker only, without the baseline"
    )
    bench.add_argument(
        "--skip-unshuffled",
        action="store_true",
        help="do not measure Stoker a second time without shuffle",
    )
    bench.set_defaults(run=_run_bench, usage_error=bench.error)


def _run_bench(args: argparse.Namespace) -> int:
    options = _options(_bench.BenchOptions, args)
    result = _bench.run_bench(
        options, pyarrow=not args.skip_pyarrow, unshuffled=not args.skip_unshuffled
    )
    print(json.dumps(result, indent=2) if args.json else _bench.format_text(result))
    return 0


Options = TypeVar("Options", _gen.GenOptions, _bench.BenchOptions)


def _options(kind: type[Options], args: argparse.Namespace) -> Options:
    """The options dataclass `kind` from the arguments of the same names, validated: an invalid
    combination is a usage error (exit code 2)."""
    options = kind(**{field.name: getattr(args, field.name) for field in dataclasses.fields(kind)})
    try:
        options.validate()
    except ValueError as exc:
        args.usage_error(str(exc))
    return options


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _float_at_least(minimum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value >= minimum:  # NaN too
            raise argparse.ArgumentTypeError(f"must be >= {minimum:g}, got {text}")
        return value

    return parse


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)

