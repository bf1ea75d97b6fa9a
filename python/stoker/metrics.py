"""Prometheus metrics for trainers and servers (``pip install stoker[metrics]``: the
``prometheus_client`` package). docs/observability.md lists every metric.

    import stoker, stoker.metrics
    loader = stoker.Loader("data/", batch_size=4096)
    stoker.metrics.register(loader, rank=0)          # into prometheus_client's registry
    stoker.metrics.start_http_server(9108)           # or your own exporter

``stoker serve --metrics-port N`` serves the server's own metrics the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client import start_http_server as _start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from stoker._loading.stats_keys import CORE, ENGINE

__all__ = ["LoaderCollector", "ServerCollector", "register", "start_http_server"]

class LoaderCollector(Collector):
    """Reads ``stats()`` of a Loader or RemoteLoader-like object at every scrape.

    Args:
        stats: a callable returning a stats dict (``loader.stats``).
        labels: constant labels for every sample, e.g. ``{"rank": "0"}``.
    """

    def __init__(self, stats: Callable[[], dict[str, Any]], labels: dict[str, str]) -> None:
        self._stats = stats
        self._labels = dict(labels)

    def collect(self) -> Iterator[Any]:
        stats = self._stats()
        names, values = list(self._labels), list(self._labels.values())
        for stat in CORE + ENGINE:  # the keys this loader's stats() has
            if stats.get(stat.key) is None:
                continue
            kind = CounterMetricFamily if stat.kind == "counter" else GaugeMetricFamily
            family = kind(stat.metric, stat.help, labels=names)
            family.add_metric(values, stats[stat.key])
            yield family
        yield from self._gauges(stats, names, values)
        wait = stats.get("wait_per_batch")
        if wait:
            yield _histogram(wait, names, values)

    @staticmethod
    def _gauges(stats: dict[str, Any], names: list[str], values: list[str]) -> Iterator[Any]:
        """The gauges made of more than one key's value."""
        budget = stats.get("cpu_budget")
        if budget:
            family = GaugeMetricFamily("stoker_cpu_budget",
                                       "Whole CPUs the affinity mask and cgroup quota allow.",
                                       labels=names)
            family.add_metric(values, budget["cpus"])
            yield family
        wait = stats.get("wait_per_batch")
        if wait:
            family = GaugeMetricFamily("stoker_wait_per_batch_max_seconds",
                                       "Longest wait for one batch.", labels=names)
            family.add_metric(values, wait["max"])
            yield family


# A `stoker serve` process's own counters (Server.stats()): (key, name, kind, help).
_SERVER = [
    ("streams_started", "stoker_serve_streams_started", "counter", "Streams opened."),
    ("streams_active", "stoker_serve_streams_active", "gauge", "Streams open now."),
    ("streams_refused_busy", "stoker_serve_streams_refused_busy", "counter",
     "Streams refused because max_streams were open."),
    ("streams_released_idle", "stoker_serve_streams_released_idle", "counter",
     "Streams released after their client idled past stream_idle_timeout_s."),
    ("bad_tickets", "stoker_serve_bad_tickets", "counter",
     "Calls refused for a bad, foreign or out-of-limits ticket."),
    ("unauthenticated", "stoker_serve_unauthenticated", "counter",
     "Calls refused for a missing or wrong bearer token."),
    ("stream_errors", "stoker_serve_stream_errors", "counter", "Streams that ended in an error."),
    ("batches_sent", "stoker_serve_batches_sent", "counter", "Batches handed to Flight."),
    ("rows_sent", "stoker_serve_rows_sent", "counter", "Rows handed to Flight."),
    ("bytes_sent", "stoker_serve_bytes_sent", "counter", "Bytes of the batches' buffers."),
]


class ServerCollector(Collector):
    """Reads a `stoker serve` server's counters (``Server.stats``) at every scrape."""

    def __init__(self, stats: Callable[[], dict[str, Any]]) -> None:
        self._stats = stats

    def collect(self) -> Iterator[Any]:
        stats = self._stats()
        for key, name, kind, doc in _SERVER:
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(name, doc)
            family.add_metric([], stats[key])
            yield family


def _histogram(wait: dict[str, Any], names: list[str], values: list[str]) -> Any:
    """The per-batch wait as a Prometheus histogram, one bucket per doubling (every fourth
    of the engine's bounds) plus +Inf; cumulative counts, as Prometheus wants."""
    family = HistogramMetricFamily("stoker_wait_per_batch_seconds",
                                   "The consumer's wait for each batch.", labels=names)
    buckets, cumulative = [], 0
    bounds, counts = wait["bucket_bounds"], wait["bucket_counts"]
    for i, (bound, count) in enumerate(zip(bounds, counts)):
        cumulative += count
        last = i == len(bounds) - 1
        if last or i % 4 == 0:
            buckets.append(("+Inf" if last else repr(bound), cumulative))
    family.add_metric(values, buckets, sum_value=wait["sum"])
    return family


def register(loader: Any, registry: CollectorRegistry = REGISTRY,
             **labels: Any) -> LoaderCollector:
    """Registers a collector for ``loader`` (anything with ``stats()``); labels such as
    ``rank=0`` or ``job="train"`` tell several loaders apart."""
    collector = LoaderCollector(loader.stats, {k: str(v) for k, v in labels.items()})
    registry.register(collector)
    return collector


def start_http_server(port: int, addr: str = "127.0.0.1",
                      registry: CollectorRegistry = REGISTRY) -> tuple[Any, Any]:
    """Serves ``registry`` at http://addr:port/metrics from a daemon thread; returns
    ``(server, thread)`` (port 0 picks a free port: ``server.server_port``)."""
    return _start_http_server(port, addr=addr, registry=registry)
