"""The fleet's named actor: it holds what every server is started with, starts and stops
the server actors (it owns them, so they live as long as it does), answers their current
addresses — waiting for Ray to restart one that died — and, with autoscale, sizes the fleet
from its trainers' reports (_autoscale.py)."""

from __future__ import annotations

import time
from typing import Any

import ray

from stoker.ray._autoscale import AutoscaleOptions, Autoscaler
from stoker.ray._server import FlightServer


class FleetController:
    """A Ray actor class; ``stoker.ray.Fleet`` creates it under the fleet's name."""

    def __init__(self, source: Any, num_servers: int, serve_options: dict[str, Any],
                 loader_options: dict[str, Any], server_actor_options: dict[str, Any],
                 autoscale: dict[str, Any] | None = None) -> None:
        self._server_class = ray.remote(FlightServer).options(**server_actor_options)
        self._source, self._loader_options = source, loader_options
        self._args = (source, serve_options, loader_options)
        self._servers: list[Any] = []
        # Servers the autoscaler started that do not listen yet: (actor, its location's ref).
        self._starting: list[tuple[Any, Any]] = []
        self._autoscaler = None if autoscale is None else Autoscaler(
            AutoscaleOptions.of(autoscale))
        self._sizes: list[dict[str, Any]] = [{"time": round(time.time(), 3),
                                              "servers": num_servers, "why": "start"}]
        self._resize(num_servers)

    def resize(self, num_servers: int) -> None:
        """Starts servers up to `num_servers`, or stops the last ones down to it; returns
        once the new ones listen (a server's error, e.g. a bad dataset, is raised here)."""
        self._resize(num_servers)
        self._sizes.append({"time": round(time.time(), 3), "servers": num_servers,
                            "why": "resize"})

    def _resize(self, num_servers: int) -> None:
        self._promote(wait=True)
        while len(self._servers) > num_servers:
            server = self._servers.pop()
            ray.kill(server, no_restart=True)
        started = [self._server_class.remote(*self._args)
                   for _ in range(num_servers - len(self._servers))]
        self._servers.extend(started)
        # Ray's types see an actor method as the plain method, without its .remote.
        ray.get([server.location.remote() for server in started])  # type: ignore[attr-defined]

    def _promote(self, wait: bool) -> None:
        """Servers the autoscaler started join the fleet once they listen (all of them, and
        their errors raised, with `wait`); one that failed to start is dropped."""
        if not self._starting:
            return
        refs = [ref for _, ref in self._starting]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=None if wait else 0)
        still = []
        for server, ref in self._starting:
            if ref not in ready:
                still.append((server, ref))
                continue
            try:
                ray.get(ref)
                self._servers.append(server)
            except ray.exceptions.RayError as error:
                ray.kill(server, no_restart=True)
                if wait:
                    raise
                self._sizes.append({"time": round(time.time(), 3), "servers":
                                    len(self._servers) + len(self._starting) - 1,
                                    "why": f"a server failed to start: {error}"})
        self._starting = still

    def addresses(self, timeout: float | None) -> list[str]:
        """The servers' locations in share order; a server Ray is restarting is waited for."""
        self._promote(wait=False)
        return ray.get([server.location.remote() for server in self._servers],
                       timeout=timeout)

    def recipe(self) -> tuple[Any, dict[str, Any]]:
        """What every server reads and its Loader options: a trainer reading the fleet local
        first builds its own engine from them."""
        return self._source, dict(self._loader_options)

    def report(self, trainer: str, figures: dict[str, Any]) -> None:
        """A trainer's window (its stall and where it waited); with autoscale, the fleet
        grows or shrinks by one server when the policy says so (a new server joins once it
        listens: readers follow at their next look)."""
        if self._autoscaler is None:
            return
        now = time.monotonic()
        self._autoscaler.report(trainer, figures, now)
        self._promote(wait=False)
        size = len(self._servers) + len(self._starting)
        decided = self._autoscaler.decide(size, now)
        if decided is None:
            return
        wanted, why = decided
        if wanted > size:
            server = self._server_class.remote(*self._args)
            self._starting.append((server, server.location.remote()))  # type: ignore[attr-defined]
        elif self._starting:
            server, _ = self._starting.pop()
            ray.kill(server, no_restart=True)
        else:
            ray.kill(self._servers.pop(), no_restart=True)
        self._sizes.append({"time": round(time.time(), 3), "servers": wanted, "why": why})

    def history(self) -> list[dict[str, Any]]:
        """The fleet's size over time: each change, when and why."""
        return list(self._sizes)

    def info(self) -> list[dict[str, Any]]:
        return ray.get([server.info.remote() for server in self._servers])

    def shutdown(self) -> None:
        for server in self._servers + [server for server, _ in self._starting]:
            ray.kill(server, no_restart=True)
        self._servers, self._starting = [], []
