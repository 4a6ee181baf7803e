"""A real, throwaway Kubernetes control plane for integration tests.

Runs etcd, kube-apiserver and kube-controller-manager as local processes in a temporary
directory, on free loopback ports, so several can run side by side and none clashes with
a real cluster on 6443/2379. Nothing is faked: the Job controller, the garbage collector,
the namespace and ServiceAccount controllers are the real ones. There is no kubelet and
no scheduler; tests.support.standin_kubelet stands in for the kubelet's part.

Binaries come from scripts/k8s-binaries.sh and scripts/etcd.sh (built from the Go module proxy,
cached under $ESBENCH_CACHE). Not Debian's etcd 3.4.23: it predates the watch-progress fixes
that kube-apiserver 1.32's watch cache relies on (watches then fail with 504 "Too large
resource version" under load).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterable
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from .answers import read, read_json
from .pki import CertificateAuthority, KeyPair, service_account_signing_key
from .processes import tied_to_test_run
from .waiting import wait_for

K8S_VERSION = "v1.32.4"
ECK_VERSION = "v3.5.0"
ETCD_VERSION = "v3.5.21"  # scripts/etcd.sh

# Controllers the esbench tests rely on. Deliberately not nodelifecycle: with no real
# kubelet heartbeating, it would taint the node and evict every pod bound to it.
DEFAULT_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "ttl-after-finished-controller",
    # Computes ResourceQuota usage, so quotas reject creates the way they do in a real cluster.
    "resourcequota-controller",
    # Publishes kube-root-ca.crt into every namespace, which Pods' token volumes reference.
    "root-ca-certificate-publisher-controller",
)

# A /16, as EKS's and AKS's defaults, not kubeadm's /12: kube-apiserver 1.32 keeps the range's
# ClusterIP allocations as one bitmap in etcd and writes all of it at every Service create and
# delete, 128 KiB for a /12 and 8 KiB for a /16. Every cluster the stand-in ECK makes has a Service:
# with a /12, `make bench` grew etcd to 1.3 GiB (of its 2 GiB quota), and each steady-state p95 was
# 10-25 % higher.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
_KUBERNETES_SERVICE_IP = "10.96.0.1"  # first address of the range: the `kubernetes` Service


class ControlPlaneError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("ESBENCH_CACHE") or Path.home() / ".cache" / "esbench")


def k8s_bin_dir() -> Path:
    return cache_dir() / "k8s" / K8S_VERSION / "bin"


def etcd_binary() -> Path:
    return cache_dir() / "etcd" / ETCD_VERSION / "bin" / "etcd"


def eck_crd_path() -> Path:
    return cache_dir() / "eck" / ECK_VERSION / "elasticsearch.k8s.elastic.co_elasticsearches.yaml"


def free_port() -> int:
    """A loopback port nothing listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Process:
    """One control-plane binary in its own process group, output to a log file."""

    def __init__(self, name: str, argv: list[str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        # Tied to the test run, so a killed run leaves no etcd/apiserver orphans behind.
        with open(log_path, "wb") as log:
            self.popen = subprocess.Popen(
                tied_to_test_run(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def check_running(self) -> None:
        if self.popen.poll() is not None:
            raise ControlPlaneError(
                f"{self.name} exited with code {self.popen.returncode}:\n{self.log_tail()}"
            )

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        except ProcessLookupError:
            pass


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _certificate(pair: KeyPair) -> dict:
    return {"client-certificate-data": _b64(pair.cert_pem), "client-key-data": _b64(pair.key_pem)}


def _kubeconfig(server: str, ca_pem: bytes, user: str, credentials: dict) -> dict:
    """A self-contained kubeconfig (credentials inline), usable by any client or process."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "esbench-test", "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "esbench-test", "context": {"cluster": "esbench-test", "user": user}}],
        "current-context": "esbench-test",
    }


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager, started in a temp dir.

    Use as a context manager; leaving it (even on an exception) stops every process
    group and deletes the temp dir. CRDs passed as `crd_paths` are installed before the
    controller-manager starts, so the garbage collector watches their kinds from its
    first discovery (CRDs added later are picked up on its 30 s discovery resync).
    `controller_api_qps`: each controller's API request rate (kube-controller-manager's
    default, 20 per second, lets its Job controller complete about 4 Jobs per second here).
    `audit`: the API server writes an audit log (`audit_events()`) of every request made by a
    ServiceAccount outside kube-system (the operator's, not the controllers' own), so that a
    bench counts the requests a client makes as the server saw them.
    """

    def __init__(
        self,
        *,
        bin_dir: Path | None = None,
        crd_paths: Iterable[Path] = (),
        controllers: Iterable[str] = DEFAULT_CONTROLLERS,
        startup_timeout: float = 60.0,
        controller_api_qps: int | None = None,
        audit: bool = False,
    ) -> None:
        self.bin_dir = Path(bin_dir) if bin_dir else k8s_bin_dir()
        self.crd_paths = [Path(p) for p in crd_paths]
        self.controllers = list(controllers)
        self.startup_timeout = startup_timeout
        self.controller_api_qps = controller_api_qps
        self.audit = audit
        self.ca: CertificateAuthority | None = None  # also trusted for the kubelet's serving cert
        self.ca_path: Path | None = None
        self.workdir: Path | None = None
        self.server: str | None = None  # https://127.0.0.1:PORT
        self.kubeconfig_path: Path | None = None  # admin (system:masters) credentials
        self._processes: list[_Process] = []

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        apiserver, controller_manager, etcd = self._binaries()
        self.workdir = Path(tempfile.mkdtemp(prefix="esbench-controlplane-"))
        try:
            self._write_credentials()
            self._start_etcd(etcd)
            self._start_apiserver(apiserver)
            for path in self.crd_paths:
                self.apply_crd(path)
            self._start_controller_manager(controller_manager)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _binaries(self) -> tuple[str, str, str]:
        binaries = (self.bin_dir / "kube-apiserver", self.bin_dir / "kube-controller-manager", etcd_binary())
        missing = [str(path) for path in binaries if not os.access(path, os.X_OK)]
        if missing:
            raise ControlPlaneError(
                "Kubernetes test binaries are missing: " + ", ".join(missing)
                + ". Run `make deps` (scripts/k8s-binaries.sh and scripts/etcd.sh) first."
            )
        apiserver, controller_manager, etcd = (str(path) for path in binaries)
        return apiserver, controller_manager, etcd

    # -- credentials -------------------------------------------------------------------

    def _write_credentials(self) -> None:
        pki = self.workdir / "pki"
        pki.mkdir()
        self.ca = CertificateAuthority()
        (pki / "ca.crt").write_bytes(self.ca.cert_pem)
        self.ca_path = pki / "ca.crt"

        self._apiserver_cert = self.ca.issue(
            "kube-apiserver",
            dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                       "kubernetes.default.svc.cluster.local"),
            ip_addresses=("127.0.0.1", _KUBERNETES_SERVICE_IP),
            server=True,
        ).write(pki, "apiserver")
        self._controller_manager_serving = self.ca.issue(
            "kube-controller-manager", dns_names=("localhost",), ip_addresses=("127.0.0.1",), server=True
        ).write(pki, "controller-manager-serving")

        sa_private, sa_public = service_account_signing_key()
        (pki / "sa.key").write_bytes(sa_private)
        (pki / "sa.key").chmod(0o600)
        (pki / "sa.pub").write_bytes(sa_public)

        # system:masters bypasses RBAC: the tests and the operator under test act as admin.
        self._admin = self.ca.issue("esbench-admin", organizations=("system:masters",), client=True)
        self._admin_paths = self._admin.write(pki, "admin")
        # The controller-manager gets the identity kubeadm gives it, so RBAC applies to it
        # (and to each controller's own ServiceAccount) exactly as in a real cluster.
        self._controller_manager_client = self.ca.issue("system:kube-controller-manager", client=True)

    # -- processes ---------------------------------------------------------------------

    def _start_etcd(self, etcd: str) -> None:
        client_url = f"http://127.0.0.1:{free_port()}"
        peer_url = f"http://127.0.0.1:{free_port()}"
        self._etcd_url = client_url
        self._processes.append(_Process("etcd", [
            etcd,
            "--name=esbench",
            f"--data-dir={self.workdir / 'etcd'}",
            f"--listen-client-urls={client_url}",
            f"--advertise-client-urls={client_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=esbench={peer_url}",
            "--initial-cluster-state=new",
        ], self.workdir / "etcd.log"))

    def _start_apiserver(self, binary: str) -> None:
        port = free_port()
        self.server = f"https://127.0.0.1:{port}"
        pki = self.workdir / "pki"
        cert, key = self._apiserver_cert
        self._processes.append(_Process("kube-apiserver", [
            binary,
            f"--etcd-servers={self._etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--client-ca-file={self.ca_path}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            # The node's address is 127.0.0.1; there is no DNS for node names here.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            # Verify the (stand-in) kubelet's serving certificate like a hardened cluster would.
            f"--kubelet-certificate-authority={self.ca_path}",
            # The `kubernetes` Service's Endpoints may not hold a loopback address, and
            # nothing here runs in-cluster clients that would need it.
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            *self._audit_flags(),
        ], self.workdir / "kube-apiserver.log"))
        self.kubeconfig_path = self.workdir / "admin.kubeconfig"
        self.kubeconfig_path.write_text(yaml.safe_dump(
            _kubeconfig(self.server, self.ca.cert_pem, "esbench-admin", _certificate(self._admin))
        ))
        self._wait_ready("kube-apiserver", f"{self.server}/readyz", client_cert=self._admin_paths)

    def _audit_flags(self) -> list[str]:
        if not self.audit:
            return []
        policy = self.workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump({"apiVersion": "audit.k8s.io/v1", "kind": "Policy",
                                          "omitStages": ["RequestReceived"], "rules": [
                                              {"level": "None", "userGroups": ["system:serviceaccounts:kube-system"]},
                                              {"level": "Metadata", "userGroups": ["system:serviceaccounts"]},
                                              {"level": "None"}]}))
        # Written in the request's path (the default, blocking mode), so that a request answered
        # is in the log; never rotated, so that the log is one file.
        return [f"--audit-policy-file={policy}", f"--audit-log-path={self.workdir / 'audit.log'}",
                "--audit-log-maxsize=100000"]

    def audit_events(self) -> list[dict]:
        """The audit log so far (ControlPlane(audit=True)): one event per answered request, at Metadata level."""
        path = self.workdir / "audit.log"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def _start_controller_manager(self, binary: str) -> None:
        port = free_port()
        kubeconfig = self.workdir / "controller-manager.kubeconfig"
        kubeconfig.write_text(yaml.safe_dump(_kubeconfig(
            self.server, self.ca.cert_pem, "system:kube-controller-manager", _certificate(self._controller_manager_client)
        )))
        cert, key = self._controller_manager_serving
        self._processes.append(_Process("kube-controller-manager", [
            binary,
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={cert}",
            f"--tls-private-key-file={key}",
            f"--controllers={','.join(self.controllers)}",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={self.workdir / 'pki' / 'sa.key'}",
            f"--root-ca-file={self.ca_path}",
            # Single instance: skip the leader-election lease wait (about 15 s otherwise).
            "--leader-elect=false",
            "--profiling=false",
            *([f"--kube-api-qps={self.controller_api_qps}", f"--kube-api-burst={2 * self.controller_api_qps}"]
              if self.controller_api_qps else []),
        ], self.workdir / "kube-controller-manager.log"))
        self._wait_ready("kube-controller-manager", f"https://127.0.0.1:{port}/healthz")
        # healthz turns ok before controllers run; the default ServiceAccount appearing in
        # the default namespace proves the controllers are really working.
        self._wait_for_service_account("default")

    def _wait_ready(self, name: str, url: str, client_cert: tuple[Path, Path] | None = None) -> None:
        context = ssl.create_default_context(cafile=str(self.ca_path))
        if client_cert:
            context.load_cert_chain(*map(str, client_cert))

        def ready() -> bool:
            for process in self._processes:
                process.check_running()
            try:
                with urllib.request.urlopen(url, context=context, timeout=2) as response:
                    return response.status == 200
            except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
                return False

        try:
            wait_for(ready, self.startup_timeout, f"{name} at {url}", interval=0.1)
        except AssertionError as error:
            raise ControlPlaneError(f"{error}\n{name} log tail:\n{self.log_tail(name)}") from None

    # -- helpers for tests -------------------------------------------------------------

    def api_client(self) -> client.ApiClient:
        """A new admin ApiClient for this control plane (close it when done)."""
        return config.new_client_from_config(config_file=str(self.kubeconfig_path))

    def service_account_kubeconfig(self, namespace: str, name: str, expiration_seconds: int = 7200) -> Path:
        """A kubeconfig that authenticates as ServiceAccount namespace/name with a bound token
        from the TokenRequest API, as a pod's projected service account token does."""
        with self.api_client() as api_client:
            token = read_json(client.CoreV1Api(api_client).create_namespaced_service_account_token, name, namespace,
                              {"spec": {"expirationSeconds": expiration_seconds}})["status"]["token"]
        path = self.workdir / f"{namespace}-{name}.kubeconfig"
        path.write_text(yaml.safe_dump(_kubeconfig(
            self.server, self.ca.cert_pem, f"system:serviceaccount:{namespace}:{name}", {"token": token})))
        return path

    def pids(self) -> dict[str, int]:
        """Each running component's process ID, by name (etcd, kube-apiserver, kube-controller-manager)."""
        return {process.name: process.popen.pid for process in self._processes}

    def log_tail(self, component: str, lines: int = 40) -> str:
        """Last lines of etcd / kube-apiserver / kube-controller-manager output, for debugging."""
        return next(p for p in self._processes if p.name == component).log_tail(lines)

    def apply_crd(self, path: Path | str, timeout: float = 60.0) -> list[str]:
        """Create (or replace) every CRD in the YAML file and wait until each is Established.

        Create/replace rather than client-side apply: the ECK CRD is 1.5 MB, far above the
        256 KB limit of the last-applied-configuration annotation. Returns the CRD names.
        """
        # The C loader parses the 1.5 MB ECK CRD in 0.3 s; the pure-Python one takes ~4 s.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        documents = [d for d in yaml.load_all(Path(path).read_text(), Loader=loader) if d]
        crds = [d for d in documents if d.get("kind") == "CustomResourceDefinition"]
        with self.api_client() as api_client:
            api = client.ApiextensionsV1Api(api_client)
            for crd in crds:
                try:
                    self._create_or_replace_crd(api, crd)
                except ApiException as error:
                    if error.status not in (400, 422):
                        raise
                    # The API server's verdict (schema, CEL rules, ...) is what matters; the
                    # client's traceback around it is noise.
                    message = json.loads(error.body or "{}").get("message", error.body)
                    raise ControlPlaneError(f"kube-apiserver rejected the CRD in {path}:\n{message}") from None

            def established(name: str) -> bool:
                status = read_json(api.read_custom_resource_definition, name).get("status") or {}
                return any(c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or [])

            for crd in crds:
                name = crd["metadata"]["name"]
                # Each read returns the whole CRD (1.5 MB for ECK): poll gently.
                wait_for(lambda name=name: established(name), timeout, f"CRD {name} to be Established", interval=0.25)
        return [crd["metadata"]["name"] for crd in crds]

    @staticmethod
    def _create_or_replace_crd(api: client.ApiextensionsV1Api, crd: dict) -> None:
        name = crd["metadata"]["name"]
        try:
            # As JSON: no need to parse 1.5 MB back into models.
            read(api.create_custom_resource_definition, crd)
        except ApiException as error:
            if error.status != 409:
                raise
            existing = read_json(api.read_custom_resource_definition, name)
            crd = {**crd, "metadata": {**crd["metadata"], "resourceVersion": existing["metadata"]["resourceVersion"]}}
            read(api.replace_custom_resource_definition, name, crd)

    def create_namespace(self, prefix: str = "esbench-test-", timeout: float = 30.0,
                         labels: dict[str, str] | None = None) -> str:
        """Create a uniquely named namespace (with LABELS from the start); return once its `default`
        ServiceAccount exists (the ServiceAccount admission plugin rejects Pods until then)."""
        name = f"{prefix}{uuid.uuid4().hex[:8]}"
        with self.api_client() as api_client:
            client.CoreV1Api(api_client).create_namespace({"metadata": {"name": name, "labels": labels or {}}})
        self._wait_for_service_account(name, timeout)
        return name

    def delete_namespace(self, name: str) -> None:
        """Start deleting a namespace (the real namespace controller finishes it); no wait."""
        with self.api_client() as api_client:
            try:
                client.CoreV1Api(api_client).delete_namespace(name)
            except ApiException as error:
                if error.status != 404:
                    raise

    def _wait_for_service_account(self, namespace: str, timeout: float | None = None) -> None:
        with self.api_client() as api_client:
            core = client.CoreV1Api(api_client)

            def exists() -> bool:
                for process in self._processes:
                    process.check_running()
                try:
                    read(core.read_namespaced_service_account, "default", namespace)
                    return True
                except ApiException as error:
                    if error.status != 404:
                        raise
                    return False

            wait_for(exists, timeout or self.startup_timeout, f"ServiceAccount {namespace}/default", interval=0.1)
