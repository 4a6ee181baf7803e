"""Stands in for exactly ECK's Elasticsearch controller, with a real Elasticsearch.

The real ECK operator builds here (scripts/eck-operator.sh) and tests/integration/test_real_eck.py
runs it against the API server, but the pods it makes need images it accepts, which the offline
machines do not have yet (probe tools, and APIs the minimal distribution lacks: issue #12). Until
then this controller stands in for it on the node, with real Elasticsearch pods. For every
`Elasticsearch` resource (elasticsearch.k8s.elastic.co/v1) it creates what ECK would, under ECK's
names, owned by the resource:

- Secret `NAME-es-elastic-user` (key `elastic`: a generated password),
- Secret `NAME-es-http-certs-public` (`ca.crt`, `tls.crt`) and `NAME-es-http-certs-internal`
  (plus `tls.key`): a self-signed CA and a certificate for `NAME-es-http`, `.NS`, `.NS.svc`
  (ECK's SANs; not `.svc.cluster.local`),
- Service `NAME-es-http` (port 9200, HTTPS) and per node set a headless Service `NAME-es-SET`,
  a config Secret `NAME-es-SET-es-config` and a StatefulSet `NAME-es-SET`,

and keeps `status` (phase, health, availableNodes, observedGeneration, version, and ECK's
conditions) up to date from the real cluster: health and version are read from Elasticsearch itself over HTTPS (verified
with the cluster's CA under the Service's name) as the elastic user, through a port-forward, so it
works the same on any cluster. (The API server's service proxy would drop the Authorization header.)

The pods run real Elasticsearch (the integ-test-zip image of scripts/images/elasticsearch.sh)
with x-pack security: HTTPS with the certificate above and basic auth with the elastic password
(as the keystore's bootstrap.password), so clients meet what ECK gives them in production.
From the nodeSet it honours: count, config (merged into elasticsearch.yml), the podTemplate's
labels, the `elasticsearch` container's env (ES_JAVA_OPTS) and resources, and an
`elasticsearch-data` volume (emptyDir) that replaces the claim. Pods meet Pod Security
"restricted". Not stood in for: rolling upgrades, PVC-backed storage (no provisioner on the
offline node), more than one node in total (transport TLS and discovery across nodes),
remote clusters, licences. It refuses other specs as ECK refuses an invalid one: status phase
`Invalid` and the reason in a Warning Event, reason `Validation`.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import secrets
import ssl
import threading
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.stream import portforward

from tests.support.pki import CertificateAuthority
from tests.support.standin_eck import eck_conditions

GROUP, VERSION, PLURAL = "elasticsearch.k8s.elastic.co", "v1", "elasticsearches"
ES_HOME = "/usr/share/elasticsearch"
log = logging.getLogger("eck-standin")


def es_image(version: str) -> str:
    """The image scripts/images/elasticsearch.sh builds for VERSION."""
    return f"docker.io/local/elasticsearch:{version}"


class EckStandin:
    def __init__(self, api_client: client.ApiClient, interval: float = 1.0, ignored_namespaces: set[str] = frozenset()):
        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        # kubernetes.stream swaps the request method of the ApiClient it uses while a port-forward
        # opens: give it one of its own so that no other call goes out as a websocket.
        self._forwarding = client.CoreV1Api(client.ApiClient(api_client.configuration))
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []
        self.ignored_namespaces = ignored_namespaces  # where the real ECK operator runs

    # ---- the control loop
    def start(self) -> EckStandin:
        """Serve in a background thread (the test session's)."""
        self._thread = threading.Thread(target=self.run_forever, name="eck-standin", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=10)

    def run_forever(self) -> None:
        """Reconcile every Elasticsearch resource in the cluster each `interval` seconds, until stop()."""
        while not self._stop.is_set():
            try:
                items = self.custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]
            except Exception as error:  # the API server may be briefly unavailable
                log.warning("listing Elasticsearch resources failed: %s", error)
                items = []
            for es in items:
                # Being deleted: the garbage collector removes the children (owner references).
                if es["metadata"].get("deletionTimestamp") or es["metadata"]["namespace"] in self.ignored_namespaces:
                    continue
                try:
                    self.reconcile(es)
                except Exception as error:  # keep serving the other clusters; tests read .errors
                    message = f"{es['metadata']['namespace']}/{es['metadata']['name']}: {error!r}"
                    log.exception("reconcile failed: %s", message)
                    self.errors.append(message)
            self._stop.wait(self.interval)

    def reconcile(self, es: dict[str, Any]) -> None:
        meta, spec = es["metadata"], es["spec"]
        namespace, name = meta["namespace"], meta["name"]
        node_sets = spec["nodeSets"]
        total = sum(node_set.get("count", 1) for node_set in node_sets)
        if total != 1:
            self._refuse(es, "the ECK stand-in runs exactly one Elasticsearch node in total")
            return
        if (spec.get("http", {}).get("tls", {}).get("selfSignedCertificate", {}) or {}).get("disabled"):
            self._refuse(es, "the ECK stand-in serves HTTPS only")
            return
        owner = [{"apiVersion": f"{GROUP}/{VERSION}", "kind": "Elasticsearch", "name": name,
                  "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]
        cluster_labels = {"common.k8s.elastic.co/type": "elasticsearch",
                          "elasticsearch.k8s.elastic.co/cluster-name": name}

        def metadata(object_name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
            return {"name": object_name, "namespace": namespace, "labels": labels or cluster_labels,
                    "ownerReferences": owner}

        if not self._exists(self.core.read_namespaced_secret, namespace, f"{name}-es-http-certs-internal"):
            authority = CertificateAuthority(f"{name}-http")
            leaf = authority.issue(f"{name}-es-http", server=True, dns_names=(
                f"{name}-es-http", f"{name}-es-http.{namespace}", f"{name}-es-http.{namespace}.svc"))
            # Public first: when the internal one exists, both do.
            self._create(self.core.create_namespaced_secret, namespace, {
                "metadata": metadata(f"{name}-es-http-certs-public"),
                "data": {"ca.crt": _b64(authority.cert_pem), "tls.crt": _b64(leaf.cert_pem)}})
            self._create(self.core.create_namespaced_secret, namespace, {
                "metadata": metadata(f"{name}-es-http-certs-internal"),
                "data": {"ca.crt": _b64(authority.cert_pem), "tls.crt": _b64(leaf.cert_pem),
                         "tls.key": _b64(leaf.key_pem)}})
        self._create(self.core.create_namespaced_secret, namespace, {
            "metadata": metadata(f"{name}-es-elastic-user"), "data": {"elastic": _b64(secrets.token_urlsafe(18))}})
        self._create(self.core.create_namespaced_service, namespace, {
            "metadata": metadata(f"{name}-es-http"),
            "spec": {"selector": cluster_labels, "ports": [{"name": "https", "port": 9200, "targetPort": 9200}]}})

        for node_set in node_sets:
            set_name = f"{name}-es-{node_set['name']}"
            set_labels = {**cluster_labels, "elasticsearch.k8s.elastic.co/statefulset-name": set_name}
            self._create(self.core.create_namespaced_service, namespace, {
                "metadata": metadata(set_name, set_labels),
                "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": set_labels,
                         "ports": [{"name": "https", "port": 9200}, {"name": "transport", "port": 9300}]}})
            self._create(self.core.create_namespaced_secret, namespace, {
                "metadata": metadata(f"{set_name}-es-config", set_labels),
                "stringData": {"elasticsearch.yml": yaml.safe_dump(_es_config(name, node_set))}})
            self._create(self.apps.create_namespaced_stateful_set, namespace,
                         _statefulset(es, node_set, set_name, set_labels, metadata(set_name, set_labels)))

        self._observe(es, total)

    # ---- status from the real cluster
    def _observe(self, es: dict[str, Any], total: int) -> None:
        namespace, name = es["metadata"]["namespace"], es["metadata"]["name"]
        pods = self.core.list_namespaced_pod(
            namespace, label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={name}").items
        ready = sum(1 for pod in pods if any(
            c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or [])))
        health, version = "unknown", None
        if ready:
            try:
                health = self.es_get(namespace, name, "_cluster/health")["status"]
                version = self.es_get(namespace, name, "")["version"]["number"]
            except Exception as error:  # not serving yet, or security not initialised yet
                log.info("%s/%s not answering yet: %s", namespace, name, error)
        up = ready == total and health == "green"
        status: dict[str, Any] = {
            "phase": "Ready" if up else "ApplyingChanges", "health": health, "availableNodes": ready,
            "conditions": eck_conditions(es, reconciled=up, reachable=health != "unknown")}
        if version:
            status["version"] = version
        self._set_status(es, **status)

    def es_get(self, namespace: str, name: str, path: str) -> Any:
        """GET /PATH from a node of the cluster over HTTPS as the elastic user, verified with the
        cluster's CA under the Service's name, through a port-forward (works on any cluster)."""
        secret = self.core.read_namespaced_secret(f"{name}-es-elastic-user", namespace)
        password = base64.b64decode(secret.data["elastic"]).decode()
        certs = self.core.read_namespaced_secret(f"{name}-es-http-certs-public", namespace)
        context = ssl.create_default_context(cadata=base64.b64decode(certs.data["ca.crt"]).decode())
        pods = self.core.list_namespaced_pod(
            namespace, label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={name}").items
        pod = next(p for p in pods if p.status.phase == "Running")
        forward = portforward(self._forwarding.connect_get_namespaced_pod_portforward, pod.metadata.name, namespace,
                              ports="9200")
        try:
            sock = context.wrap_socket(forward.socket(9200), server_hostname=f"{name}-es-http.{namespace}.svc")
            sock.settimeout(5)
            credentials = base64.b64encode(f"elastic:{password}".encode()).decode()
            sock.sendall(f"GET /{path} HTTP/1.1\r\nHost: {name}-es-http\r\nAuthorization: Basic {credentials}\r\n"
                         "Accept: application/json\r\nConnection: close\r\n\r\n".encode())
            response = http.client.HTTPResponse(sock)
            response.begin()
            body = response.read()
            try:  # read up to the server's close: closing with unread bytes would reset the forward
                while sock.recv(65536):
                    pass
            except (OSError, ssl.SSLError):
                pass
            sock.close()
        finally:
            forward.close()
        if response.status != 200:
            raise RuntimeError(f"GET /{path}: HTTP {response.status}: {body[:200]!r}")
        return json.loads(body)

    def _refuse(self, es: dict[str, Any], reason: str) -> None:
        """As ECK refuses a spec: phase Invalid, and the reason in a Warning Event (Validation)."""
        if (es.get("status") or {}).get("phase") == "Invalid":
            return
        meta = es["metadata"]
        self.core.create_namespaced_event(meta["namespace"], {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": es["apiVersion"], "kind": es["kind"], "name": meta["name"],
                               "namespace": meta["namespace"], "uid": meta["uid"]},
            "type": "Warning", "reason": "Validation", "message": reason, "source": {"component": "eck-standin"}})
        self._set_status(es, phase="Invalid", health="unknown")

    def _set_status(self, es: dict[str, Any], **status: Any) -> None:
        status["observedGeneration"] = es["metadata"]["generation"]
        current = es.get("status") or {}
        if all(current.get(key) == value for key, value in status.items()):
            return
        try:
            self.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, es["metadata"]["namespace"], PLURAL, es["metadata"]["name"], {"status": status})
        except ApiException as error:
            if error.status != 404:  # deleted meanwhile (a finished sweep's cluster): nothing to report on
                raise

    @staticmethod
    def _exists(read, namespace: str, name: str) -> bool:
        try:
            read(name, namespace)
            return True
        except ApiException as error:
            if error.status == 404:
                return False
            raise

    @staticmethod
    def _create(create, namespace: str, body: dict[str, Any]) -> None:
        try:
            create(namespace, body)
        except ApiException as error:
            if error.status != 409:  # already there: get-or-create, as ECK does
                raise


def _es_config(cluster: str, node_set: dict[str, Any]) -> dict[str, Any]:
    config = {
        "cluster.name": cluster,
        "node.name": "${POD_NAME}",
        "network.host": "0.0.0.0",
        "discovery.type": "single-node",
        "path.data": f"{ES_HOME}/data",
        "path.logs": f"{ES_HOME}/logs",
        # Explicit security settings: ES then never auto-configures (rewrites) this file.
        "xpack.security.enabled": True,
        "xpack.security.http.ssl.enabled": True,
        "xpack.security.http.ssl.certificate": "http-certs/tls.crt",
        "xpack.security.http.ssl.key": "http-certs/tls.key",
        "xpack.security.http.ssl.certificate_authorities": ["http-certs/ca.crt"],
    }
    config.update(node_set.get("config") or {})
    return config


def _statefulset(es: dict[str, Any], node_set: dict[str, Any], set_name: str, set_labels: dict[str, str],
                 metadata: dict[str, Any]) -> dict[str, Any]:
    name = es["metadata"]["name"]
    template = node_set.get("podTemplate") or {}
    template_spec = template.get("spec") or {}
    user = next((c for c in template_spec.get("containers", []) if c.get("name") == "elasticsearch"), {})
    user_env = {e["name"]: e for e in user.get("env", [])}
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ELASTIC_PASSWORD", "valueFrom": {"secretKeyRef": {"name": f"{name}-es-elastic-user", "key": "elastic"}}},
        user_env.pop("ES_JAVA_OPTS", {"name": "ES_JAVA_OPTS", "value": "-Xms1g -Xmx1g"}),
        *user_env.values(),
    ]
    # ECK's default when the podTemplate sets none: 2Gi of memory, requested and limited.
    resources = user.get("resources") or {"requests": {"memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    user_volumes = {v["name"]: v for v in template_spec.get("volumes", [])}
    data_volume = user_volumes.get("elasticsearch-data") or {"name": "elasticsearch-data", "emptyDir": {}}
    config_dir = f"{ES_HOME}/config"
    container = {
        "name": "elasticsearch",
        "image": es["spec"].get("image") or es_image(es["spec"]["version"]),
        "imagePullPolicy": "IfNotPresent",
        "env": env,
        "resources": resources,
        "ports": [{"name": "https", "containerPort": 9200}, {"name": "transport", "containerPort": 9300}],
        # ECK's probe asks Elasticsearch; an open HTTPS port is the part we need (status asks the rest).
        "readinessProbe": {"tcpSocket": {"port": 9200}, "periodSeconds": 2, "failureThreshold": 3},
        "volumeMounts": [
            {"name": "elasticsearch-data", "mountPath": f"{ES_HOME}/data"},
            {"name": "elasticsearch-logs", "mountPath": f"{ES_HOME}/logs"},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "config", "mountPath": f"{config_dir}/elasticsearch.yml", "subPath": "elasticsearch.yml",
             "readOnly": True},
            {"name": "http-certs", "mountPath": f"{config_dir}/http-certs", "readOnly": True},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": 1000,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
    }
    pod_labels = {**(template.get("metadata") or {}).get("labels", {}), **set_labels}
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": metadata,
        "spec": {
            "serviceName": set_name, "replicas": node_set.get("count", 1),
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": set_labels},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 0, "fsGroup": 0,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [container],
                    "volumes": [
                        {**data_volume, "name": "elasticsearch-data"},
                        {"name": "elasticsearch-logs", "emptyDir": {}},
                        {"name": "tmp", "emptyDir": {}},
                        {"name": "config", "secret": {"secretName": f"{set_name}-es-config"}},
                        {"name": "http-certs", "secret": {"secretName": f"{name}-es-http-certs-internal"}},
                    ],
                },
            },
        },
    }


def _b64(value: str | bytes) -> str:
    return base64.b64encode(value if isinstance(value, bytes) else value.encode()).decode()

