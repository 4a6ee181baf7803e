"""The Elasticsearch cluster under test, as the runner sees it over HTTP."""

from __future__ import annotations

import time
import urllib.error
from typing import Any

from esbench.esclient import Client


class Unreachable(Exception):
    pass


class Target(Client):
    """The cluster under test."""

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
