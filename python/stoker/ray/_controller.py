"""The fleet's named actor: it holds what every server is started with, starts and stops
the server actors (it owns them, so they live as long as it does), and answers their
current addresses — waiting for Ray to restart one that died."""

from __future__ import annotations

from typing import Any

import ray

from stoker.ray._server import FlightServer


class FleetController:
    """A Ray actor class; ``stoker.ray.Fleet`` creates it under the fleet's name."""

    def __init__(self, source: str, num_servers: int, serve_options: dict[str, Any],
                 loader_options: dict[str, Any], server_actor_options: dict[str, Any]) -> None:
        self._server_class = ray.remote(FlightServer).options(**server_actor_options)
        self._args = (source, serve_options, loader_options)
        self._servers: list[Any] = []
        self.resize(num_servers)

    def resize(self, num_servers: int) -> None:
        """Starts servers up to `num_servers`, or stops the last ones down to it; returns
        once the new ones listen (a server's error, e.g. a bad dataset, is raised here)."""
        while len(self._servers) > num_servers:
            server = self._servers.pop()
            ray.kill(server, no_restart=True)
        started = [self._server_class.remote(*self._args)
                   for _ in range(num_servers - len(self._servers))]
        self._servers.extend(started)
        # Ray's types see an actor method as the plain method, without its .remote.
        ray.get([server.location.remote() for server in started])  # type: ignore[attr-defined]

    def addresses(self, timeout: float | None) -> list[str]:
        """The servers' locations in share order; a server Ray is restarting is waited for."""
        return ray.get([server.location.remote() for server in self._servers],
                       timeout=timeout)

    def info(self) -> list[dict[str, Any]]:
        return ray.get([server.info.remote() for server in self._servers])

    def shutdown(self) -> None:
        for server in self._servers:
            ray.kill(server, no_restart=True)
        self._servers = []
