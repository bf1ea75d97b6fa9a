"""Console output shared by the CLI commands: throttled progress lines and readable units."""

from __future__ import annotations

import sys
import time
from typing import TextIO

# Often enough to show a long run is alive, rarely enough to cost nothing measurable.
PROGRESS_INTERVAL_S = 2.0


class Progress:
    """Paces status lines on stderr to at most one per `interval` seconds.

    A loop asks `due()` on every step, which costs one clock read, and builds and `write`s its
    line only when it is due.
    """

    def __init__(
        self, label: str, *, interval: float = PROGRESS_INTERVAL_S, stream: TextIO | None = None
    ) -> None:
        self._label = label
        self._interval = interval
        self._stream = stream if stream is not None else sys.stderr
        self._next = time.monotonic() + interval

    def due(self) -> bool:
        """True once `interval` seconds have passed since the last due() that was True."""
        now = time.monotonic()
        if now < self._next:
            return False
        self._next = now + self._interval
        return True

    def write(self, message: str) -> None:
        print(f"{self._label}: {message}", file=self._stream, flush=True)


def format_bytes(n: float) -> str:
    """Decimal units (kB, MB, GB), the ones throughput figures in MB/s use."""
    if abs(n) < 1000:
        return f"{n:.0f} B"
    for unit in ("kB", "MB", "GB"):
        n /= 1000
        if abs(n) < 1000:
            return f"{n:.1f} {unit}"
    return f"{n / 1000:.1f} TB"


def format_ms(ms: float) -> str:
    """A duration given in ms, in µs below 1 ms: 0.8 µs, 250 µs, 12.3 ms, 1,250 ms."""
    if ms < 1:
        return f"{ms * 1e3:.3g} µs"
    return f"{ms:,.1f} ms" if ms < 1e4 else f"{ms:,.0f} ms"


def format_count(n: float) -> str:
    """Short counts for rates: 950, 12.3k, 4.56M."""
    if abs(n) >= 1e9:
        return f"{n / 1e9:.2f}G"
    if abs(n) >= 1e6:
        return f"{n / 1e6:.2f}M"
    if abs(n) >= 1e3:
        return f"{n / 1e3:.1f}k"
    return f"{n:.0f}"


def format_table(rows: list[list[str]]) -> list[str]:
    """Aligned lines: the first column left-aligned (labels, paths), the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            [row[0].ljust(widths[0])]
            + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        )
        for row in rows
    ]
