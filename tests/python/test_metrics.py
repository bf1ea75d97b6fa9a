"""stats()'s documented schema (per-batch wait quantiles, recent rate, cache hit rate,
threads and CPU budget), the Prometheus collector scraped over real HTTP, and `stoker serve
--metrics-port` scraped while a RemoteLoader reads from it."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import prometheus_client
import pyarrow as pa
import pytest
import stoker
from prometheus_client.parser import text_string_to_metric_families
from pyarrow import flight
from stoker import metrics
from stoker._loading.stats_keys import CORE
from stoker_devtools.serve import COLUMNS, OPTIONS, Server

KW = {"columns": ["row_id", "label", "I1"], "batch_size": 1000, "seed": 4}


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """Every sample at `url` as {(name, sorted labels): value}."""
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_stats_schema_and_per_batch_wait(criteo: Path, tmp_path: Path) -> None:
    loader = stoker.Loader(criteo, num_threads=2, cache_dir=tmp_path, **KW)
    batches = list(loader)
    stats = loader.stats()
    wait = stats["wait_per_batch"]
    assert wait["count"] == stats["batches"] == len(batches)
    assert sum(wait["bucket_counts"]) == wait["count"]
    assert len(wait["bucket_bounds"]) == len(wait["bucket_counts"])
    assert 0 <= wait["p50"] <= wait["p90"] <= wait["p99"] <= wait["max"]
    # The per-batch waits add up to the consumer's total wait, less the end-of-epoch wait.
    assert wait["sum"] <= stats["wait_seconds"] + 1e-6
    assert stats["recent_rows_per_second"] > 0  # batches delivered within the last 10 s
    assert stats["threads"] == 2 and stats["io_threads"] >= 1
    assert stats["cache_hit_rate"] == 0.0  # cold
    list(loader)
    assert loader.stats()["cache_hit_rate"] == pytest.approx(0.5)  # a warm epoch after a cold
    budget = stats["cpu_budget"]
    assert 1 <= budget["cpus"] <= budget["affinity"] == len(os.sched_getaffinity(0))
    assert stoker.Loader(criteo, **KW).stats()["cache_hit_rate"] is None


def test_prometheus_collector_over_http(criteo: Path) -> None:
    registry = prometheus_client.CollectorRegistry()
    loader = stoker.Loader(criteo, **KW)
    metrics.register(loader, registry=registry, rank=0)
    http, _ = metrics.start_http_server(0, registry=registry)
    try:
        rows = sum(len(b["row_id"]) for b in loader)
        samples = scrape(f"http://127.0.0.1:{http.server_port}/metrics")
        label = (("rank", "0"),)
        assert samples[("stoker_rows_total", label)] == rows
        assert samples[("stoker_batches_total", label)] == len(loader)
        assert samples[("stoker_wait_per_batch_seconds_count", label)] == len(loader)
        assert samples[("stoker_wait_per_batch_seconds_bucket", (("le", "+Inf"), *label))] \
            == len(loader)
        assert samples[("stoker_threads", label)] == loader.stats()["threads"]
        assert samples[("stoker_cpu_budget", label)] >= 1
    finally:
        http.shutdown()


def test_serve_metrics_port(criteo: Path) -> None:
    server = Server(criteo, "--metrics-port", "0")
    try:
        line = server.process.stdout.readline()
        assert "metrics on http://" in line, line
        url = line.split("metrics on ")[1].strip()
        remote = stoker.RemoteLoader([server.location], **OPTIONS)
        rows = sum(len(b["row_id"]) for b in remote)
        with pytest.raises((flight.FlightError, pa.ArrowInvalid), match="bad ticket"):
            flight.FlightClient(server.location).do_get(flight.Ticket(b"junk")).read_all()
        samples = scrape(url)
        assert samples[("stoker_serve_rows_sent_total", ())] == rows
        assert samples[("stoker_serve_batches_sent_total", ())] == len(remote)
        assert samples[("stoker_serve_streams_started_total", ())] >= 1
        assert samples[("stoker_serve_bad_tickets_total", ())] >= 1
        assert samples[("stoker_serve_streams_active", ())] >= 0
        # The server's loader: the stage times and rows of everything it served.
        assert samples[("stoker_rows_total", (("role", "server"),))] == rows
        assert samples[("stoker_decode_seconds_total", (("role", "server"),))] > 0
    finally:
        server.stop()



def test_every_loader_has_the_core_stats_keys(criteo: Path, servers) -> None:
    """rows, batches and wait_seconds (stats_keys.CORE, what stoker.metrics exports) are in
    every loader's stats(): the Loader's, a MixtureLoader's and a RemoteLoader's, counted as
    they deliver."""
    mixture = stoker.Mixture([stoker.Source(criteo, columns=COLUMNS, name="a"),
                              stoker.Source(criteo, columns=COLUMNS, name="b")])
    server = servers()
    loaders = [stoker.Loader(criteo, columns=COLUMNS, **OPTIONS),
               stoker.Loader(mixture, batch_size=1000),
               stoker.RemoteLoader(server.location, columns=COLUMNS, **OPTIONS)]
    for loader in loaders:
        batches = sum(1 for _ in loader)
        stats = loader.stats()
        assert {stat.key for stat in CORE} <= set(stats), type(loader).__name__
        assert stats["batches"] == batches > 0, type(loader).__name__
        assert stats["rows"] > 0 and stats["wait_seconds"] > 0.0, type(loader).__name__
