"""What ECK's Elasticsearch status means for us: the one place that decides "is it ready"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Readiness:
    ready: bool
    message: str
    version: str | None = None


def readiness(elasticsearch: dict[str, Any], expected_nodes: int) -> Readiness:
    """Ready only when ECK has caught up with the current spec and every node serves.

    A stale status (observedGeneration behind, or the version of a previous spec) can say
    Ready/green about a cluster that is not the one we asked for, so both are checked.
    """
    spec = elasticsearch.get("spec", {})
    status = elasticsearch.get("status") or {}
    generation = elasticsearch.get("metadata", {}).get("generation")
    waiting = []
    if status.get("observedGeneration") != generation:
        waiting.append(f"ECK has not observed generation {generation} yet")
    if status.get("phase") != "Ready":
        waiting.append(f"phase is {status.get('phase') or 'unset'}, not Ready")
    if status.get("health") != "green":
        waiting.append(f"health is {status.get('health') or 'unknown'}, not green")
    available = status.get("availableNodes", 0)
    if available != expected_nodes:
        waiting.append(f"{available}/{expected_nodes} nodes available")
    if status.get("version") != spec.get("version"):
        waiting.append(f"running version {status.get('version') or 'unknown'}, not {spec.get('version')}")
    if waiting:
        return Readiness(False, "Waiting for the cluster: " + "; ".join(waiting))
    return Readiness(True, f"Cluster ready: {available} nodes, health green", status.get("version"))
