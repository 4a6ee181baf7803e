"""Serves the async-profiler recordings that an Elasticsearch pod writes, read-only, to the Rally Job.

The profiler runs inside the Elasticsearch JVM from its start and closes a whole JFR file at every
turn of its loop; this server lists the finished ones (each with the time span its chunks cover)
and hands them out. It answers only whoever sends the cluster's `elastic` user and password (the Rally Job
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
import struct
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
    start: float  # seconds since the epoch: the first chunk's start
    end: float  # the last chunk's end


# A JFR chunk's header: magic, version, size, constant pool and metadata offsets, start and duration (ns).
_HEADER = struct.Struct(">IIqqqqq")
_MAGIC = 0x464C5200  # "FLR\0"


def finished(path: Path) -> Recording | None:
    """The recording at PATH if every chunk of it is whole (what async-profiler's reader checks: the
    size its header gives, and the offsets it writes last), else None: still being written."""
    size = path.stat().st_size
    position, start, end = 0, None, None
    with path.open("rb") as file:
        while position + _HEADER.size <= size:
            file.seek(position)
            magic, _, chunk, constants, metadata, began, duration = _HEADER.unpack(file.read(_HEADER.size))
            if magic != _MAGIC or chunk <= 0 or position + chunk > size or not constants or not metadata:
                return None
            start = began / 1e9 if start is None else start
            end = (began + duration) / 1e9
            position += chunk
    return Recording(path.name, size, start, end) if position == size and start is not None else None


def finished_recordings(folder: Path) -> list[Recording]:
    """The recordings the profiler has finished, oldest first (a file's own chunk headers say so: its
    time stamps do not, the profiler may open the next file before it closes this one)."""
    found = (finished(f) for f in folder.iterdir() if _NAME.match(f.name) and f.is_file())
    return sorted((r for r in found if r), key=lambda r: r.start)


def make_handler(folder: Path, password_file: Path) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self._authorized():
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="esbench recordings"')
                self.end_headers()
                return
            listed = {r.name: r for r in finished_recordings(folder)}
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
