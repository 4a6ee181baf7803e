"""Why a race failed, when its pods say more than its runner could: the Rally pod deleted or
evicted under it, or an Elasticsearch node replaced or restarted during it.

The runner sees only what that does to its requests (a refused connection, a TLS error from
whatever answered instead, a log cut short); the operator sees the pods. `cause` takes what it
read once the race ended and names the cause, with the runner's own failure as the detail.
Pure: the reconciler gathers the facts (lifecycle.py), this decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from esbench.api.reasons import Reason
from esbench.planning import names, readiness
from esbench.planning.manifests import ES_CONTAINER
from esbench.planning.status import parse, timestamp

# Failures a disrupted pod cannot have caused: the spec asked for something that is not there.
SPEC_FAILURES = {Reason.INVALID_SPEC, Reason.TRACK_ERROR}

# The Pod condition Kubernetes (1.26+) sets on a pod it is about to take away, and the kubelet's
# status.reason on a pod it evicted under node pressure.
DISRUPTION_TARGET = "DisruptionTarget"
EVICTED = "Evicted"


@dataclass(frozen=True)
class RaceFacts:
    """What the operator read of a race that failed, once its Job ended."""

    started: str | None  # status.clusterReadyTime: the Rally Job was created then
    rally_pod: dict[str, Any] | None  # the Job's pod; None when it is gone
    cluster: str | None = None  # the ECK cluster raced on (None: an external one)
    elasticsearch: dict[str, Any] | None = None  # its resource as ECK reports it now
    cluster_pods: list[dict[str, Any]] = field(default_factory=list)


def cause(facts: RaceFacts, reason: Reason, message: str) -> tuple[Reason, str]:
    """The reason and message a failed race ends with: the runner's (REASON, MESSAGE), unless its
    pods show a cause it could not see, which then leads, with the runner's failure after it."""
    if reason in SPEC_FAILURES:
        return reason, message
    found = rally_pod_disruption(facts) or cluster_disruption(facts)
    if found is None:
        return reason, message
    found_reason, found_message = found
    return found_reason, f"{found_message}. The race failed with {reason}: {message}"


def rally_pod_disruption(facts: RaceFacts) -> tuple[Reason, str] | None:
    """The Rally pod evicted (by the eviction API, the kubelet under node pressure, preemption, a
    taint) or deleted while it ran."""
    pod = facts.rally_pod
    if pod is None:
        return None
    meta, state = pod["metadata"], pod.get("status") or {}
    name = meta["name"]
    target = next((c for c in state.get("conditions") or []
                   if c.get("type") == DISRUPTION_TARGET and c.get("status") == "True"), None)
    if target is not None:
        detail = "; ".join(filter(None, (target.get("reason"), target.get("message"))))
        return Reason.RALLY_POD_EVICTED, f"The Rally pod {name} was evicted{_at(target.get('lastTransitionTime'))} ({detail})"
    if state.get("reason") == EVICTED:
        return Reason.RALLY_POD_EVICTED, f"The Rally pod {name} was evicted: {state.get('message') or 'by the kubelet'}"
    if meta.get("deletionTimestamp"):
        return Reason.RALLY_POD_DELETED, f"The Rally pod {name} was deleted{_at(_deletion_requested(meta))}, during the race"
    return None


def cluster_disruption(facts: RaceFacts) -> tuple[Reason, str] | None:
    """An Elasticsearch pod replaced (a new pod of that name, made after the race started), its
    Elasticsearch container restarted, a pod being deleted, or a node's pod missing."""
    if facts.cluster is None or facts.started is None:
        return None
    started = parse(facts.started)
    found = []
    present = set()
    for pod in sorted(facts.cluster_pods, key=lambda p: p["metadata"]["name"]):
        meta = pod["metadata"]
        name = meta["name"]
        present.add(name)
        if meta.get("deletionTimestamp"):
            found.append(f"Elasticsearch pod {name} is being deleted{_at(_deletion_requested(meta))}")
        elif parse(meta["creationTimestamp"]) > started:
            found.append(f"Elasticsearch pod {name} was replaced during the race: the new one was created at "
                         f"{meta['creationTimestamp']}")
            continue
        restart = _restart_since(pod, started)
        if restart:
            found.append(f"Elasticsearch pod {name} {restart}")
    if _short_of_nodes(facts):  # a pod not listed while ECK counts every node is no evidence of anything
        found += [f"Elasticsearch pod {name} is missing" for name in _expected_pods(facts) if name not in present]
    if not found:
        return None
    return Reason.CLUSTER_DISRUPTED, "; ".join(found) + f". The race started at {facts.started}; {_eck_now(facts)}"


def _restart_since(pod: dict[str, Any], started: datetime) -> str | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        if container.get("name") != ES_CONTAINER or not container.get("restartCount"):
            continue
        ended = ((container.get("lastState") or {}).get("terminated")) or {}
        if ended.get("finishedAt") and parse(ended["finishedAt"]) >= started:
            why = ", ".join(filter(None, (ended.get("reason"), _exit(ended.get("exitCode")))))
            return f"restarted Elasticsearch at {ended['finishedAt']}" + (f" ({why})" if why else "")
    return None


def _expected_pods(facts: RaceFacts) -> list[str]:
    """The pods ECK makes for the spec's node sets (a StatefulSet per node set: NAME-es-SET-i)."""
    if facts.elasticsearch is None or facts.cluster is None:
        return []
    cluster = facts.cluster
    return [names.es_pod_name(cluster, node_set["name"], i)
            for node_set in (facts.elasticsearch.get("spec") or {}).get("nodeSets") or []
            for i in range(node_set.get("count", 0))]


def _short_of_nodes(facts: RaceFacts) -> bool:
    """ECK counts fewer available nodes than the spec asks for (or the resource is gone)."""
    if facts.elasticsearch is None:
        return True
    available = (facts.elasticsearch.get("status") or {}).get("availableNodes", 0)
    return available < readiness.expected_nodes(facts.elasticsearch)


def _eck_now(facts: RaceFacts) -> str:
    if facts.elasticsearch is None:
        return "the Elasticsearch resource is gone"
    status = facts.elasticsearch.get("status") or {}
    return (f"ECK now reports phase {status.get('phase') or 'unset'}, health {status.get('health') or 'unknown'}, "
            f"{status.get('availableNodes', 0)}/{readiness.expected_nodes(facts.elasticsearch)} nodes available")


def _deletion_requested(meta: dict[str, Any]) -> str | None:
    """When the deletion was asked for: deletionTimestamp is that moment plus the grace period."""
    deadline = meta.get("deletionTimestamp")
    if not deadline:
        return None
    return timestamp(parse(deadline) - timedelta(seconds=meta.get("deletionGracePeriodSeconds") or 0))


def _at(moment: str | None) -> str:
    return f" at {moment}" if moment else ""


def _exit(code: int | None) -> str | None:
    return None if code is None else f"exit code {code}"
