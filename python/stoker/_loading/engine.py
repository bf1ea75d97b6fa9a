"""One dataset opened in the C++ engine (``_core.Loader``) from its options: a table source at
one snapshot, the schema, the files, the identity a saved state must match, and the engine's
stats. The Loader holds one; a MixtureLoader one per source."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from stoker import _core
from stoker._loading import state as _state
from stoker._loading import tables as _tables
from stoker._options import frameworks as _frameworks
from stoker._options import hints as _hints


class _CapsuleSchema:
    """Hands an Arrow C data interface schema capsule to pyarrow."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> Any:
        return self._capsule


class Engine:
    """The engine over `options` with batches as `output`; for a table source, at the
    snapshot of `table` (whose pin goes into the identity). Errors the engine raises for a
    source it could not read (`source`, `partitioning`: as the user gave them) carry a hint
    where one applies (_options/hints.py)."""

    def __init__(self, options: Any, output: str, *, table: _tables.Table | None = None,
                 storage_options: dict[str, Any] | None = None, source: Any = None,
                 partitioning: Any = None) -> None:
        self.pin = None
        if table is not None:
            snapshot = table.snapshot(storage_options)
            snapshot.apply(options)
            self.pin = snapshot.pin
        try:
            self.core = _core.Loader(options, output)  # validates, reads every footer
        except FileNotFoundError as error:
            if self.pin is None:
                raise
            raise FileNotFoundError(f"{_tables.pinned_name(self.pin)}: a file of that snapshot "
                                    f"is gone (vacuumed or expired?): {error}") from error
        except (KeyError, TypeError) as error:
            hinted = _hints.with_hint(error, source, partitioning)
            if hinted is error:
                raise
            raise hinted from error
        self.options = options
        self.core.warn_about_cache()
        self.schema = pa.schema(_CapsuleSchema(self.core.schema_capsule()))
        _frameworks.check_schema(output, self.schema)
        self.files = tuple(self.core.dataset()["files"])

    def config(self) -> dict[str, Any]:
        """The engine's configuration (``_core.Loader.config``), parsed."""
        return json.loads(self.core.config())

    def identity(self) -> dict[str, Any]:
        """What a saved state of this engine's reading must match (``_state.identity``), with
        the table's pin when it reads one."""
        identity = _state.identity(self.config())
        if self.pin is not None:
            identity["table"] = self.pin
        return identity

    def stats(self) -> dict[str, Any]:
        """The engine's counters (docs/observability.md), with ``cache_hit_rate``."""
        stats = self.core.stats()
        lookups = stats["cache_hits"] + stats["cache_misses"]
        stats["cache_hit_rate"] = stats["cache_hits"] / lookups if lookups else None
        return stats
