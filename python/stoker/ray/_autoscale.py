"""The fleet's size from its trainers' stall (docs/autotune.md, "The fleet"). Trainers reading
the fleet local first (``RemoteLoader(fleet, local=True)``) report each window's stall and
where they waited; the fleet's controller asks this policy, at most once per interval, for
the number of servers. No Ray here: the policy is a pure function of the reports and the
clock, tested on its own (tests/python/test_local_first.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AutoscaleOptions:
    """max_servers: the cap (required); min_servers: the floor (0: a fleet of none while its
    trainers' own cores keep up); target_stall: a trainer's wait share that asks for a server
    (0.02); interval_s: the least seconds between two changes (5); idle_intervals: intervals
    in a row with every trainer quiet (under a quarter of the target) before a server goes
    (3); report_ttl_s: a report older than this counts no more (30: a trainer that left)."""

    max_servers: int
    min_servers: int = 0
    target_stall: float = 0.02
    interval_s: float = 5.0
    idle_intervals: int = 3
    report_ttl_s: float = 30.0

    @classmethod
    def of(cls, given: dict[str, Any]) -> AutoscaleOptions:
        known = cls.__dataclass_fields__
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"autoscale: unknown option(s) {unknown} (known: "
                             f"{', '.join(known)})")
        if "max_servers" not in given:
            raise ValueError("autoscale needs max_servers (the most servers it may start)")
        options = cls(**given)
        if not 0 <= options.min_servers <= options.max_servers or options.max_servers < 1:
            raise ValueError(f"autoscale: need 0 <= min_servers <= max_servers and "
                             f"max_servers >= 1, got {options.min_servers} and "
                             f"{options.max_servers}")
        if not 0 < options.target_stall < 1 or options.interval_s < 0 or \
                options.idle_intervals < 1 or options.report_ttl_s <= 0:
            raise ValueError("autoscale: target_stall must be in (0, 1), interval_s >= 0, "
                             "idle_intervals >= 1, report_ttl_s > 0")
        return options


@dataclass
class Autoscaler:
    """Grows the fleet by one server when a trainer waited over the target on the fleet's
    batches, or on its own with no server at all, or on its own when its split cannot give
    the servers more (`servers_short`: it tried, and waited on them instead) — in any
    window reported since the last look, not just the latest; shrinks it by one after
    `idle_intervals` intervals in which every trainer reporting was under a quarter of the
    target (or none reported). A shrink that a trainer's stall answers within two intervals
    is taken back, and shrinking held for 2, 4, ... 64 intervals (doubling at each such
    failure in a row), so a fleet sized right does not flap. Every change is kept in
    `history`: (time, servers, reason)."""

    options: AutoscaleOptions
    reports: dict[str, tuple[float, dict[str, Any]]] = field(default_factory=dict)
    # Per trainer, its stalled window since the last look that asked for a server, if any.
    wanted: dict[str, dict[str, Any]] = field(default_factory=dict)
    history: list[dict[str, Any]] = field(default_factory=list)
    _last_look: float = float("-inf")
    _quiet: int = 0
    _shrunk_at: float | None = None
    _shrink_hold: int = 1
    _shrink_held_until: float = float("-inf")

    def report(self, trainer: str, figures: dict[str, Any], now: float) -> None:
        """A trainer's window: stall, remote_wait, local_wait (shares of its time), servers,
        servers_short (its split's word that the servers must take more)."""
        self.reports[trainer] = (now, dict(figures))
        if self._wants(figures):
            self.wanted[trainer] = dict(figures)

    def _wants(self, f: dict[str, Any]) -> bool:
        """A window that asks for one server more."""
        return f["stall"] > self.options.target_stall and (
            f.get("servers", 1) == 0 or f["remote_wait"] >= f["local_wait"]
            or bool(f.get("servers_short")))

    def decide(self, servers: int, now: float | None = None) -> tuple[int, str] | None:
        """The size to move to and why, or None; at most one look per interval."""
        now = time.monotonic() if now is None else now
        interval = self.options.interval_s
        if now - self._last_look < interval:
            return None
        self._last_look = now
        fresh = [figures for at, figures in self.reports.values()
                 if now - at <= self.options.report_ttl_s]
        target = self.options.target_stall
        wanting = [f for f in fresh if servers == 0 and f["stall"] > target]
        # A window read from fewer servers than there are now (one not joined yet when it
        # was measured) says nothing of the fleet's size now.
        wanting += [f for trainer, f in self.wanted.items()
                    if now - self.reports[trainer][0] <= self.options.report_ttl_s
                    and f.get("servers", servers) >= servers]
        self.wanted.clear()
        if wanting:
            self._quiet = 0
            if self._shrunk_at is not None and now - self._shrunk_at <= 2 * interval:
                self._shrink_hold = min(64, self._shrink_hold * 2)
                self._shrink_held_until = now + self._shrink_hold * interval
                reason = "stall after a shrink: undone"
            else:
                worst = max(wanting, key=lambda f: f["stall"])
                where = "on the fleet" if worst["remote_wait"] >= worst["local_wait"] or \
                    servers == 0 else "on its own share, the split at its limit"
                reason = f"stall {worst['stall']:.3f} {where}"
            self._shrunk_at = None
            if servers < self.options.max_servers:
                return self._change(servers + 1, reason)
            return None
        if self._shrunk_at is not None and now - self._shrunk_at > 2 * interval:
            self._shrunk_at, self._shrink_hold = None, 1  # the shrink held
        quiet = all(f["stall"] < target / 4 for f in fresh)
        self._quiet = self._quiet + 1 if quiet else 0
        if (self._quiet >= self.options.idle_intervals and servers > self.options.min_servers
                and now >= self._shrink_held_until):
            self._quiet = 0
            self._shrunk_at = now
            reason = "trainers quiet" if fresh else "no trainer reporting"
            return self._change(servers - 1, reason)
        return None

    def _change(self, servers: int, reason: str) -> tuple[int, str]:
        self.history.append({"time": round(time.time(), 3), "servers": servers,
                             "why": reason})
        return servers, reason
