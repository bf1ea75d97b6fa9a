"""``stoker.ray.Fleet``: N Stoker Flight servers as Ray actors, named and discoverable."""

from __future__ import annotations

import uuid
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from stoker._loading import mixture as _mixture
from stoker._loading import mixture_loader as _mixture_loader
from stoker._loading import tables as _tables
from stoker.ray._autoscale import AutoscaleOptions
from stoker.ray._controller import FleetController

# The Ray namespace fleets are named in, so that any job of the cluster finds one by name.
NAMESPACE = "stoker"


class Fleet:
    """A handle on a fleet of Stoker Flight servers run as Ray actors (docs/ray.md). It is
    small and picklable: pass it to Ray tasks and Ray Train workers, or find the fleet by
    name with ``Fleet.get``. ``stoker.RemoteLoader(fleet)`` reads it, resolving the servers'
    addresses at the start of each epoch and again when a server fails."""

    def __init__(self, controller: Any, name: str) -> None:
        self._controller, self.name = controller, name

    @classmethod
    def start(cls, source: Any, *, num_servers: int, name: str | None = None,
              num_cpus: float = 1, memory: int | None = None,
              resources: dict[str, float] | None = None,
              label_selector: dict[str, str] | None = None,
              scheduling_strategy: Any = "SPREAD", max_restarts: int = -1,
              detached: bool = False, token: str | None = None, chunk_batches: int = 16,
              max_streams: int = 16, stream_idle_timeout_s: int = 300,
              autoscale: dict[str, Any] | None = None, **loader_options: Any) -> Fleet:
        """Starts ``num_servers`` servers of ``source`` and returns once all listen.

        Args:
            source: what ``stoker.Loader`` reads (a path every node sees, or s3://...), or
                a ``stoker.delta_table`` / ``stoker.iceberg_table``: resolved to its snapshot
                here, once, so every server reads the same files (and no catalog travels).
            num_servers: servers to start (``resize`` changes it later); 0 with
                ``autoscale``: none until a trainer reading local first stalls.
            name: the fleet's name in the cluster (``Fleet.get(name)``, or
                ``RemoteLoader(name)``); None: a generated one (``fleet.name``).
            num_cpus, memory, resources: what Ray reserves for each server (memory in
                bytes; resources: custom ones, e.g. ``{"data_node": 1}`` to keep servers on
                the nodes started with that resource).
            label_selector: node labels a server's node must have, e.g.
                ``{"stoker-role": "data"}`` for nodes started with
                ``ray start --labels stoker-role=data``.
            scheduling_strategy: Ray's placement of the servers; "SPREAD" (default) puts them
                on different nodes where it can.
            max_restarts: how many times Ray restarts a server whose process died; -1:
                always.
            detached: the fleet outlives the job that started it (stop it with
                ``shutdown``); otherwise it ends with that job.
            token: a bearer token every reader must present (``RemoteLoader(token=)``).
            chunk_batches, max_streams, stream_idle_timeout_s: as ``stoker serve``'s.
            autoscale: size the fleet from its trainers' stall (docs/autotune.md):
                ``{"max_servers": N}`` and optionally ``min_servers`` (0),
                ``target_stall`` (0.02), ``interval_s`` (5), ``idle_intervals`` (3),
                ``report_ttl_s`` (30). Trainers report when they read it with
                ``RemoteLoader(fleet, local=True)``.
            loader_options: the servers' ``stoker.Loader`` options (batch_size, seed,
                columns, transforms, ...). ``num_threads`` defaults to ``num_cpus``.
        """
        if autoscale is not None:
            scaling = AutoscaleOptions.of(autoscale)  # a bad option raised here, not in Ray
            if not scaling.min_servers <= num_servers <= scaling.max_servers:
                raise ValueError(f"num_servers must be between autoscale's min_servers and "
                                 f"max_servers ({scaling.min_servers}..{scaling.max_servers}), "
                                 f"got {num_servers}")
        elif num_servers < 1:
            raise ValueError(f"num_servers must be >= 1, got {num_servers}")
        if isinstance(source, _mixture.Mixture):  # its refusals here, not as a dead server
            _mixture_loader.check_options(loader_options)
        # A Delta or Iceberg table (a mixture's sources' too) is resolved here, once: every
        # server reads that snapshot, and no catalog has to travel to them.
        storage = loader_options.get("storage_options")
        source = (source.resolved(storage) if isinstance(source, _mixture.Mixture)
                  else _tables.resolved(source, storage))
        name = name or f"fleet-{uuid.uuid4().hex[:8]}"
        loader_options.setdefault("num_threads", max(1, int(num_cpus)))
        serve_options = {"port": 0, "token": token or "", "chunk_batches": chunk_batches,
                         "max_streams": max_streams,
                         "stream_idle_timeout_s": stream_idle_timeout_s}
        server_actor_options: dict[str, Any] = {
            "num_cpus": num_cpus, "max_restarts": max_restarts,
            # A call to a server Ray is restarting waits for the restarted one.
            "max_task_retries": -1, "scheduling_strategy": scheduling_strategy}
        if memory is not None:
            server_actor_options["memory"] = memory
        if resources:
            server_actor_options["resources"] = resources
        if label_selector:
            server_actor_options["label_selector"] = label_selector
        # The controller takes no CPU and stays on the node that started the fleet. Not a
        # soft affinity: Ray places a zero-resource actor with one anywhere (seen on 2.60),
        # and a controller on a server's node would be lost with that node.
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(),
                                              soft=False)
        controller = ray.remote(FleetController).options(
            name=name, namespace=NAMESPACE, num_cpus=0, scheduling_strategy=here,
            lifetime="detached" if detached else None).remote(
                source, num_servers, serve_options, loader_options, server_actor_options,
                autoscale)
        fleet = cls(controller, name)
        try:
            fleet.addresses()  # raises what made a server fail to start
        except BaseException:
            # Ray's types make .options(...).remote() an ActorHandle or the class itself.
            ray.kill(controller)  # type: ignore[arg-type]
            raise
        return fleet

    @classmethod
    def get(cls, name: str) -> Fleet:
        """The running fleet called ``name`` (from any job of the cluster)."""
        try:
            return cls(ray.get_actor(name, namespace=NAMESPACE), name)
        except ValueError:
            raise ValueError(f"no Stoker fleet named '{name}' in this Ray cluster (a server "
                             f"address needs its scheme: grpc://host:port)") from None

    def addresses(self, timeout: float | None = None) -> list[str]:
        """The servers' Flight locations in share order (server k serves chunks c with
        c mod len == k). A server being restarted is waited for, up to ``timeout`` seconds
        (None: as long as it takes); TimeoutError past it. A server Ray cannot reach at this
        moment (its node just lost, its restart not yet begun) is a ConnectionError: ask
        again (RemoteLoader does, within its reconnect_timeout)."""
        try:
            return ray.get(self._controller.addresses.remote(timeout), timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise TimeoutError(f"fleet '{self.name}': servers not back within "
                               f"{timeout:g} s") from None
        except ray.exceptions.ActorUnavailableError as error:
            raise ConnectionError(f"fleet '{self.name}': a server is unavailable for now: "
                                  f"{error}") from error

    def recipe(self) -> tuple[Any, dict[str, Any]]:
        """The source every server reads and the servers' Loader options."""
        return ray.get(self._controller.recipe.remote())

    def report(self, trainer: str, figures: dict[str, Any]) -> None:
        """A trainer's window (stall, remote_wait, local_wait: shares of its time), sent
        without waiting; what an autoscaling fleet sizes itself from."""
        self._controller.report.remote(trainer, figures)

    def history(self) -> list[dict[str, Any]]:
        """The fleet's size over time: each change, its time (Unix seconds), the servers
        after it and why (start, resize, or the autoscaler's reason)."""
        return ray.get(self._controller.history.remote())

    def servers(self) -> list[dict[str, Any]]:
        """Each server's location, process id, Ray node id and counters."""
        return ray.get(self._controller.info.remote())

    def resize(self, num_servers: int) -> None:
        """Grows or shrinks the fleet; returns once new servers listen. Readers follow at
        their next epoch (and at once if a server they read from was stopped), with the same
        batches."""
        if num_servers < 1:
            raise ValueError(f"num_servers must be >= 1, got {num_servers}")
        ray.get(self._controller.resize.remote(num_servers))

    def shutdown(self) -> None:
        """Stops every server and the fleet's named actor."""
        ray.get(self._controller.shutdown.remote())
        ray.kill(self._controller)
