"""`stoker serve`'s flags: SOURCE, a delta:// table or a --mixture, the server's options and the
Loader's; the server itself is stoker._remote.serve (docs/serve.md)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import stoker
from stoker import _core
from stoker._loading import mixture as _mixture
from stoker._remote import serve as _serve
from stoker.cli import flags as _flags

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

# The server options' defaults, from the engine's own option struct (the loader flags take
# theirs from _keywords, which reads LoaderOptions): the command line restates none of them.
_SERVE = _core.ServeOptions()

HELP = "stream batches to trainers over Arrow Flight"
DESCRIPTION = (
    "Run an Arrow Flight server that streams this dataset's batches to stoker.RemoteLoader "
    "trainers (docs/serve.md). Stops on Ctrl-C or SIGTERM.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", nargs="?",
                        help="a file, directory or glob; delta://PATH_OR_S3_URI for a Delta "
                             "table (pinned with --delta-version); or --mixture")
    parser.add_argument("--delta-version", type=_flags.non_negative_int, metavar="N",
                        help="the version of a delta:// SOURCE to serve (default: the latest "
                             "when the server starts; either way the version is pinned)")
    parser.add_argument("--mixture", metavar="JSON_FILE",
                        help="serve a weighted mixture instead of SOURCE: {\"sources\": "
                             "[{\"path\": ..., \"weight\": ...}, ...], \"stop\": ...} "
                             "(docs/serve.md)")
    parser.add_argument("--host", default=_SERVE.host, help="bind address (default %(default)s)")
    parser.add_argument("--port", type=int, default=8815,
                        help="port to listen on (default %(default)s; 0 picks a free one)")
    parser.add_argument("--token-file", help="require this bearer token (file content)")
    parser.add_argument("--tls-cert", help="PEM certificate (with --tls-key): serve grpc+tls")
    parser.add_argument("--tls-key", help="PEM private key")
    parser.add_argument("--max-streams", type=_flags.positive_int, default=_SERVE.max_streams,
                        help="streams served at once; more are refused until one ends "
                             "(default %(default)s)")
    parser.add_argument("--chunk-batches", type=_flags.positive_int,
                        default=_SERVE.chunk_batches,
                        help="batches per chunk when several servers share a plan (default "
                             "%(default)s)")
    parser.add_argument("--stream-idle-timeout", type=_flags.non_negative_int,
                        default=_SERVE.stream_idle_timeout_s,
                        help="seconds a client may ask for no batch before its stream is "
                             "released (its memory and threads freed; 0: never; default "
                             "%(default)s)")
    parser.add_argument("--shutdown-grace", type=_flags.non_negative_int,
                        default=_SERVE.shutdown_grace_s,
                        help="on SIGTERM or Ctrl-C, seconds the open streams may go on before "
                             "they are cancelled and the server exits (default %(default)s)")
    parser.add_argument("--trace", metavar="PATH",
                        help="keep a timeline of the engine's work for every stream and write "
                             "it to PATH as Chrome trace JSON (every 5 s while serving and at "
                             "exit)")
    parser.add_argument("--metrics-port", type=_flags.non_negative_int,
                        help="serve Prometheus metrics on this port (0: a free one; needs "
                             "stoker[metrics])")
    _flags.add_loader_options(parser)


def run(args: argparse.Namespace) -> int:
    if (args.source is None) == (args.mixture is None):
        raise ValueError("stoker serve: give SOURCE or --mixture JSON_FILE (one of them)")
    source: Any = args.source
    if args.delta_version is not None and not str(source).startswith("delta://"):
        raise ValueError("stoker serve: --delta-version needs a delta:// SOURCE")
    if source is not None and source.startswith("delta://"):
        # The Loader resolves it once, when it is made: every batch served is of one version.
        source = stoker.delta_table(source, version=args.delta_version)
    if args.mixture is not None:
        source = _mixture.from_spec(json.loads(Path(args.mixture).read_text()),
                                    where=args.mixture)
    return _serve.serve(
        source, host=args.host, port=args.port, token_file=args.token_file,
        tls_cert=args.tls_cert, tls_key=args.tls_key, max_streams=args.max_streams,
        chunk_batches=args.chunk_batches, stream_idle_timeout_s=args.stream_idle_timeout,
        shutdown_grace_s=args.shutdown_grace, transforms_file=args.transforms, metrics_port=args.metrics_port, trace=args.trace,
        loader_options=_flags.loader_options(args))
