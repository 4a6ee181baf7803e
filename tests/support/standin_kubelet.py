"""A stand-in for the kubelet of one node, and for nothing else.

The test control plane (tests.support.controlplane) runs the real kube-apiserver and the
real controllers, but no kubelet: containers cannot run here. StandinKubelet does exactly
the kubelet's share of the work, through the same APIs a kubelet uses:

* registers its Node (Ready, InternalIP 127.0.0.1, kubeletEndpoint port) like kubelet
  node registration/status does;
* serves GET /containerLogs/{namespace}/{pod}/{container} over HTTPS, the endpoint
  kube-apiserver proxies `pods/log` to, so `kubectl logs` / read_namespaced_pod_log work
  through the real API server (which verifies this server's certificate), over connections
  kept open and without Nagle's algorithm, as a kubelet (Go's net/http) keeps them;
* reports Pod status (Running, then Succeeded/Failed with container exit codes) via the
  pods/status subresource, so the REAL Job controller decides Complete/Failed;
* finishes graceful deletion of Pods bound to its node (a Pod bound to a node stays
  Terminating until its kubelet confirms), so namespace and Job cleanup complete.

It does not schedule (tests bind a Pod explicitly, standing in for the scheduler only in
that one call), and does not run containers: tests decide each container's log and exit
code. Everything else (Job controller, garbage collector, ...) stays the real thing.
"""

from __future__ import annotations

import datetime
import logging
import os
import socket
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from . import reflector
from .answers import read, read_json
from .controlplane import K8S_VERSION, ControlPlane
from .waiting import wait_for

logger = logging.getLogger(__name__)

NODE_IP = "127.0.0.1"
_STRATEGIC_MERGE = "application/strategic-merge-patch+json"
# A container killed at the end of its grace period dies of SIGKILL: 128 + 9.
_KILLED_EXIT_CODE = 137


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _LogStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: dict[tuple[str, str, str], str] = {}

    def set(self, namespace: str, pod: str, container: str, text: str) -> None:
        with self._lock:
            self._logs[(namespace, pod, container)] = text

    def get(self, namespace: str, pod: str, container: str) -> str | None:
        with self._lock:
            return self._logs.get((namespace, pod, container))


class LogRequest(NamedTuple):
    peer: tuple[str, int]  # the same for many requests: a kept connection
    no_delay: bool  # TCP_NODELAY on the connection it came over


def _log_handler(store: _LogStore, requests: list[LogRequest]) -> type[BaseHTTPRequestHandler]:
    class ContainerLogsHandler(BaseHTTPRequestHandler):
        """The kubelet's /containerLogs endpoint, answering from the in-memory store."""

        # A kubelet (Go's net/http) keeps connections open. HTTP/1.0, the default here, closes
        # each one, and the API server would then make a TLS handshake for every log read.
        protocol_version = "HTTP/1.1"
        # Go also sets TCP_NODELAY on every connection. With Nagle's algorithm on, the body of each
        # answer, written after its headers, waits for the API server's delayed ACK: 40 ms a read.
        disable_nagle_algorithm = True

        def do_GET(self) -> None:
            no_delay = bool(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            requests.append(LogRequest(self.client_address, no_delay))
            url = urlsplit(self.path)
            parts = [unquote(p) for p in url.path.strip("/").split("/")]
            if len(parts) != 4 or parts[0] != "containerLogs":
                return self._reply(404, f"not found: {url.path}\n")
            text = store.get(*parts[1:])
            if text is None:
                return self._reply(404, f"no log for container {parts[3]} of pod {parts[1]}/{parts[2]}\n")
            query = parse_qs(url.query)
            if "tailLines" in query:
                lines = text.splitlines(keepends=True)
                count = int(query["tailLines"][0])
                text = "".join(lines[-count:]) if count > 0 else ""
            data = text.encode()
            if "limitBytes" in query:
                data = data[: int(query["limitBytes"][0])]
            # follow=true is answered like a finished container: everything, then EOF.
            self._reply(200, data)

        def _reply(self, status: int, body: str | bytes) -> None:
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args) -> None:
            logger.debug("stand-in kubelet: " + format, *args)

    return ContainerLogsHandler


class StandinKubelet:
    """Stands in for the kubelet of node `node_name`; see the module docstring for scope.

    Use as a context manager. The control plane must verify this server with its CA
    (ControlPlane passes --kubelet-certificate-authority), so the serving certificate is
    issued by control_plane.ca for 127.0.0.1.
    """

    def __init__(self, control_plane: ControlPlane, node_name: str = "esbench-standin-node") -> None:
        self.control_plane = control_plane
        self.node_name = node_name
        self.port: int | None = None
        self._logs = _LogStore()
        self.log_requests: list[LogRequest] = []
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._api_client: client.ApiClient | None = None
        self.core: client.CoreV1Api | None = None
        self.batch: client.BatchV1Api | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> StandinKubelet:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        try:
            self._start_log_server()
            self._api_client = self.control_plane.api_client()
            self.core = client.CoreV1Api(self._api_client)
            self.batch = client.BatchV1Api(self._api_client)
            self._register_node()
            self._spawn(self._finish_pod_deletions, "standin-kubelet-deletions")
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        self._threads.clear()
        if self._api_client is not None:
            try:
                read(self.core.delete_node, self.node_name)
            except Exception:  # the control plane may already be gone; nothing to clean then
                pass
            self._api_client.close()
            self._api_client = None

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _start_log_server(self) -> None:
        pair = self.control_plane.ca.issue(
            f"system:node:{self.node_name}", dns_names=(self.node_name,), ip_addresses=(NODE_IP,), server=True
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        # load_cert_chain wants files; keep them only as long as it takes to load.
        with tempfile.TemporaryDirectory(prefix="esbench-standin-kubelet-") as directory:
            cert_path, key_path = pair.write(Path(directory), "kubelet")
            context.load_cert_chain(cert_path, key_path)
        self._server = ThreadingHTTPServer((NODE_IP, 0), _log_handler(self._logs, self.log_requests))
        self._server.daemon_threads = True
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._spawn(self._server.serve_forever, "standin-kubelet-https")

    def _register_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {
                    "kubernetes.io/hostname": self.node_name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
        }
        try:
            read(self.core.create_node, node)
        except ApiException as error:
            if error.status != 409:
                raise
        now = _now()
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        resources = {"cpu": str(os.cpu_count() or 1), "memory": str(memory), "pods": "110"}
        status = {
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": NODE_IP},
                    {"type": "Hostname", "address": self.node_name},
                ],
                "conditions": [{
                    "type": "Ready", "status": "True", "reason": "KubeletReady",
                    "message": "stand-in kubelet is posting ready status",
                    "lastHeartbeatTime": now, "lastTransitionTime": now,
                }],
                # kube-apiserver reaches the kubelet at InternalIP:this port for pods/log.
                "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port}},
                "capacity": resources,
                "allocatable": resources,
                "nodeInfo": {
                    "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": os.uname().release,
                    "osImage": "esbench stand-in", "containerRuntimeVersion": "standin://0",
                    "kubeletVersion": K8S_VERSION, "kubeProxyVersion": "",
                    "operatingSystem": "linux", "architecture": "amd64",
                },
            }
        }
        read(self.core.patch_node_status, self.node_name, status, _content_type=_STRATEGIC_MERGE)

    # -- what tests call ---------------------------------------------------------------

    @property
    def api_connections_opened(self) -> int:
        """How many connections to the API server the pod and node calls have opened so far."""
        pools = self._api_client.rest_client.pool_manager.pools
        return sum(pools[key].num_connections for key in pools.keys())

    def set_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        """Set what the container's log (as served to kube-apiserver) contains."""
        self._logs.set(namespace, pod, container, text)

    def run_job_pod(self, namespace: str, job_name: str, log: str = "", *, container: str | None = None,
                    timeout: float = 30.0) -> str:
        """Wait for the Job controller's Pod for `job_name`, bind it here and report it
        Running (all containers started and ready). Returns the Pod name."""
        pod = self._bind_job_pod(namespace, job_name, timeout)
        name = pod["metadata"]["name"]
        self.set_log(namespace, name, container or pod["spec"]["containers"][0]["name"], log)
        started = _now()
        status = self._base_status(pod, started)
        status.update(
            phase="Running",
            conditions=self._conditions(ready=True),
            containerStatuses=[
                self._container_status(c, {"running": {"startedAt": started}}, ready=True)
                for c in pod["spec"]["containers"]
            ],
        )
        self._patch_status(namespace, name, status)
        return name

    def finish_job_pod(self, namespace: str, job_name: str, log: str = "", exit_code: int = 0, *,
                       container: str | None = None, timeout: float = 30.0) -> str:
        """Wait for the Job controller's Pod for `job_name`, bind it here if needed, and
        report it terminated: `container` (default: the first) exited with `exit_code`
        and wrote `log`; other containers exited 0. Phase becomes Succeeded or Failed, as
        the kubelet reports it for restartPolicy Never, and the real Job controller takes
        it from there. Returns the Pod name."""
        pod = self._bind_job_pod(namespace, job_name, timeout)
        name = pod["metadata"]["name"]
        container = container or pod["spec"]["containers"][0]["name"]
        if exit_code != 0 and pod["spec"].get("restartPolicy") != "Never":
            raise ValueError(
                "a kubelet restarts a failed container unless restartPolicy is Never; "
                "this stand-in only models restartPolicy Never for non-zero exit codes"
            )
        self.set_log(namespace, name, container, log)
        started = (pod.get("status") or {}).get("startTime") or _now()
        finished = _now()

        def terminated(c: dict) -> dict:
            code = exit_code if c["name"] == container else 0
            return self._container_status(c, {"terminated": {
                "exitCode": code, "reason": "Completed" if code == 0 else "Error",
                "startedAt": started, "finishedAt": finished,
                "containerID": f"standin://{pod['metadata']['uid']}/{c['name']}",
            }}, ready=False)

        status = self._base_status(pod, started)
        status.update(
            phase="Succeeded" if exit_code == 0 else "Failed",
            conditions=self._conditions(ready=False, reason="PodCompleted"),
            containerStatuses=[terminated(c) for c in pod["spec"]["containers"]],
        )
        self._patch_status(namespace, name, status)
        return name

    # -- internals ---------------------------------------------------------------------

    def _bind_job_pod(self, namespace: str, job_name: str, timeout: float) -> dict:
        """The oldest live Pod the Job controller created for this Job, bound to this node."""

        def job_uid() -> str | None:
            try:
                return read_json(self.batch.read_namespaced_job, job_name, namespace)["metadata"]["uid"]
            except ApiException as error:
                if error.status == 404:
                    return None
                raise

        uid = wait_for(job_uid, timeout, f"Job {namespace}/{job_name}", interval=0.1)

        def live_pod() -> dict | None:
            pods = read_json(self.core.list_namespaced_pod, namespace,
                             label_selector=f"batch.kubernetes.io/controller-uid={uid}")["items"]
            live = [
                p for p in pods
                if not p["metadata"].get("deletionTimestamp")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ]
            return min(live, key=lambda p: p["metadata"]["creationTimestamp"]) if live else None

        pod = wait_for(live_pod, timeout, f"a Pod of Job {namespace}/{job_name}", interval=0.1)
        node = pod["spec"].get("nodeName")
        if node and node != self.node_name:
            raise RuntimeError(f"Pod {namespace}/{pod['metadata']['name']} is bound to another node: {node}")
        if not node:
            binding = client.V1Binding(
                metadata=client.V1ObjectMeta(name=pod["metadata"]["name"]),
                target=client.V1ObjectReference(api_version="v1", kind="Node", name=self.node_name),
            )
            # The server answers a Binding create with a Status, which the client can't
            # parse as V1Binding: read the raw response instead.
            read(self.core.create_namespaced_pod_binding, pod["metadata"]["name"], namespace, binding)
            pod = read_json(self.core.read_namespaced_pod, pod["metadata"]["name"], namespace)
        return pod

    @staticmethod
    def _base_status(pod: dict, started: str) -> dict:
        status: dict = {
            "hostIP": NODE_IP,
            "hostIPs": [{"ip": NODE_IP}],
            "startTime": started,
        }
        init_containers = pod["spec"].get("initContainers") or []
        if init_containers:
            # By the time app containers run, every init container has completed.
            status["initContainerStatuses"] = [
                StandinKubelet._container_status(c, {"terminated": {
                    "exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": started,
                }}, ready=False)
                for c in init_containers
            ]
        return status

    @staticmethod
    def _container_status(container: dict, state: dict, *, ready: bool) -> dict:
        return {
            "name": container["name"],
            "image": container.get("image", ""),
            "imageID": "",
            "ready": ready,
            "started": "running" in state,
            "restartCount": 0,
            "state": state,
        }

    @staticmethod
    def _conditions(*, ready: bool, reason: str | None = None) -> list[dict]:
        now = _now()

        def condition(kind: str, status: bool, reason: str | None = None) -> dict:
            c = {"type": kind, "status": "True" if status else "False", "lastTransitionTime": now}
            if reason:
                c["reason"] = reason
            return c

        return [
            condition("Initialized", True),
            condition("ContainersReady", ready, reason),
            condition("Ready", ready, reason),
        ]

    def _patch_status(self, namespace: str, name: str, status: dict) -> None:
        # Strategic merge, like the kubelet's status manager (lists merge by name/type).
        read(self.core.patch_namespaced_pod_status, name, namespace, {"status": status},
             _content_type=_STRATEGIC_MERGE)

    def _finish_pod_deletions(self) -> None:
        """Kubelet duty: a Pod bound to a node is only removed once its kubelet has killed
        the containers and deletes it with grace period 0."""
        api_client = self.control_plane.api_client()
        core = client.CoreV1Api(api_client)

        def on_event(kind: str, pod: dict) -> None:
            if kind in ("ADDED", "MODIFIED") and pod["metadata"].get("deletionTimestamp"):
                self._kill_and_delete(core, pod)

        try:
            reflector.reflect(core.list_pod_for_all_namespaces, field_selector=f"spec.nodeName={self.node_name}",
                              on_event=on_event, stopping=self._stopping, name="stand-in kubelet pods")
        finally:
            api_client.close()

    def _kill_and_delete(self, core: client.CoreV1Api, pod: dict) -> None:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        try:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                finished = _now()
                status = self._base_status(pod, (pod.get("status") or {}).get("startTime") or finished)
                status.update(
                    phase="Failed",
                    conditions=self._conditions(ready=False, reason="PodCompleted"),
                    containerStatuses=[
                        self._container_status(c, {"terminated": {
                            "exitCode": _KILLED_EXIT_CODE, "reason": "Error", "finishedAt": finished,
                            "startedAt": status["startTime"],
                        }}, ready=False)
                        for c in pod["spec"]["containers"]
                    ],
                )
                read(core.patch_namespaced_pod_status, name, namespace, {"status": status},
                     _content_type=_STRATEGIC_MERGE)
            read(core.delete_namespaced_pod, name, namespace, grace_period_seconds=0,
                 body={"gracePeriodSeconds": 0, "preconditions": {"uid": pod["metadata"]["uid"]}})
        except ApiException as error:
            if error.status not in (404, 409):  # already gone, or replaced by a new Pod
                raise
