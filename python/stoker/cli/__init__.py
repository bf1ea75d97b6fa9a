"""The `stoker` command: `gen` writes synthetic datasets, `inspect` describes datasets from their
footers, `index` writes a dataset's summary file `_metadata`, `bench` measures the loader against
plain pyarrow reading, `cache` inspects or clears a disk cache, `serve` streams batches over Arrow
Flight, `state` shows where a saved checkpoint stands, `doctor` measures an epoch and names what
slows the data down. Each subcommand's flags and what runs it live in its module (_COMMANDS)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Protocol

import stoker
from stoker.cli import bench, cache, doctor, gen, index, inspect, serve, state
from stoker.cli.flags import LOADER_FLAGS as _LOADER_FLAGS  # noqa: F401  (tests read it here)

__all__ = ["main"]


class _Subcommand(Protocol):
    """What a subcommand's module exposes: its one-line help and description, its flags and
    what runs it (returning the exit code)."""

    HELP: str
    DESCRIPTION: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# The subcommands, in the order `stoker --help` lists them.
_COMMANDS: dict[str, _Subcommand] = {
    "gen": gen,
    "inspect": inspect,
    "index": index,
    "bench": bench,
    "cache": cache,
    "serve": serve,
    "state": state,
    "doctor": doctor,
}


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
    for name, command in _COMMANDS.items():
        sub = commands.add_parser(name, help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(sub)
        # usage_error: what an options dataclass that fails validate() reports (flags.options).
        sub.set_defaults(run=command.run, usage_error=sub.error)
    return parser
