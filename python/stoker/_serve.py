"""`stoker serve`: an Arrow Flight server streaming a Loader's batches (docs/serve.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def serve(source: str, *, host: str, port: int, token_file: str | None,
          tls_cert: str | None, tls_key: str | None, max_streams: int, chunk_batches: int,
          stream_idle_timeout_s: int, loader_options: dict[str, Any],
          transforms_file: str | None, metrics_port: int | None = None) -> int:
    import stoker
    from stoker import _core, _options

    token = Path(token_file).read_text().strip() if token_file else ""
    if token_file and not token:
        raise ValueError(f"token file '{token_file}' is empty")
    options = _core.ServeOptions()
    _options.assign(options, {
        "host": host, "port": port, "token": token, "max_streams": max_streams,
        "chunk_batches": chunk_batches, "stream_idle_timeout_s": stream_idle_timeout_s,
        "tls_cert_pem": Path(tls_cert).read_text() if tls_cert else "",
        "tls_key_pem": Path(tls_key).read_text() if tls_key else ""})
    options.validate()  # before the loader reads the dataset
    transforms = json.loads(Path(transforms_file).read_text()) if transforms_file else None
    # The server delivers Arrow batches of any type; trainers convert them to tensors.
    loader = stoker.Loader(source, output="arrow", transforms=transforms, **loader_options)
    server = _core.Server(loader._core, options)
    scheme = "grpc+tls" if tls_cert else "grpc"
    print(f"stoker serve: listening on {scheme}://{host}:{server.port} "
          f"({loader.dataset_info()['rows']:,} rows, {len(loader)} batches per epoch for one "
          f"rank){' with a bearer token' if token else ''}", flush=True)
    print(f"stoker serve: config {server.config()}", file=sys.stderr, flush=True)
    if metrics_port is not None:
        _serve_metrics(server, loader, host, metrics_port)
    server.serve()  # until Ctrl-C / SIGTERM
    return 0


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
