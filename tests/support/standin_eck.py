"""Stands in for exactly ECK's controller, at the API level, for the fast operator tests.

For an `Elasticsearch` resource it creates the HTTP Service `NAME-es-http`, the Secret
`NAME-es-elastic-user` (key `elastic`) and the Secret `NAME-es-http-certs-public` (`ca.crt`,
`tls.crt`), and writes the status real ECK v3.5.0 writes, through the real API server's status
subresource: first what ECK reports before any pod runs (phase ApplyingChanges, health unknown,
the spec's version, ReconciliationComplete and ElasticsearchIsReachable False), then, when a
test says the cluster is up, Ready with every condition True. No pods: these tests run on a bare
control plane. tests/integration/test_real_eck.py runs the same resource through the real ECK
operator (scripts/eck-operator.sh) and fails when this stand-in differs from it in what esbench
reads before any pod runs; the end-to-end quickstart does the same for a Ready cluster.
"""

from __future__ import annotations

import base64
import secrets
import threading
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from esbench.planning.readiness import readiness
from tests.support import reflector
from tests.support.pki import CertificateAuthority

GROUP, VERSION, PLURAL = "elasticsearch.k8s.elastic.co", "v1", "elasticsearches"


class StandinEck:
    def __init__(self, api_client: client.ApiClient):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self._stop = threading.Event()
        self.errors: list[str] = []  # what serve() failed at; the eck fixture fails the test on any

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)

    def list(self, namespace: str) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]

    def set_status(self, namespace: str, name: str, **status: Any) -> None:
        self.custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, name, {"status": status})

    def provision(self, namespace: str, name: str) -> None:
        """What ECK creates before the cluster turns Ready: the Service and the Secrets."""
        es = self.get(namespace, name)
        owner = [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "Elasticsearch", "name": name,
                  "uid": es["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        labels = {"common.k8s.elastic.co/type": "elasticsearch", "elasticsearch.k8s.elastic.co/cluster-name": name}
        meta = lambda object_name: {"name": object_name, "namespace": namespace, "labels": labels,  # noqa: E731
                                    "ownerReferences": owner}
        authority = CertificateAuthority(f"{name}-http")
        leaf = authority.issue(f"{name}-es-http", dns_names=(
            f"{name}-es-http", f"{name}-es-http.{namespace}", f"{name}-es-http.{namespace}.svc"), server=True)
        objects = [
            (self.core.create_namespaced_service, {"metadata": meta(f"{name}-es-http"), "spec": {
                "selector": labels, "ports": [{"name": "https", "port": 9200, "targetPort": 9200}]}}),
            (self.core.create_namespaced_secret, {"metadata": meta(f"{name}-es-elastic-user"),
                                                  "data": {"elastic": _b64(secrets.token_urlsafe(18))}}),
            (self.core.create_namespaced_secret, {"metadata": meta(f"{name}-es-http-certs-public"),
                                                  "data": {"ca.crt": _b64(authority.cert_pem),
                                                           "tls.crt": _b64(leaf.cert_pem)}}),
        ]
        for create, body in objects:
            try:
                create(namespace, body)
            except ApiException as error:
                if error.status != 409:
                    raise
        self.set_status(namespace, name, **eck_status(es, up=False))

    def make_ready(self, namespace: str, name: str) -> None:
        """ECK's status for a cluster whose every node has joined and whose health is green."""
        self.provision(namespace, name)
        self.become_ready(namespace, name)

    def become_ready(self, namespace: str, name: str) -> None:
        """The Ready status alone, for a cluster provisioned before (ECK provisions at once,
        and a cluster turns Ready minutes later)."""
        self.set_status(namespace, name, **eck_status(self.get(namespace, name), up=True))

    def serve(self, namespace: str) -> threading.Thread:
        """Make every cluster created in NAMESPACE ready as soon as it appears (for benchmarks)."""
        seen: set[str] = set()

        def on_event(kind: str, es: dict[str, Any]) -> None:
            name = es["metadata"]["name"]
            if kind == "ADDED" and name not in seen:
                try:
                    self.make_ready(namespace, name)
                except Exception as error:
                    self.errors.append(f"{namespace}/{name}: {error!r}")
                    raise  # the reflector relists, and so tries again
                seen.add(name)

        return reflector.start(self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL,
                               on_event=on_event, stopping=self._stop, name="standin-eck", timeout_seconds=2)

    def stop(self) -> None:
        self._stop.set()


def eck_status(es: dict[str, Any], up: bool) -> dict[str, Any]:
    """The status ECK v3.5.0 writes for ES before any pod exists (up=False; as recorded by
    test_real_eck.py) or once every node has joined and health is green (up=True)."""
    status: dict[str, Any] = {
        "phase": "Ready" if up else "ApplyingChanges", "health": "green" if up else "unknown",
        "version": es["spec"]["version"], "observedGeneration": es["metadata"]["generation"],
        "conditions": eck_conditions(es, reconciled=up, reachable=up),
    }
    if up:
        status["availableNodes"] = sum(node_set["count"] for node_set in es["spec"]["nodeSets"])
    return status


def eck_conditions(es: dict[str, Any], reconciled: bool, reachable: bool) -> list[dict[str, str]]:
    """ECK's conditions, with its messages (elasticsearch_controller.go, reconcile/state.go,
    driver/shared/reconcile.go and driver/desired_nodes.go in ECK 3.5.0), for a cluster that
    runs the spec's version."""
    namespace, name = es["metadata"]["namespace"], es["metadata"]["name"]
    service = f"Service {namespace}/{name}-es-internal-http"
    conditions = [
        ("ReconciliationComplete", reconciled, "" if reconciled else "Elasticsearch cluster UUID is not reconciled"),
        ("RunningDesiredVersion", True, f"All nodes are running version {es['spec']['version']}"),
        ("ElasticsearchIsReachable", reachable, f"{service} has endpoints" if reachable else f"{service} has no endpoint"),
    ]
    major, minor, _ = (int(part) for part in es["spec"]["version"].split("."))
    if reconciled and (major, minor) >= (8, 3):  # the desired nodes API (driver/desired_nodes.go)
        conditions.append(("ResourcesAwareManagement", True, "Successfully calculated compute and storage resources "
                                                             f"from Elasticsearch resource generation "
                                                             f"{es['metadata']['generation']}"))
    return [{"type": kind, "status": str(met), "message": message} for kind, met, message in conditions]


def what_esbench_reads(es: dict[str, Any]) -> dict[str, Any]:
    """The status fields and conditions esbench reads from an Elasticsearch resource, and the
    readiness it makes of them, with the resource's namespace replaced by NS: where the
    stand-in and real ECK must agree."""
    status = es["status"]
    own = es["metadata"]["namespace"]
    return {"phase": status.get("phase"), "health": status.get("health"), "version": status.get("version"),
            "availableNodes": status.get("availableNodes", 0),
            "conditions": sorted((c["type"], c["status"], c.get("message", "").replace(own, "NS"))
                                 for c in status["conditions"]),
            "readiness": readiness(es).message.replace(own, "NS")}


def _b64(value: str | bytes) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else value.encode()).decode()
