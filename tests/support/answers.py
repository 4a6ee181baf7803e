"""Calls of the Kubernetes client's API classes whose answers are read whole, as the server's JSON
rather than the client's model classes. An answer left unread (`_preload_content=False` without
`.data`) closes its connection, and the next call opens a new TLS connection: a kubelet or a
controller, which keeps its connection, never makes the API server accept one per request."""

from __future__ import annotations

import json
from typing import Any


def read(method, *args, **kwargs) -> bytes:
    """Calls METHOD (a call of the client's API classes) and reads its raw answer whole."""
    return method(*args, _preload_content=False, **kwargs).data


def read_json(method, *args, **kwargs) -> Any:
    """METHOD's answer as the server's JSON (dicts)."""
    return json.loads(read(method, *args, **kwargs))
