"""The probe of a cluster whose pods carry esbench's sidecar (Kubernetes: esbench.sidecar.nodeserver).

Beside each _nodes/stats sample the runner asks every pod's sidecar for what Elasticsearch does not
report of its node (the CPU time of its JIT compiler and GC threads, its major page faults, what of its
index files the page cache holds); each answer names its node.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from esbench.esclient import Client


def probe(sources: list[str], password: str | None, ca_file: str | None,
          timeout: float) -> Callable[[], dict[str, dict[str, Any]]]:
    """Counters by node name from each sidecar in SOURCES (https://POD.NAME-es-NODESET.NAMESPACE.svc:PORT);
    a sidecar that does not answer leaves its node out. TIMEOUT: the sampling interval, which the
    probe runs beside: a slower sidecar loses its node's counters in this sample, not the sample."""
    clients = [Client(source, "elastic", password, ca_file) for source in sources]

    def counters() -> dict[str, dict[str, Any]]:
        found = {}
        for client in clients:
            with contextlib.suppress(Exception):
                answer = client.get("/probe", timeout=timeout)
                found[answer["node"]] = answer["counters"]
        return found

    return counters
