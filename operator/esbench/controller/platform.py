"""What Kubernetes ran a race on (models.KubernetesEnvironment), from the pods and nodes as the
API server returns them. Pure: the operator reads the objects (kube.py), this picks the figures.
"""

from __future__ import annotations

from typing import Any

from esbench.api import models

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def _container(pod: dict[str, Any], name: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The container's spec and status (the first one when name is None)."""
    specs = (pod.get("spec") or {}).get("containers") or [{}]
    spec = next((c for c in specs if c.get("name") == name), specs[0]) if name else specs[0]
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return spec, next((c for c in statuses if c.get("name") == spec.get("name")), {})


def _quantities(values: dict[str, Any] | None) -> dict[str, str] | None:
    return {key: str(value) for key, value in values.items()} if values else None


def pod_environment(pod: dict[str, Any], container: str | None, node: dict[str, Any] | None) -> models.PodEnvironment:
    spec, state = _container(pod, container)
    resources = spec.get("resources") or {}
    node = node or {}
    capacity = (node.get("status") or {}).get("capacity") or {}
    return models.PodEnvironment(
        pod=pod["metadata"]["name"],
        image=state.get("image") or spec.get("image"),
        image_id=state.get("imageID") or None,
        node=(pod.get("spec") or {}).get("nodeName"),
        instance_type=((node.get("metadata") or {}).get("labels") or {}).get(INSTANCE_TYPE_LABEL),
        node_kernel=((node.get("status") or {}).get("nodeInfo") or {}).get("kernelVersion"),
        node_cpu=capacity.get("cpu"),
        node_memory=capacity.get("memory"),
        requests=_quantities(resources.get("requests")),
        limits=_quantities(resources.get("limits")),
        qos_class=(pod.get("status") or {}).get("qosClass"),
    )
