"""What the end-to-end tests share: where things are, how a cluster is driven (kubectl, Helm, images),
and the environment itself (the cluster, the real ECK operator, the installed chart) as plain
context managers, so that a benchmark script sets up exactly what the e2e fixtures set up.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from tests.support.controlplane import k8s_bin_dir
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = Path(os.environ.get("ESBENCH_NODE_DIR", "/var/lib/esbench-node"))
OPERATOR_NAMESPACE = "esbench-system"
RELEASE = "esbench"
ESBENCH_IMAGE = "docker.io/local/esbench:0.1.0"
ES_VERSION = "8.7.1"  # the quickstart's; the image scripts/images/elasticsearch.sh builds by default
# Every version the offline images serve under ECK: 7.x (no file-based settings) and 8.19 (its own plugin API).
ES_VERSIONS = (ES_VERSION, "7.17.29", "8.19.21")


def es_image(version: str = ES_VERSION) -> str:
    """The offline image of scripts/images/elasticsearch.sh (it says what it adds for ECK)."""
    return f"docker.io/local/elasticsearch:{version}"


RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted",
              "pod-security.kubernetes.io/enforce-version": "latest"}


def run(argv: list[str], **kwargs) -> str:
    result = subprocess.run(argv, check=False, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def script(name: str, *args: str) -> str:
    """Runs a project script; its last output line is its result (a path)."""
    return run(["bash", str(ROOT / "scripts" / name), *args]).strip().splitlines()[-1]


@dataclass
class Cluster:
    flavour: str
    kubeconfig: Path
    api: client.ApiClient

    def kubectl(self, *args: str) -> str:
        return run([str(k8s_bin_dir() / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args])

    def helm(self, *args: str) -> str:
        return run([script("helm.sh"), f"--kubeconfig={self.kubeconfig}", *args])

    def load_images(self) -> None:
        """The esbench image in the cluster. Offline: built without a registry, plus the
        Elasticsearch image that clusters name there. kind: operator/Dockerfile, as users build it
        (ECK pulls the official Elasticsearch images)."""
        if self.flavour == "node":
            archives = [script("images/esbench.sh"), *(script("images/elasticsearch.sh", v) for v in ES_VERSIONS)]
            run(["bash", str(ROOT / "scripts/images/import.sh"), *archives])
        else:
            run(["docker", "build", "-f", str(ROOT / "operator/Dockerfile"), "-t", ESBENCH_IMAGE, str(ROOT)])
            run(["kind", "load", "docker-image", ESBENCH_IMAGE, "--name", os.environ.get("KIND_CLUSTER_NAME", "kind")])


@contextmanager
def obtain_cluster(flavour: str | None = None, keep: bool | None = None) -> Iterator[Cluster]:
    """The cluster of ESBENCH_E2E_CLUSTER (default `node`); see tests/e2e/conftest.py.

    `node`: a node already up (its API server answers) is reused and kept; otherwise what a dead
    one left is removed, scripts/node/up.sh starts one and
    scripts/node/down.sh removes it afterwards, unless `keep` (default: ESBENCH_E2E_KEEP_NODE).
    PermissionError when not root (the node needs containers, iptables, mounts).
    """
    flavour = flavour or os.environ.get("ESBENCH_E2E_CLUSTER", "node")
    keep = bool(os.environ.get("ESBENCH_E2E_KEEP_NODE")) if keep is None else keep
    started = False
    if flavour == "node":
        if os.geteuid() != 0:
            raise PermissionError("the offline node needs root (containers, iptables, mounts)")
        kubeconfig = NODE_DIR / "admin.kubeconfig"
        if not _answers(kubeconfig):
            # What a node killed without scripts/node/down.sh left (its files, mounts, iptables
            # chains) would stop a new one from starting.
            run(["bash", str(ROOT / "scripts/node/down.sh")])
            started = True
            try:
                kubeconfig = Path(script("node/up.sh"))
            except RuntimeError:
                run(["bash", str(ROOT / "scripts/node/down.sh")])
                raise
    elif flavour == "kind":
        kubeconfig = Path(os.environ.get("KUBECONFIG", Path.home() / ".kube/config"))
    else:
        raise ValueError(f"ESBENCH_E2E_CLUSTER={flavour!r}: use node or kind")
    try:
        yield Cluster(flavour, kubeconfig, config.new_client_from_config(str(kubeconfig)))
    finally:
        if started and not keep:
            run(["bash", str(ROOT / "scripts/node/down.sh")])


def _answers(kubeconfig: Path) -> bool:
    """Whether a node's API server answers with these credentials (the node is up)."""
    if not kubeconfig.exists():
        return False
    try:
        client.VersionApi(config.new_client_from_config(str(kubeconfig))).get_code(_request_timeout=5)
        return True
    except Exception:  # refused, timed out, or credentials of a node long gone: not up
        return False


def _wait_established(cluster: Cluster, crd: str) -> None:
    extensions = client.ApiextensionsV1Api(cluster.api)
    wait_for(lambda: any(c.type == "Established" and c.status == "True" for c in
                         extensions.read_custom_resource_definition(crd).status.conditions or []), 60,
             what=f"the CRD {crd} to be Established", interval=0.5)


def install_eck(cluster: Cluster) -> None:
    """The real ECK operator, managing every namespace, installed by scripts/eck-install.sh with
    ECK's own Helm chart (webhook on): on the offline node the operator built from its Go module,
    on kind Elastic's released image. It stays installed (the script is idempotent); clusters on
    the offline node must name the offline Elasticsearch image (es_image)."""
    run(["bash", str(ROOT / "scripts/eck-install.sh"), *(["--registry"] if cluster.flavour == "kind" else [])],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)})


@contextmanager
def installed_operator(cluster: Cluster, resync_seconds: int = 2, results_store: bool = False
                       ) -> Iterator[dict[str, Any]]:
    """The esbench chart installed with Helm, its operator pod running, in a restricted namespace;
    uninstalled afterwards. The images must be in the cluster (Cluster.load_images), and ECK with
    RESULTS_STORE: the chart then creates its results store (resultsStore.create), small.

    Helm installs a chart's crds/ only on the first install, so on a node kept from an earlier
    run the CRDs would be stale: crds/ (the source of truth) is applied first, every time.
    """
    namespace = OPERATOR_NAMESPACE
    core = client.CoreV1Api(cluster.api)
    try:
        core.create_namespace({"metadata": {"name": namespace, "labels": RESTRICTED}})
    except client.ApiException as error:
        if error.status != 409:
            raise
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    for crd in sorted((ROOT / "crds").glob("*.yaml")):
        _wait_established(cluster, yaml.safe_load(crd.read_text())["metadata"]["name"])
    repository, tag = ESBENCH_IMAGE.rsplit(":", 1)
    values = {"image.repository": repository, "image.tag": tag, "image.pullPolicy": "Never",
              "operator.resyncSeconds": resync_seconds}
    if results_store:
        values.update({"resultsStore.create.enabled": "true", "resultsStore.create.version": ES_VERSION,
                       "resultsStore.create.resources.requests.cpu": "100m",
                       "resultsStore.create.resources.requests.memory": "1Gi",
                       "resultsStore.create.resources.limits.memory": "1Gi",
                       # Bounds what its start takes from the suites that race beside the e2e run.
                       "resultsStore.create.resources.limits.cpu": "500m",
                       "resultsStore.create.storage.size": "1Gi"})
        if cluster.flavour == "node":
            values["resultsStore.create.image"] = es_image()
    started = time.monotonic()
    cluster.helm("upgrade", "--install", RELEASE, str(ROOT / "charts/esbench"), "--namespace", namespace,
                 *(arg for key, value in values.items() for arg in ("--set", f"{key}={value}")),
                 "--wait", "--timeout", "180s")
    install_seconds = time.monotonic() - started
    try:
        yield {"namespace": namespace, "release": RELEASE, "install_seconds": install_seconds,
               "results_store": f"{RELEASE}-results" if results_store else None}
    finally:
        cluster.helm("uninstall", RELEASE, "--namespace", namespace, "--wait", "--timeout", "120s")
        core.delete_namespace(namespace)
        _wait_gone(core, namespace)  # the next install (this run's or the next run's) recreates it


@contextmanager
def restricted_namespace(cluster: Cluster, prefix: str = "e2e-") -> Iterator[str]:
    """A fresh namespace that enforces Pod Security "restricted" (every pod must comply to exist);
    on exit it is deleted and waited for, so that what comes next starts from a clean cluster."""
    name = f"{prefix}{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(cluster.api)
    core.create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    try:
        yield name
    finally:
        core.delete_namespace(name)
        _wait_gone(core, name)


def _wait_gone(core: client.CoreV1Api, namespace: str) -> None:
    wait_for(lambda: all(ns.metadata.name != namespace for ns in core.list_namespace().items), 180,
             what=f"namespace {namespace} to go after its deletion", interval=1)
