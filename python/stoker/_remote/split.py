"""Local first, remote for the rest: which source serves each batch of a RemoteLoader that
also reads on its own cores, and the controller that moves that split (docs/autotune.md).

A rank's batches are cut into chunks; in each period of `local + servers` chunks the first
`local` chunks come from the trainer's own engine and the next from the servers, one chunk
each. Which source serves a chunk never changes a batch (every source computes the plan's
batch b), so the split may move at any batch: the controller moves it from the consumer's
waits, window by window, as the engine's controller moves threads (src/exec/autotune.h)."""

from __future__ import annotations

import random
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

LOCAL = -1  # Layout.owner's answer for a batch the trainer's own engine serves


@dataclass(frozen=True)
class Layout:
    """Chunk c of `chunk` batches is served by the local engine when c mod (local + servers)
    is below `local`, else by server (c mod (local + servers)) - local."""

    local: int
    servers: int
    chunk: int

    @property
    def period(self) -> int:
        return self.local + self.servers

    def owner(self, batch: int) -> int:
        slot = (batch // self.chunk) % self.period
        return LOCAL if slot < self.local else slot - self.local

    def local_share(self) -> float:
        return self.local / self.period if self.period else 0.0


def chunk_batches(batch_size: int, shuffle: bool, shuffle_window: int, least: int,
                  windows: int) -> int:
    """Batches per chunk: `windows` shuffle windows' (every batch of a window draws on all
    of its row groups, so sources that take whole windows decode different ones; the batch
    that straddles two windows where one source hands over to the next makes both decode
    one window, so longer chunks waste less), at least `least` (the servers' chunk)."""
    window = shuffle_window if shuffle else batch_size
    return max(int(least), -(-int(window) * int(windows) // int(batch_size)))


@dataclass
class SplitOptions:
    """target_stall: the share of the consumer's time it may wait (0.01); window_batches and
    window_seconds: a window's least batches and seconds (64, 1.0); max_local: the most local
    chunks in a period (8); chunk_windows: shuffle windows per chunk (4); random_moves: a
    seed: move the split at random every window (tests: the batches must not change)."""

    target_stall: float = 0.01
    chunk_windows: int = 4
    window_batches: int = 64
    window_seconds: float = 1.0
    max_local: int = 8
    random_moves: int | None = None

    @classmethod
    def of(cls, given: dict[str, Any] | None) -> SplitOptions:
        options = cls()
        for key, value in (given or {}).items():
            if not hasattr(options, key):
                raise ValueError(f"split: unknown option '{key}' (known: "
                                 f"{', '.join(cls.__dataclass_fields__)})")
            setattr(options, key, value)
        if not 0 < options.target_stall < 1:
            raise ValueError(f"split target_stall must be between 0 and 1, got "
                             f"{options.target_stall}")
        if options.window_batches < 1 or options.window_seconds < 0 or \
                options.max_local < 1 or options.chunk_windows < 1:
            raise ValueError("split window_batches, max_local and chunk_windows must be >= 1 "
                             "and window_seconds >= 0")
        return options


@dataclass
class Window:
    """What one window of batches measured: wall seconds, the consumer's waits on local and
    on remote batches."""

    seconds: float
    batches: int
    local_wait: float
    remote_wait: float

    @property
    def stall(self) -> float:
        return (self.local_wait + self.remote_wait) / self.seconds if self.seconds > 0 else 0.0

    def figures(self) -> dict[str, float]:
        return {"stall": round(self.stall, 4),
                "local_wait": round(self.local_wait / self.seconds, 4) if self.seconds else 0.0,
                "remote_wait": round(self.remote_wait / self.seconds, 4) if self.seconds else 0.0}


@dataclass
class _Move:
    local: int  # the local chunks before the move
    stall: float  # the stall of the window that made it


@dataclass
class SplitController:
    """Moves `local` (the local chunks of a period) one step per window:

    - the consumer waited over target_stall of the window: on local batches more than twice
      as long as on remote ones (and some server is there to take more): one local chunk
      fewer; the other way round: one local chunk more (the fleet is asked for servers
      too); waits alike: no move (both kinds of source at capacity);
    - three windows in a row under a quarter of the target: one local chunk more (the
      trainer's own cores first);
    - the next window judges a move: one made on a stall that did not cut it by a tenth, or
      one made when quiet after which the stall is over the target, is undone, and that
      move (from that setting, in that direction) held for 4 windows, doubling up to 256 at
      each failure of it in a row; a move from another setting is not held by it (a split
      that undid 1 -> 2 still tries 0 -> 1)."""

    options: SplitOptions
    local: int = 1
    windows: int = 0
    decisions: int = 0
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=32))
    _quiet: int = 0
    _pending: _Move | None = None
    # (local chunks moved from, direction) -> the window until which that move is held
    _hold_until: dict[tuple[int, int], int] = field(default_factory=dict)
    _hold_length: dict[tuple[int, int], int] = field(default_factory=dict)
    _random: random.Random | None = None

    def __post_init__(self) -> None:
        if self.options.random_moves is not None:
            self._random = random.Random(self.options.random_moves)

    def decide(self, window: Window, servers: int) -> int:
        """The local chunks for the next window, given this one and the servers there are."""
        self.windows += 1
        before = self.local
        if self._random is not None:
            self.local = self._random.randint(0, self.options.max_local)
            if servers == 0:
                self.local = max(1, self.local)
            return self._made(before, window, "random")
        reason = self._judge(window)
        if reason is None and servers > 0:
            reason = self._step(window)
        return self._made(before, window, reason)

    def servers_short(self, window: Window) -> bool:
        """After decide(): the window stalled on the trainer's own batches and the split
        cannot give the servers more (a move to them stalled on them, was undone and is
        held; a move just made is judged by the next window first): the fleet, not the
        split, must answer it."""
        if window.stall <= self.options.target_stall or window.local_wait < window.remote_wait:
            return False
        return self._pending is None and \
            self._hold_until.get((self.local, -1), 0) > self.windows

    def _judge(self, window: Window) -> str | None:
        move, self._pending = self._pending, None
        if move is None:
            return None
        held = (move.local, 1 if self.local > move.local else -1)
        # A move made on a stall must cut it by a tenth; one made when quiet must keep the
        # stall under the target. Either costs a new pipeline on every source, so a move
        # that buys nothing is undone and not tried again for a while.
        worse = window.stall > move.stall * 0.9 if move.stall > self.options.target_stall \
            else True
        if window.stall > self.options.target_stall and worse:
            self.local = move.local
            length = min(256, self._hold_length.get(held, 2) * 2)
            self._hold_length[held] = length
            self._hold_until[held] = self.windows + length
            return "undo"
        self._hold_length[held] = 2  # it worked: the next failure holds 4 windows
        return None

    def _step(self, window: Window) -> str | None:
        target = self.options.target_stall
        if window.stall > target:
            self._quiet = 0
            # Only a clear imbalance moves the split: waits on both kinds of source alike
            # mean both are at capacity (the fleet is asked for more servers instead).
            if window.local_wait > 2 * window.remote_wait:
                return self._try(-1, window, "local stalls")
            if window.remote_wait > 2 * window.local_wait:
                return self._try(+1, window, "remote stalls")
            return None
        self._quiet = self._quiet + 1 if window.stall < target / 4 else 0
        if self._quiet >= 3:
            self._quiet = 0
            return self._try(+1, window, "quiet")
        return None

    def _try(self, direction: int, window: Window, reason: str) -> str | None:
        wanted = self.local + direction
        if not 0 <= wanted <= self.options.max_local:
            return None
        if self._hold_until.get((self.local, direction), 0) > self.windows:
            return None
        self._pending = _Move(self.local, window.stall)
        self.local = wanted
        return reason

    def _made(self, before: int, window: Window, reason: str | None) -> int:
        if reason is not None and self.local != before:
            self.decisions += 1
            self.recent.append({"window": self.windows, "time": round(time.time(), 3),
                                "local": [before, self.local], "why": reason,
                                **window.figures()})
        return self.local


class WindowMeter:
    """Adds up a window's batches and the consumer's waits on local and remote ones.
    Windows run on across epochs (short epochs are measured as well as long ones); the time
    between two epochs, the caller's own, counts in none."""

    def __init__(self, options: SplitOptions) -> None:
        self._options = options
        self._paused_at: float | None = None
        self.reset(time.perf_counter())

    def pause(self, now: float) -> None:
        if self._paused_at is None:
            self._paused_at = now

    def resume(self, now: float) -> None:
        if self._paused_at is not None:
            self._started += now - self._paused_at
            self._paused_at = None

    def reset(self, now: float) -> None:
        self._started, self._batches = now, 0
        self._local_wait = self._remote_wait = 0.0

    def skip(self, seconds: float) -> None:
        """A batch whose wait, `seconds`, is left out of the window: a source filling after
        it was opened (an epoch's start, a new split) rather than the setting. The batch
        counts toward the window's least batches."""
        self._started += seconds
        self._batches += 1

    def add(self, owner: int, wait: float) -> None:
        self._batches += 1
        if owner == LOCAL:
            self._local_wait += wait
        else:
            self._remote_wait += wait

    def done(self, now: float, period_batches: int = 0) -> Window | None:
        """The window, once it has its batches and seconds (the meter starts the next); at
        least a period's batches, so that it has seen every source at work."""
        seconds = now - self._started
        least = max(self._options.window_batches, period_batches)
        if self._batches < least or seconds < self._options.window_seconds:
            return None
        window = Window(seconds, self._batches, self._local_wait, self._remote_wait)
        self.reset(now)
        return window
