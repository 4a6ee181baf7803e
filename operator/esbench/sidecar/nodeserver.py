"""The esbench sidecar of an Elasticsearch pod: serves the Rally Job, read-only, what the node does
not report itself.

GET /probe: the node's probe (nodeprobe), read at each request: {"node": the pod's name, which ECK
gives the node, "counters": ...}. In a profiled cluster, the async-profiler recordings too: the
profiler runs inside the Elasticsearch JVM from its start and closes a whole JFR file at every turn
of its loop; GET /recordings lists the finished ones (each with the time span its chunks cover) and
GET /recordings/NAME hands one out. It answers only whoever sends the cluster's `elastic` user and
password (the Rally Job has them; anyone who has them can read the whole cluster anyway), over the
cluster's own HTTP certificate when the cluster serves TLS. Nothing is ever written or deleted
through it.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import signal
import socket
import ssl
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from esbench.sidecar.nodeprobe import NodeProbe

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


def make_handler(password_file: Path, probe: Callable[[], dict[str, Any]], node: str,
                 recordings: Path | None = None) -> type[BaseHTTPRequestHandler]:
    """PROBE: the node's counters; RECORDINGS: the profiler's folder, in a profiled cluster."""
    probing = threading.Lock()  # the probe keeps what it last read of each thread

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if not self._authorized():
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="esbench sidecar"')
                self.end_headers()
                return
            name = self.path.removeprefix("/recordings/")
            if self.path == "/probe":
                with probing:
                    counters = probe()
                self._send(json.dumps({"node": node, "counters": counters}).encode(), "application/json")
            elif recordings and self.path == "/recordings":
                self._send(json.dumps([r.__dict__ for r in finished_recordings(recordings)]).encode(), "application/json")
            elif recordings and name != self.path and name in {r.name for r in finished_recordings(recordings)}:
                self._send((recordings / name).read_bytes(), "application/octet-stream")
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


def serve(data: Path, port: int, password_file: Path, recordings: Path | None = None,
          certificate: Path | None = None, key: Path | None = None) -> None:
    """DATA: the node's path.data, as mounted here; the node's name is the pod's (its host name)."""
    # A deletion's SIGTERM ends it at once and as done (exit 0), not as killed: were the pod's process
    # namespace not shared, it would be PID 1, whose unhandled signals the kernel ignores.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    handler = make_handler(password_file, NodeProbe(data).counters, socket.gethostname(), recordings)
    server = ThreadingHTTPServer(("", port), handler)
    if certificate:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificate, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.serve_forever()
