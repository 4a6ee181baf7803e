"""Pure functions that turn an Experiment into the Kubernetes objects it owns.

Nothing here talks to the API server: given a spec, they return manifests, so every detail
is unit-tested without a cluster.
"""

from __future__ import annotations

import base64
import gzip
import json
from dataclasses import dataclass
from typing import Any

from esbench import names
from esbench.api import API_VERSION, KIND, ExperimentSpec, StorageType

ECK_API_VERSION = "elasticsearch.k8s.elastic.co/v1"
EXPERIMENT_LABEL = "esbench.io/experiment"
RALLY_CONTAINER = "rally"
CA_MOUNT = "/etc/esbench/ca"
WORK_DIR = "/work"
# ConfigMaps hold at most 1 MiB; larger race.json files are stored gzip'd as binaryData.
CONFIGMAP_TEXT_LIMIT = 900_000


@dataclass(frozen=True)
class Experiment:
    """The identity and spec of one Experiment: all a builder needs."""

    name: str
    namespace: str
    uid: str
    spec: ExperimentSpec

    @classmethod
    def from_body(cls, body: dict[str, Any]) -> Experiment:
        meta = body["metadata"]
        return cls(meta["name"], meta["namespace"], meta["uid"], ExperimentSpec.model_validate(body["spec"]))

    @property
    def cluster(self) -> str:
        return names.cluster_name(self.name)

    @property
    def race_id(self) -> str:
        # The Experiment's UID: unique, and stable across operator restarts.
        return self.uid


def labels(experiment: Experiment, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "esbench",
        "app.kubernetes.io/instance": experiment.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "esbench",
        "app.kubernetes.io/managed-by": "esbench-operator",
        EXPERIMENT_LABEL: experiment.name,
    }


def owner_references(experiment: Experiment) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": experiment.name,
            "uid": experiment.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _metadata(experiment: Experiment, name: str, component: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": experiment.namespace,
        "labels": labels(experiment, component),
        "ownerReferences": owner_references(experiment),
    }


def total_node_count(spec: ExperimentSpec) -> int:
    if spec.elasticsearch.node_sets:
        return sum(node_set.count for node_set in spec.elasticsearch.node_sets)
    return spec.elasticsearch.node_count or 1


def elasticsearch_manifest(experiment: Experiment) -> dict[str, Any]:
    """The ECK Elasticsearch resource for the Experiment's cluster."""
    es = experiment.spec.elasticsearch
    node_sets = es.node_sets or []
    if not node_sets:
        node_sets_spec = [("default", es.node_count or 1, None)]
    else:
        node_sets_spec = [(ns.name, ns.count, ns.roles) for ns in node_sets]

    manifest: dict[str, Any] = {
        "apiVersion": ECK_API_VERSION,
        "kind": "Elasticsearch",
        "metadata": _metadata(experiment, experiment.cluster, "elasticsearch"),
        "spec": {
            "version": es.version,
            "nodeSets": [_node_set(experiment, *ns) for ns in node_sets_spec],
        },
    }
    if es.image:
        manifest["spec"]["image"] = es.image
    if not es.tls:
        manifest["spec"]["http"] = {"tls": {"selfSignedCertificate": {"disabled": True}}}
    return manifest


def _node_set(experiment: Experiment, name: str, count: int, roles: list[str] | None) -> dict[str, Any]:
    es = experiment.spec.elasticsearch
    # mmap needs vm.max_map_count >= 262144 on the host, which a restricted pod cannot set;
    # nodes prepared for it can opt back in with config node.store.allow_mmap: true.
    config: dict[str, Any] = {"node.store.allow_mmap": False}
    if roles is not None:
        config["node.roles"] = roles
    config.update(es.config or {})

    container: dict[str, Any] = {"name": "elasticsearch"}
    if es.heap:
        container["env"] = [{"name": "ES_JAVA_OPTS", "value": f"-Xms{es.heap} -Xmx{es.heap}"}]
    if es.resources:
        container["resources"] = es.resources.to_wire()

    pod_spec: dict[str, Any] = {"containers": [container]}
    node_set: dict[str, Any] = {
        "name": name,
        "count": count,
        "config": config,
        "podTemplate": {"metadata": {"labels": labels(experiment, "elasticsearch")}, "spec": pod_spec},
    }
    if es.storage.type == StorageType.EMPTY_DIR:
        # ECK replaces its default PVC with a volume of this name.
        pod_spec["volumes"] = [{"name": "elasticsearch-data", "emptyDir": {}}]
    else:
        claim_spec: dict[str, Any] = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": es.storage.size}},
        }
        if es.storage.storage_class_name:
            claim_spec["storageClassName"] = es.storage.storage_class_name
        node_set["volumeClaimTemplates"] = [{"metadata": {"name": "elasticsearch-data"}, "spec": claim_spec}]
    return node_set


def target_url(experiment: Experiment) -> str:
    scheme = "https" if experiment.spec.elasticsearch.tls else "http"
    # ECK's certificate names NAME-es-http.NAMESPACE.svc, not the cluster.local form.
    return f"{scheme}://{names.es_http_service(experiment.cluster)}.{experiment.namespace}.svc:9200"


def rally_job_manifest(experiment: Experiment, image: str, image_pull_policy: str) -> dict[str, Any]:
    """The Job that runs `esbench race` (Rally) against the Experiment's cluster.

    Credentials come from ECK's Secrets by reference only; the pod gets no API token.
    """
    spec = experiment.spec
    rally = spec.rally
    tls = spec.elasticsearch.tls
    args = [
        "race",
        f"--target-url={target_url(experiment)}",
        f"--race-id={experiment.race_id}",
        f"--work-dir={WORK_DIR}",
    ]
    if tls:
        args.append(f"--ca-file={CA_MOUNT}/ca.crt")
    env = [
        {"name": "ESBENCH_SPEC", "value": json.dumps(spec.to_wire(), sort_keys=True)},
        {"name": "HOME", "value": WORK_DIR},
        {"name": "ES_USERNAME", "value": "elastic"},
        {
            "name": "ES_PASSWORD",
            "valueFrom": {
                "secretKeyRef": {"name": names.es_elastic_user_secret(experiment.cluster), "key": "elastic"}
            },
        },
    ]
    mounts = [{"name": "work", "mountPath": WORK_DIR}, {"name": "tmp", "mountPath": "/tmp"}]
    volumes: list[dict[str, Any]] = [{"name": "work", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}]
    if tls:
        mounts.append({"name": "es-ca", "mountPath": CA_MOUNT, "readOnly": True})
        volumes.append(
            {
                "name": "es-ca",
                "secret": {
                    "secretName": names.es_http_public_certs_secret(experiment.cluster),
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                },
            }
        )
    container: dict[str, Any] = {
        "name": RALLY_CONTAINER,
        "image": rally.image or image,
        "imagePullPolicy": image_pull_policy,
        "args": args,
        "env": env,
        "volumeMounts": mounts,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    if rally.resources:
        container["resources"] = rally.resources.to_wire()

    pod_labels = labels(experiment, "rally")
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(experiment, names.job_name(experiment.name), "rally"),
        "spec": {
            # A benchmark that failed is a result; a silent retry would hide it.
            "backoffLimit": 0,
            "activeDeadlineSeconds": rally.race_timeout_seconds,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": 1000,
                        "runAsGroup": 1000,
                        "fsGroup": 1000,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def race_json_configmap(experiment: Experiment, race_json: dict[str, Any]) -> dict[str, Any]:
    """The full race.json, kept beside the Experiment (the status holds the summary)."""
    text = json.dumps(race_json, sort_keys=True)
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(experiment, names.race_json_configmap_name(experiment.name), "results"),
        "immutable": True,
    }
    if len(text) <= CONFIGMAP_TEXT_LIMIT:
        manifest["data"] = {"race.json": text}
    else:
        manifest["binaryData"] = {"race.json.gz": base64.b64encode(gzip.compress(text.encode())).decode()}
    return manifest
