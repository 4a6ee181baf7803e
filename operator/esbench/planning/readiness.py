"""What ECK's Elasticsearch status means for us: the one place that decides "is it ready"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What an Experiment or a sweep says while the Elasticsearch kind is not served.
ECK_NOT_INSTALLED = (
    "The Elasticsearch kind (elasticsearch.k8s.elastic.co/v1) is not served by this API server: "
    "install ECK (its CRDs and operator) first"
)


@dataclass(frozen=True)
class Readiness:
    ready: bool
    message: str
    version: str | None = None


def serves_tls(elasticsearch: dict[str, Any]) -> bool:
    """ECK serves HTTPS unless the spec turns its self-signed certificate off."""
    http = (elasticsearch.get("spec") or {}).get("http") or {}
    return not ((http.get("tls") or {}).get("selfSignedCertificate") or {}).get("disabled", False)


def expected_nodes(elasticsearch: dict[str, Any]) -> int:
    return sum(node_set.get("count", 0) for node_set in (elasticsearch.get("spec") or {}).get("nodeSets") or [])


# ECK's own verdicts (ECK >= 2.x), each True once the cluster is what the spec asks for. Phase
# Ready alone is not enough: real ECK v3.5.0 said Ready with 2 of 3 nodes up, and reports the
# spec's version before any pod exists.
ECK_CONDITIONS = ("ReconciliationComplete", "RunningDesiredVersion", "ElasticsearchIsReachable")


def _unmet_conditions(status: dict[str, Any]) -> list[str]:
    """ECK's conditions that are present and not True (a status without them, from an older
    ECK, is judged by the other fields alone)."""
    return [f"{c['type']} is {c.get('status')}" + (f" ({c['message']})" if c.get("message") else "")
            for c in status.get("conditions") or []
            if c.get("type") in ECK_CONDITIONS and c.get("status") != "True"]


def invalid(elasticsearch: dict[str, Any]) -> bool:
    """ECK's verdict that the current spec cannot be made (phase Invalid). It gives its reason
    only in a Warning Event, reason Validation, on the resource."""
    status = elasticsearch.get("status") or {}
    return status.get("phase") == "Invalid" and status.get("observedGeneration") in (
        None, elasticsearch.get("metadata", {}).get("generation"))


def readiness(elasticsearch: dict[str, Any], accept_yellow: bool = False) -> Readiness:
    """Ready only when ECK has caught up with the current spec and every node serves.

    A stale status (observedGeneration behind, or the version of a previous spec) can say
    Ready/green about a cluster that is not the one we asked for, so both are checked, and so
    are ECK's own conditions when it reports them.
    """
    spec = elasticsearch.get("spec", {})
    status = elasticsearch.get("status") or {}
    generation = elasticsearch.get("metadata", {}).get("generation")
    waiting = []
    if status.get("observedGeneration") != generation:
        waiting.append(f"ECK has not observed generation {generation} yet")
    if status.get("phase") != "Ready":
        waiting.append(f"phase is {status.get('phase') or 'unset'}, not Ready")
    healthy = ("green", "yellow") if accept_yellow else ("green",)
    if status.get("health") not in healthy:
        waiting.append(f"health is {status.get('health') or 'unknown'}, not {' or '.join(healthy)}")
    available = status.get("availableNodes", 0)
    expected = expected_nodes(elasticsearch)
    if available != expected:
        waiting.append(f"{available}/{expected} nodes available")
    if status.get("version") != spec.get("version"):
        waiting.append(f"running version {status.get('version') or 'unknown'}, not {spec.get('version')}")
    waiting.extend(_unmet_conditions(status))
    if waiting:
        return Readiness(False, "Waiting for the cluster: " + "; ".join(waiting))
    return Readiness(True, f"Cluster ready: {available} nodes, health {status.get('health')}", status.get("version"))
