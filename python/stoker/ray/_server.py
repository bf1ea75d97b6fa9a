"""One server of a fleet: `stoker serve` run inside a Ray actor's process, bound to the
address of the node Ray placed it on (no host is configured: on KubeRay that is the pod's
IP). Ray restarts the actor when its process dies; the restarted server listens on a new
port, possibly on another node, and the fleet answers the new address."""

from __future__ import annotations

import os
from typing import Any

import ray

from stoker._remote import serve as _serve


class FlightServer:
    """A Ray actor class (the controller applies ``ray.remote`` with the fleet's resources)."""

    def __init__(self, source: str, serve_options: dict[str, Any],
                 loader_options: dict[str, Any]) -> None:
        self._host = ray.util.get_node_ip_address()
        self._loader, self._server = _serve.start(
            source, serve_options={**serve_options, "host": self._host},
            loader_options=loader_options)

    def location(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host  # IPv6
        return f"grpc://{host}:{self._server.port}"

    def info(self) -> dict[str, Any]:
        """Where it runs and what it has sent: its location, process id, Ray node id and
        the server's counters (docs/observability.md)."""
        return {"location": self.location(), "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(),
                "stats": self._server.stats()}

    def shutdown(self) -> None:
        self._server.shutdown()
