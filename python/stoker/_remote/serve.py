"""`stoker serve`: an Arrow Flight server streaming a Loader's batches (docs/serve.md)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any


def serve(source: Any, *, host: str, port: int, token_file: str | None,
          tls_cert: str | None, tls_key: str | None, max_streams: int, chunk_batches: int,
          stream_idle_timeout_s: int, loader_options: dict[str, Any],
          transforms_file: str | None, metrics_port: int | None = None,
          trace: str | None = None, shutdown_grace_s: int = 10) -> int:
    from stoker import _core
    from stoker._loading import mixture as _mixture
    from stoker._loading import mixture_loader as _mixture_loader

    token = Path(token_file).read_text().strip() if token_file else ""
    if token_file and not token:
        raise ValueError(f"token file '{token_file}' is empty")
    transforms = json.loads(Path(transforms_file).read_text()) if transforms_file else None
    trace_events = _core.DEFAULT_TRACE_EVENTS if trace else 0
    loader_options = {"transforms": transforms, "trace_events": trace_events, **loader_options}
    if isinstance(source, _mixture.Mixture):  # the flags it does not take, left unset
        loader_options = _mixture_loader.given(loader_options)
    loader, server = start(source, serve_options={
        "host": host, "port": port, "token": token, "max_streams": max_streams,
        "chunk_batches": chunk_batches, "stream_idle_timeout_s": stream_idle_timeout_s,
        "shutdown_grace_s": shutdown_grace_s,
        "tls_cert_pem": Path(tls_cert).read_text() if tls_cert else "",
        "tls_key_pem": Path(tls_key).read_text() if tls_key else ""},
        loader_options=loader_options)
    scheme = "grpc+tls" if tls_cert else "grpc"
    rows = json.loads(server.config())["rows"]
    print(f"stoker serve: listening on {scheme}://{host}:{server.port} ({rows:,} rows, "
          f"{len(loader)} batches per epoch for one rank)"
          f"{' with a bearer token' if token else ''}", flush=True)
    print(f"stoker serve: config {server.config()}", file=sys.stderr, flush=True)
    if metrics_port is not None:
        _serve_metrics(server, loader, host, metrics_port)
    if trace is None:
        server.serve()  # until Ctrl-C / SIGTERM, then its streams' grace
        return 0
    writer = _TraceWriter(loader, server, trace)
    try:
        server.serve()
    finally:
        writer.close()
    return 0


def start(source: Any, *, serve_options: dict[str, Any],
          loader_options: dict[str, Any]) -> tuple[Any, Any]:
    """A Loader over `source` and a Flight server over it, listening when this returns (on
    `server.port`): what `stoker serve` runs, and each server of a stoker.ray.Fleet.
    `serve_options` are ServeOptions' fields; `loader_options` stoker.Loader's. A
    stoker.Mixture is served as its MixtureLoader reads it: any rank's positions, the same
    batches."""
    import stoker
    from stoker import _core
    from stoker._loading import mixture as _mixture
    from stoker._loading import mixture_loader as _mixture_loader
    from stoker._options import convert as _options

    options = _core.ServeOptions()
    _options.assign(options, serve_options)
    options.validate()  # before the loader reads the dataset
    # The server delivers Arrow batches of any type; trainers convert them to tensors.
    if isinstance(source, _mixture.Mixture):
        mixture = _mixture_loader.MixtureLoader(source, output="arrow", **loader_options)
        return mixture, _core.Server(mixture._reader, mixture.identity_json(), options)
    loader = stoker.Loader(source, output="arrow", **loader_options)
    return loader, _core.Server(loader._core, options)


class _TraceWriter:
    """Writes the server's timeline to `path` every TRACE_INTERVAL_S seconds while batches
    are being sent, and once more when the server stops: a server killed outright leaves the
    timeline of all but its last seconds."""

    TRACE_INTERVAL_S = 5.0

    def __init__(self, loader: Any, server: Any, path: str) -> None:
        self._loader, self._server, self._path = loader, server, path
        self._stop = threading.Event()
        self._written = -1  # batches sent at the last write
        self._thread = threading.Thread(target=self._run, name="stoker-trace-writer")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.TRACE_INTERVAL_S):
            self.write()

    def write(self) -> None:
        sent = self._server.stats()["batches_sent"]
        if sent != self._written:
            self._loader.write_trace(self._path)
            self._written = sent

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._written = -1
        self.write()


def _serve_metrics(server: Any, loader: Any, host: str, port: int) -> None:
    """Prometheus metrics of the server and its loader at http://host:port/metrics."""
    try:
        from prometheus_client import CollectorRegistry

        from stoker import metrics
    except ImportError as error:
        raise RuntimeError("--metrics-port needs prometheus_client: pip install "
                           "'stoker[metrics]'") from error
    registry = CollectorRegistry()
    registry.register(metrics.ServerCollector(server.stats))
    metrics.register(loader, registry=registry, role="server")
    http, _ = metrics.start_http_server(port, addr=host, registry=registry)
    print(f"stoker serve: metrics on http://{host}:{http.server_port}/metrics", flush=True)
