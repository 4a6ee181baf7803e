"""End-to-end fixtures: a real Kubernetes with real pods, the esbench chart, ECK's stand-in.

How the cluster is obtained is the only thing that varies (ESBENCH_E2E_CLUSTER, default node):
- `node`: scripts/node/up.sh starts a whole single node as host processes (needs root;
  works offline), images are built by scripts/images/ and imported into its containerd;
  scripts/node/down.sh removes it all afterwards (ESBENCH_E2E_KEEP_NODE=1 keeps it up, and a
  node already up is reused and kept).
- `kind`: the cluster of the current KUBECONFIG, made by kind (`make e2e-kind`, on machines with
  a container registry, and the real ECK operator installed); the image is built from
  operator/Dockerfile and loaded with `kind load docker-image` (KIND_CLUSTER_NAME, default `kind`).
Everything else (tests, stand-in, chart install) is shared.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.e2e.eck_standin import EckStandin
from tests.e2e.harness import (ESBENCH_IMAGE, NODE_DIR, OPERATOR_NAMESPACE, RELEASE, RESTRICTED, ROOT,
                               Cluster, run, script)
from tests.support.controlplane import eck_crd_path


@pytest.fixture(scope="session")
def cluster():
    flavour = os.environ.get("ESBENCH_E2E_CLUSTER", "node")
    started = False
    if flavour == "node":
        if os.geteuid() != 0:
            pytest.fail("the offline node needs root (containers, iptables, mounts)", pytrace=False)
        kubeconfig = NODE_DIR / "admin.kubeconfig"
        if not kubeconfig.exists():
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
        if started and not os.environ.get("ESBENCH_E2E_KEEP_NODE"):
            run(["bash", str(ROOT / "scripts/node/down.sh")])


@pytest.fixture(scope="session")
def images(cluster):
    """The images the tests run, built and loaded into the cluster."""
    cluster.load_images()


@pytest.fixture(scope="session")
def eck(cluster):
    """On the offline node: the real ECK CRD and the stand-in for ECK's controller running real
    Elasticsearch pods. On kind: the real ECK operator, installed beforehand with its Helm chart
    (see .github/workflows/e2e.yaml), so nothing is stood in for."""
    if cluster.flavour == "kind":
        client.ApiextensionsV1Api(cluster.api).read_custom_resource_definition(
            "elasticsearches.elasticsearch.k8s.elastic.co")  # fails clearly when ECK is missing
        yield None
        return
    crd = eck_crd_path()
    if not crd.is_file():
        script("eck-crds.sh")
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crd))
    extensions = client.ApiextensionsV1Api(cluster.api)
    deadline = time.monotonic() + 60
    while not any(c.type == "Established" and c.status == "True" for c in
                  extensions.read_custom_resource_definition("elasticsearches.elasticsearch.k8s.elastic.co").status.conditions
                  or []):
        assert time.monotonic() < deadline, "the ECK CRD was not Established within 60s"
        time.sleep(0.5)
    # Its own API client: it runs in a thread of its own.
    standin = EckStandin(config.new_client_from_config(str(cluster.kubeconfig))).start()
    yield standin
    standin.stop()


@pytest.fixture(scope="session")
def operator(cluster, images, eck):
    """The esbench chart installed with Helm, its operator pod running, in a restricted namespace."""
    namespace = OPERATOR_NAMESPACE
    core = client.CoreV1Api(cluster.api)
    try:
        core.create_namespace({"metadata": {"name": namespace, "labels": RESTRICTED}})
    except client.ApiException as error:
        if error.status != 409:
            raise
    repository, tag = ESBENCH_IMAGE.rsplit(":", 1)
    started = time.monotonic()
    cluster.helm("upgrade", "--install", RELEASE, str(ROOT / "charts/esbench"), "--namespace", namespace,
                 "--set", f"image.repository={repository}", "--set", f"image.tag={tag}",
                 "--set", "image.pullPolicy=Never", "--set", "operator.resyncSeconds=2",
                 "--wait", "--timeout", "180s")
    install_seconds = time.monotonic() - started
    yield {"namespace": namespace, "release": RELEASE, "install_seconds": install_seconds}
    cluster.helm("uninstall", RELEASE, "--namespace", namespace, "--wait", "--timeout", "120s")
    core.delete_namespace(namespace)


@pytest.fixture
def restricted_namespace(cluster):
    """A fresh namespace that enforces Pod Security "restricted" (every pod must comply to exist)."""
    name = f"e2e-{uuid.uuid4().hex[:6]}"
    client.CoreV1Api(cluster.api).create_namespace({"metadata": {"name": name, "labels": RESTRICTED}})
    yield name
    core = client.CoreV1Api(cluster.api)
    core.delete_namespace(name)
    # Wait until it is gone, so that the next test starts from a clean cluster.
    deadline = time.monotonic() + 180
    while any(ns.metadata.name == name for ns in core.list_namespace().items):
        assert time.monotonic() < deadline, f"namespace {name} still there 180s after its deletion"
        time.sleep(1)
