"""The Elasticsearch cluster under test, as the runner sees it over HTTP (stdlib only: the
runner must not depend on Rally's pinned client libraries)."""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


class Unreachable(Exception):
    pass


@dataclass
class Target:
    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None

    def _context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https://"):
            return None
        # Same trust as Rally gets: the given CA, else the system's.
        return ssl.create_default_context(cafile=self.ca_file)

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url.rstrip('/')}/{path.lstrip('/')}", data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.username and self.password:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=timeout, context=self._context()) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def get(self, path: str, timeout: float = 10.0) -> Any:
        return self.request("GET", path, timeout=timeout)

    def wait_until_available(self, timeout: float) -> dict[str, Any]:
        """`GET /` (Rally reads the version from it) answered within timeout, else Unreachable."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while True:
            try:
                return self.get("/", timeout=5)
            except urllib.error.HTTPError as e:
                # Wrong credentials or a node that answers but cannot serve: waiting will not help.
                if e.code in (401, 403):
                    raise Unreachable(f"{self.url} refused the credentials (HTTP {e.code})") from e
                last_error = e
            except (urllib.error.URLError, OSError, ValueError) as e:
                last_error = e
            if time.monotonic() >= deadline:
                raise Unreachable(f"{self.url} did not answer within {timeout:.0f}s: {last_error}")
            time.sleep(min(2.0, max(0.0, deadline - time.monotonic())))

    def data_node_count(self, roles: tuple[str, ...]) -> int:
        """Nodes with any of these roles."""
        nodes = self.get("_nodes?filter_path=nodes.*.roles")["nodes"]
        return sum(1 for n in nodes.values() if any(r in roles for r in n.get("roles", [])))
