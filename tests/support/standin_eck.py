"""Stands in for exactly ECK's controller, at the API level.

ECK's controller cannot run here (it needs the commercial image). For an `Elasticsearch`
resource it would create the HTTP Service `NAME-es-http`, the Secret `NAME-es-elastic-user`
(key `elastic`), the Secret `NAME-es-http-certs-public` (`ca.crt`, `tls.crt`), pods, and keep
`status` up to date. This stand-in creates the same Service and Secrets and writes the status
fields ECK writes (phase, health, availableNodes, observedGeneration, version), through the
real API server's status subresource. Everything around it stays real.
"""

from __future__ import annotations

import base64
import secrets
import threading
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support import reflector
from tests.support.pki import CertificateAuthority

GROUP, VERSION, PLURAL = "elasticsearch.k8s.elastic.co", "v1", "elasticsearches"


class StandinEck:
    def __init__(self, api_client: client.ApiClient):
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self._stop = threading.Event()

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
        self.set_status(namespace, name, phase="ApplyingChanges", health="unknown", availableNodes=0,
                        observedGeneration=es["metadata"]["generation"])

    def make_ready(self, namespace: str, name: str) -> None:
        """ECK's status for a cluster whose every node has joined and whose health is green."""
        self.provision(namespace, name)
        es = self.get(namespace, name)
        nodes = sum(node_set["count"] for node_set in es["spec"]["nodeSets"])
        self.set_status(namespace, name, phase="Ready", health="green", availableNodes=nodes,
                        observedGeneration=es["metadata"]["generation"], version=es["spec"]["version"])

    def serve(self, namespace: str) -> threading.Thread:
        """Make every cluster created in NAMESPACE ready as soon as it appears (for benchmarks)."""
        seen: set[str] = set()

        def on_event(kind: str, es: dict[str, Any]) -> None:
            name = es["metadata"]["name"]
            if kind == "ADDED" and name not in seen:
                self.make_ready(namespace, name)
                seen.add(name)  # after: a failed attempt is made again on the relist

        return reflector.start(self.custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL,
                               on_event=on_event, stopping=self._stop, name="standin-eck", timeout_seconds=2)

    def stop(self) -> None:
        self._stop.set()


def _b64(value: str | bytes) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else value.encode()).decode()
