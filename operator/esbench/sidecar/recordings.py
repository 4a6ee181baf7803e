"""Serves the async-profiler recordings that an Elasticsearch pod writes, read-only, to the Rally Job.

The profiler runs inside the Elasticsearch JVM from its start and closes a whole JFR file at every
turn of its loop; this server lists the closed ones (each with the time it was closed) and hands
them out. It answers only whoever sends the cluster's `elastic` user and password (the Rally Job
has them; anyone who has them can read the whole cluster anyway), over the cluster's own HTTP
certificate when the cluster serves TLS. Nothing is ever written or deleted through it.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import signal
import ssl
import sys
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

USERNAME = "elastic"
# The profiler's file names (esbench.analysis.asyncprofiler.RECORDING_PATTERN): nothing else in
# the folder is served.
_NAME = re.compile(r"^[A-Za-z0-9_.-]+\.jfr$")


@dataclass(frozen=True)
class Recording:
    name: str
    size: int
    closed: float  # seconds since the epoch


def closed_recordings(folder: Path) -> list[Recording]:
    """The recordings the profiler has finished, oldest first: every file but the newest, which it
    is still writing."""
    files = sorted((f for f in folder.iterdir() if _NAME.match(f.name) and f.is_file()), key=lambda f: f.stat().st_mtime)
    return [Recording(f.name, f.stat().st_size, f.stat().st_mtime) for f in files[:-1]]


def make_handler(folder: Path, password_file: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self._authorized():
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="esbench recordings"')
                self.end_headers()
                return
            listed = {r.name: r for r in closed_recordings(folder)}
            if self.path == "/recordings":
                self._send(json.dumps([r.__dict__ for r in listed.values()]).encode(), "application/json")
            elif self.path.startswith("/recordings/") and self.path.removeprefix("/recordings/") in listed:
                self._send((folder / self.path.removeprefix("/recordings/")).read_bytes(), "application/octet-stream")
            else:
                self.send_error(404)

        def _authorized(self) -> bool:
            expected = f"{USERNAME}:{password_file.read_text().strip()}".encode()
            scheme, _, given = (self.headers.get("Authorization") or "").partition(" ")
            try:
                decoded = base64.b64decode(given, validate=True)
            except ValueError:
                return False
            return scheme == "Basic" and hmac.compare_digest(decoded, expected)

        def _send(self, body: bytes, content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # one line per request would only repeat the Rally Job's own log

    return Handler


def serve(folder: Path, port: int, password_file: Path, certificate: Path | None = None, key: Path | None = None) -> None:
    # The container's first process: the kernel ignores a signal it has no handler for, and the pod
    # would then wait out its whole grace period at every deletion.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = ThreadingHTTPServer(("", port), make_handler(folder, password_file))
    if certificate:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()
