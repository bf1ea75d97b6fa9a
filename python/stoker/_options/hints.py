"""What the engine's errors cannot know, added to them: the fix for two mistakes a new user
makes — a Petastorm dataset read as plain Parquet, a hive-partitioned directory read
without ``partitioning="hive"``."""

from __future__ import annotations

import os
import re
from typing import Any

import pyarrow.parquet as pq

_MISSING_COLUMN = re.compile(r"column '([^']+)' not found")
_BINARY_COLUMN = re.compile(r"^'([^']+)': column '[^']+' has type (?:large_)?binary")


def with_hint(error: Exception, source: Any, partitioning: Any) -> Exception:
    """`error` with a hint appended when one applies (the same exception type), else `error`."""
    hint = None
    if isinstance(error, KeyError) and partitioning is None:
        hint = _hive_hint(str(error.args[0]) if error.args else "", source)
    elif isinstance(error, TypeError):
        hint = _petastorm_hint(str(error))
    if hint is None:
        return error
    message = str(error.args[0]) if isinstance(error, KeyError) else str(error)
    return type(error)(f"{message}. {hint}")


def _hive_hint(message: str, source: Any) -> str | None:
    missing = _MISSING_COLUMN.search(message)
    if missing is None or not isinstance(source, (str, os.PathLike)):
        return None
    root = os.fspath(source)
    if not os.path.isdir(root):
        return None
    key = missing.group(1)
    for _, directories, _ in os.walk(root):
        if any(name.startswith(f"{key}=") for name in directories):
            return (f"The directory names look like hive partitions ({key}=...): pass "
                    f'partitioning="hive" to read them as columns')
    return None


def _petastorm_hint(message: str) -> str | None:
    binary = _BINARY_COLUMN.search(message)
    if binary is None:
        return None
    from stoker.petastorm._metadata import UNISCHEMA_KEY  # stoker.petastorm imports the Loader
    try:
        metadata = pq.read_schema(binary.group(1)).metadata or {}
    except (OSError, ValueError):  # not a local file: no hint rather than a second error
        return None
    if UNISCHEMA_KEY not in metadata:
        return None
    return ("This is a Petastorm dataset: stoker.petastorm.make_loader(url, ...) decodes its "
            "encoded columns (docs/petastorm.md)")
