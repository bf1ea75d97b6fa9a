"""A real S3-compatible server for the tests and benchmarks (moto's server mode, on loopback)
and a small fault-injecting HTTP proxy of our own in front of it."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """moto_server on 127.0.0.1:<free port>, started and stopped by the tests. With
    `auth=True` it checks credentials (unknown keys get 403)."""

    def __init__(self, auth: bool = False) -> None:
        self.port = free_port()
        env = dict(os.environ)
        if auth:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto server did not start") from None
                time.sleep(0.1)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class FaultProxy:
    """Forwards HTTP requests to `upstream`, optionally adding latency, answering a share of
    data reads (ranged GETs) with 503 SlowDown, or dropping the connection unanswered.
    Faults are deterministic: every `every`-th ranged GET is hit, so runs are repeatable."""

    def __init__(self, upstream: str, *, latency: float = 0.0, fail_every: int = 0,
                 drop_every: int = 0, fail_always: bool = False) -> None:
        self.upstream = upstream
        self.latency, self.fail_every, self.drop_every = latency, fail_every, drop_every
        self.fail_always = fail_always
        self.requests = self.ranged_gets = self.failed = self.dropped = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._fault(self.command, self.headers.get("Range"))
                if proxy.latency:
                    time.sleep(proxy.latency)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "fail":
                    payload = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown'
                               b"</Code><Message>Please reduce your request rate.</Message>"
                               b"</Error>")
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                conn = http.client.HTTPConnection(proxy.upstream, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = proxy.upstream
                conn.request(self.command, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                self.send_response(response.status)
                for k, v in response.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # A HEAD answer carries the object's length, not the (empty) body's.
                length = response.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _fault(self, method: str, range_header: str | None) -> str | None:
        with self._lock:
            self.requests += 1
            if method != "GET" or range_header is None:
                return None
            self.ranged_gets += 1
            n = self.ranged_gets
            if self.fail_always or (self.fail_every and n % self.fail_every == 0):
                self.failed += 1
                return "fail"
            if self.drop_every and n % self.drop_every == 0:
                self.dropped += 1
                return "drop"
            return None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
