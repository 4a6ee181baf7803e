"""Fixtures giving tests a real Kubernetes control plane (a pytest plugin, see tests/conftest.py).

Session-scoped: one etcd + kube-apiserver + kube-controller-manager (about 5 s to start)
and one stand-in kubelet per test session. Function-scoped: a fresh namespace per test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.controlplane import ControlPlane, ControlPlaneError, eck_crd_path
from tests.support.standin_kubelet import StandinKubelet


def _crd_paths(repo_root: Path) -> list[Path]:
    eck = eck_crd_path()
    if not eck.is_file():
        pytest.fail(f"ECK CRD not found at {eck}. Run `make deps` (scripts/eck-crds.sh) first.", pytrace=False)
    ours = sorted(p for pattern in ("*.yaml", "*.yml") for p in (repo_root / "crds").glob(pattern))
    return [eck, *ours]


@pytest.fixture(scope="session")
def control_plane(repo_root):
    """A running ControlPlane with the ECK Elasticsearch CRD and every CRD in crds/ installed."""
    cp = ControlPlane(crd_paths=_crd_paths(repo_root))
    try:
        cp.start()  # cleans up after itself if it fails
    except ControlPlaneError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture(scope="session")
def standin_kubelet(control_plane):
    """The stand-in for the kubelet of node "esbench-standin-node" (see its module docstring)."""
    with StandinKubelet(control_plane) as kubelet:
        yield kubelet


@pytest.fixture
def namespace(control_plane):
    """A fresh namespace for one test, deleted afterwards (by the real namespace controller)."""
    name = control_plane.create_namespace()
    yield name
    control_plane.delete_namespace(name)
