"""An Elasticsearch cluster over HTTP, with basic auth and the given CA (stdlib only: the
runner must not depend on Rally's pinned client libraries, and the operator needs no more)."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Client:
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https://"):
            return None
        # Same trust as Rally gets: the given CA, else the system's.
        return ssl.create_default_context(cafile=self.ca_file)

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0,
                content_type: str = "application/json") -> Any:
        """BODY: JSON, or bytes sent as they are (e.g. a bulk request's lines)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else None
        raw = self._exchange(method, path, data, timeout, content_type)
        return json.loads(raw) if raw else None

    def read(self, path: str, timeout: float = 10.0) -> bytes:
        """GET PATH's bytes as they are (a file, not JSON)."""
        return self._exchange("GET", path, None, timeout, "application/json")

    def _exchange(self, method: str, path: str, data: bytes | None, timeout: float, content_type: str) -> bytes:
        request = urllib.request.Request(f"{self.url.rstrip('/')}/{path.lstrip('/')}", data=data, method=method)
        request.add_header("Content-Type", content_type)
        if self.username and self.password:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=timeout, context=self._context()) as response:
            return response.read()

    def get(self, path: str, timeout: float = 10.0) -> Any:
        return self.request("GET", path, timeout=timeout)
