"""End-to-end fixtures: a real Kubernetes with real pods, the real ECK operator, the esbench chart.

How the cluster is obtained is the only thing that varies (ESBENCH_E2E_CLUSTER, default node):
- `node`: scripts/node/up.sh starts a whole single node as host processes (needs root;
  works offline), images are built by scripts/images/ and imported into its containerd;
  scripts/node/down.sh removes it all afterwards (ESBENCH_E2E_KEEP_NODE=1 keeps it up, and a
  node already up is reused and kept).
- `kind`: the cluster of the current KUBECONFIG, made by kind (`make e2e-kind`, on machines with
  a container registry, and the real ECK operator installed); the image is built from
  operator/Dockerfile and loaded with `kind load docker-image` (KIND_CLUSTER_NAME, default `kind`).
Everything else (tests, ECK's chart install, esbench's chart install) is shared. The fixtures are thin wrappers of
tests/e2e/harness.py, which scripts (bench/sweep_reuse.py) use to set up the same environment.
"""

from __future__ import annotations

from contextlib import ExitStack

import pytest

from tests.e2e import harness


@pytest.fixture(scope="session")
def cluster():
    with ExitStack() as stack:
        try:
            obtained = stack.enter_context(harness.obtain_cluster())
        except PermissionError as error:
            pytest.fail(str(error), pytrace=False)
        yield obtained


@pytest.fixture(scope="session")
def images(cluster):
    """The images the tests run, built and loaded into the cluster."""
    cluster.load_images()


@pytest.fixture(scope="session")
def eck(cluster):
    """The real ECK operator, managing every namespace (see harness.install_eck)."""
    harness.install_eck(cluster)


@pytest.fixture(scope="session")
def operator(cluster, images, eck):
    """The esbench chart installed with Helm, its operator pod running, in a restricted namespace,
    with the results store the chart creates: every Experiment that succeeds here is recorded."""
    with harness.installed_operator(cluster, resync_seconds=2, results_store=True) as installed:
        yield installed


@pytest.fixture
def restricted_namespace(cluster):
    """A fresh namespace that enforces Pod Security "restricted" (every pod must comply to exist)."""
    with harness.restricted_namespace(cluster) as name:
        yield name
