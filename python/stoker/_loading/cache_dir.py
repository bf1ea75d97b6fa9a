"""`stoker cache info DIR` and `stoker cache clear DIR`: what a disk cache holds, and emptying
it. Reads the layout documented in docs/cache.md; never touches anything else in DIR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ENTRY_SUFFIX = ".stkc"
MAGIC = b"STOKERC1"


def _entries(root: Path) -> list[Path]:
    return [p for p in root.glob(f"??/??/*{ENTRY_SUFFIX}") if p.is_file()]


def _check_dir(root: Path) -> None:
    if not root.is_dir():
        raise FileNotFoundError(f"cache directory '{root}' does not exist")


def info(directory: str, *, as_json: bool = False) -> str:
    root = Path(directory)
    _check_dir(root)
    entries = _entries(root)
    sizes = [p.stat().st_size for p in entries]
    foreign = [p for p in entries if p.open("rb").read(8) != MAGIC]
    temps = [p for p in (root / "tmp").glob("*") if p.is_file()]
    result: dict[str, Any] = {
        "dir": str(root),
        "entries": len(entries),
        "bytes": sum(sizes),
        "largest_entry_bytes": max(sizes, default=0),
        "subdirectories": len({p.parent for p in entries}),
        "not_entries": len(foreign),
        "temporary_files": len(temps),
    }
    if as_json:
        return json.dumps(result, indent=2)
    return "\n".join([
        f"cache {root}",
        f"  entries           {result['entries']:,}",
        f"  bytes             {result['bytes']:,} ({result['bytes'] / 2**20:.1f} MiB)",
        f"  largest entry     {result['largest_entry_bytes']:,} bytes",
        f"  subdirectories    {result['subdirectories']:,}",
        f"  temporary files   {result['temporary_files']:,} (writes in progress or abandoned)",
        f"  damaged headers   {result['not_entries']:,}",
    ])


def clear(directory: str) -> str:
    root = Path(directory)
    _check_dir(root)
    removed = freed = 0
    for path in _entries(root) + [p for p in (root / "tmp").glob("*") if p.is_file()]:
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            continue  # another process removed it first
        removed += 1
        freed += size
    for sub in sorted(root.glob("??/??"), reverse=True) + sorted(root.glob("??")):
        try:
            sub.rmdir()  # only if empty: another process may be writing
        except OSError:
            pass
    return f"removed {removed:,} file(s), {freed / 2**20:.1f} MiB, from {root}"
