"""The ``cache`` of a make_reader / make_batch_reader reader, for Petastorm's
``Reader.cleanup_cache()``: with ``cache_type="local-disk"`` the Loader's disk cache in
``cache_location``, whose files cleanup removes (as Petastorm removes its cache when the reader
exits); otherwise nothing to remove."""

from __future__ import annotations

import contextlib
from pathlib import Path

from stoker._loading import cache_dir as _cache_cli

# What the Loader's disk cache keeps in its directory besides its entries (docs/cache.md).
_LEDGER = "ledger"
_TEMPORARY = "tmp"


class NullCache:
    """No cache (``cache_type="null"``, Petastorm's default): cleanup removes nothing."""

    def cleanup(self) -> None:
        pass


class LocalDiskCache:
    """The disk cache in ``path``. cleanup removes its entries, ledger and temporary files,
    then the directory if nothing else is left in it: unlike Petastorm's (``rmtree``), files
    the cache did not write are never deleted."""

    def __init__(self, path: str) -> None:
        self.path = path

    def cleanup(self) -> None:
        root = Path(self.path)
        if not root.is_dir():
            return  # never written, or removed already
        _cache_cli.clear(self.path)
        (root / _LEDGER).unlink(missing_ok=True)
        for directory in (root / _TEMPORARY, root):
            with contextlib.suppress(OSError):  # not empty: another process, or other files
                directory.rmdir()
