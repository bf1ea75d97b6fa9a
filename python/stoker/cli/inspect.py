"""What a Parquet dataset holds, read from file footers only (`stoker inspect`)."""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from stoker.cli.console import format_bytes, format_table

__all__ = [
    "DESCRIPTION",
    "HELP",
    "FileInfo",
    "Report",
    "add_arguments",
    "format_text",
    "inspect_sources",
    "resolve_sources",
    "run",
    "to_json",
]

_GLOB_CHARS = frozenset("*?[")


def resolve_sources(sources: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The files named by `sources`, each a file, a directory or a glob pattern.

    A directory stands for every `*.parquet` file below it, a pattern for its matches
    (`**` recursive); each expands in sorted path order, the sources in the order given, and a
    file named twice is listed once. Raises FileNotFoundError naming a source that names nothing.
    """
    files: list[str] = []
    for source in sources:
        files += _expand(os.fspath(source))
    return list(dict.fromkeys(files))


def _expand(source: str) -> list[str]:
    if os.path.isdir(source):
        found = sorted(str(p) for p in Path(source).rglob("*.parquet") if p.is_file())
        if not found:
            raise FileNotFoundError(f"no *.parquet files under directory: {source}")
        return found
    if os.path.isfile(source):
        return [source]
    if _GLOB_CHARS.isdisjoint(source):
        raise FileNotFoundError(f"no such file or directory: {source}")
    matches = sorted(glob.glob(source, recursive=True))
    found = [f for match in matches for f in (_expand(match) if os.path.isdir(match) else [match])]
    if not found:
        raise FileNotFoundError(f"no files match pattern: {source}")
    return found


@dataclasses.dataclass(frozen=True)
class FileInfo:
    path: str
    row_groups: int
    rows: int
    compressed_bytes: int  # Column chunks as stored: encoded and compressed.
    uncompressed_bytes: int  # Column chunks after decompression (still encoded).
    file_bytes: int  # Size on disk, footer included.


@dataclasses.dataclass(frozen=True)
class Report:
    files: list[FileInfo]
    schema: pa.Schema  # The first file's.
    mismatched: list[str]  # Files whose schema differs from the first file's.

    def total(self, field: str) -> int:
        return sum(getattr(info, field) for info in self.files)


def inspect_sources(sources: Sequence[str | os.PathLike[str]]) -> Report:
    """Reads the footer of every file named by `sources`; no column data is read.

    Raises FileNotFoundError for a source that names nothing and ValueError naming a file that
    is not Parquet.
    """
    files = []
    schemas = []
    for path in resolve_sources(sources):
        try:
            metadata = pq.read_metadata(path)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc
        groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
        files.append(
            FileInfo(
                path=path,
                row_groups=metadata.num_row_groups,
                rows=metadata.num_rows,
                compressed_bytes=sum(
                    group.column(j).total_compressed_size
                    for group in groups
                    for j in range(group.num_columns)
                ),
                uncompressed_bytes=sum(group.total_byte_size for group in groups),
                file_bytes=os.path.getsize(path),
            )
        )
        schemas.append(metadata.schema.to_arrow_schema())
    mismatched = [
        info.path
        for info, schema in zip(files, schemas, strict=True)
        if not schema.equals(schemas[0], check_metadata=False)
    ]
    return Report(files=files, schema=schemas[0], mismatched=mismatched)


_SUMMED = ("row_groups", "rows", "compressed_bytes", "uncompressed_bytes", "file_bytes")
_COLUMNS = (
    ("row groups", "row_groups", lambda n: f"{n:,}"),
    ("rows", "rows", lambda n: f"{n:,}"),
    ("compressed", "compressed_bytes", format_bytes),
    ("uncompressed", "uncompressed_bytes", format_bytes),
)


def format_text(report: Report) -> str:
    """A table of the files and their totals, then the schema."""
    count = len(report.files)
    total_label = f"total ({count} file{'s' if count != 1 else ''})"
    rows = [
        [info.path] + [fmt(getattr(info, field)) for _, field, fmt in _COLUMNS]
        for info in report.files
    ]
    rows.append([total_label] + [fmt(report.total(field)) for _, field, fmt in _COLUMNS])
    header = ["path"] + [title for title, _, _ in _COLUMNS]
    lines = [*format_table([header, *rows]), ""]
    lines.append(f"schema ({len(report.schema)} columns):")
    lines += [f"  {_describe_field(field)}" for field in report.schema]
    if report.mismatched:
        lines.append("")
        lines.append(f"warning: schema differs from {report.files[0].path}'s in:")
        lines += [f"  {path}" for path in report.mismatched]
    return "\n".join(lines)


def _describe_field(field: pa.Field) -> str:
    text = f"{field.name}: {field.type}"
    if not field.nullable:
        text += " not null"
    if field.metadata:
        pairs = ", ".join(f"{_text(k)}={_text(v)}" for k, v in field.metadata.items())
        text += f"  ({pairs})"
    return text


def to_json(report: Report) -> dict[str, Any]:
    """The same content as `format_text`, with exact byte counts, as JSON-ready data."""
    totals = {field: report.total(field) for field in _SUMMED}
    return {
        "files": [dataclasses.asdict(info) for info in report.files],
        "total": {"files": len(report.files), **totals},
        "schema": [
            {
                "name": field.name,
                "type": str(field.type),
                "nullable": field.nullable,
                "metadata": {_text(k): _text(v) for k, v in (field.metadata or {}).items()},
            }
            for field in report.schema
        ],
        "schema_mismatch": report.mismatched,
    }


def _text(raw: bytes) -> str:
    return raw.decode(errors="replace")


# The command line: `stoker inspect`.
HELP = "describe Parquet files from their footers"
DESCRIPTION = ("Print each file's row groups, rows and compressed bytes, the totals and the Arrow "
               "schema. Reads footers only.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sources",
        metavar="SOURCE",
        nargs="+",
        help="a Parquet file, a directory (every *.parquet below it) or a glob pattern",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    report = inspect_sources(args.sources)
    if args.json:
        print(json.dumps(to_json(report), indent=2))
    else:
        print(format_text(report))
    return 0
