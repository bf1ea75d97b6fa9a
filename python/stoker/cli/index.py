"""`stoker index SOURCE`: write a dataset directory's summary file `_metadata` (every data
file's footer in one object, each file's size and mtime in its key-value metadata), so a loader
starts with one listing and one read instead of a read per footer (docs/large-datasets.md)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from stoker import _core
from stoker._options import convert as _options


def write(source: str, *, storage_options: dict[str, Any] | None = None,
          overwrite: bool = False, checksums: bool = False) -> dict[str, Any]:
    """Writes `<source>/_metadata` and returns what was written: path, files, row_groups,
    bytes, checksums, bytes_checksummed and the seconds it took. With `checksums`, every
    column chunk is read once and its checksum recorded: a loader with index="trust" then
    checks the chunks it reads against them instead of asking the store about each file."""
    started = time.perf_counter()
    report = _core.write_index(source, _options.storage(storage_options), overwrite, checksums)
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def format_text(report: dict[str, Any]) -> str:
    checksummed = (f" (checksums of {report['bytes_checksummed']:,} bytes of column chunks)"
                   if report["checksums"] else "")
    return (f"wrote {report['path']}: {report['files']:,} files, {report['row_groups']:,} row "
            f"groups, {report['bytes']:,} bytes{checksummed} in {report['seconds']:.2f} s")


def storage_from_json(text: str | None) -> dict[str, Any] | None:
    """The --storage-options argument: a JSON object, as Loader's storage_options."""
    if text is None:
        return None
    value = json.loads(text)
    if not isinstance(value, dict):
        # A usage error the CLI reports in one line, as it does every ValueError.
        raise ValueError(f"--storage-options must be a JSON object, got {text!r}")  # noqa: TRY004
    return value


# The command line: `stoker index`.
HELP = "write a dataset directory's summary file _metadata"
DESCRIPTION = (
    "Read every data file's footer under SOURCE (a directory, local or s3://) and write "
    "SOURCE/_metadata: the Parquet summary file pyarrow, Dask and Spark use, plus each file's "
    "size and modification time in its key-value metadata. A Loader then starts from one "
    "listing and one read, and refuses an index that no longer matches the files "
    "(docs/large-datasets.md).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help="a dataset directory or s3:// prefix")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace an existing _metadata (a stale one, or another tool's)")
    parser.add_argument("--checksums", action="store_true",
                        help="also record every column chunk's checksum (reads all the data "
                        "once): index=\"trust\" then checks the bytes it reads instead of "
                        "asking the store about each file, and catches any change to them")
    parser.add_argument("--storage-options", metavar="JSON",
                        help="how to reach s3:// (a JSON object, as Loader's storage_options)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    report = write(args.source, overwrite=args.overwrite, checksums=args.checksums,
                   storage_options=storage_from_json(args.storage_options))
    print(json.dumps(report, indent=2) if args.json else format_text(report))
    return 0
