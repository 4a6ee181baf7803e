"""Fixtures shared by every test directory (a pytest plugin, registered once in tests/conftest.py).

A real Kubernetes control plane: one etcd + kube-apiserver + kube-controller-manager and one
stand-in kubelet per test process, and a fresh namespace per test; helm and the chart, and what
the chart grants the operator (its ServiceAccount's kubeconfig). Real Elasticsearch and real
esrally for the runner and CLI tests: one pool of nodes per test process, started on first use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.controlplane import ControlPlane, ControlPlaneError, eck_crd_path
from tests.support.elasticsearch import Clusters
from tests.support.helm import Helm, helm_binary_path, operator_access
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


@pytest.fixture(scope="module")
def operator_kubeconfig(control_plane, helm):
    """A kubeconfig for the operator under test: the chart's ServiceAccount, RBAC and admission
    policy, as `helm install` gives them, so that a request the chart does not grant fails.
    Per module: the chart tests that share the control plane need it without esbench's policy."""
    with operator_access(helm, control_plane, control_plane.create_namespace("esbench-system-")) as kubeconfig:
        yield kubeconfig


@pytest.fixture
def namespace(control_plane):
    """A fresh namespace for one test, deleted afterwards (by the real namespace controller)."""
    name = control_plane.create_namespace()
    yield name
    control_plane.delete_namespace(name)


@pytest.fixture(scope="session")
def esrally(repo_root) -> str:
    path = os.environ.get("ESBENCH_ESRALLY") or str(repo_root / ".venv-rally" / "bin" / "esrally")
    if not os.access(path, os.X_OK):
        pytest.fail(f"esrally not found at {path}: run scripts/rally-env.sh (or set ESBENCH_ESRALLY)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def clusters():
    """Real Elasticsearch nodes, one per version and security setting, each emptied for every test."""
    pool = Clusters()
    yield pool
    pool.stop_all()


def installed_tool(path: Path, script: str) -> Path:
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path.name} not found at {path}. Run `make deps` ({script}) first.", pytrace=False)
    return path


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    return installed_tool(helm_binary_path(), "scripts/helm.sh")


@pytest.fixture(scope="session")
def chart_dir(repo_root: Path) -> Path:
    return repo_root / "charts" / "esbench"


@pytest.fixture(scope="session")
def helm(helm_binary: Path, chart_dir: Path, tmp_path_factory) -> Helm:
    return Helm(helm_binary, chart_dir, tmp_path_factory.mktemp("helm-home"))


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def esbench(tmp_path):
    """Runs `esbench ARGS...` in a separate process (cwd tmp_path), without a terminal, with a
    history of its own (tmp_path/history.sqlite)."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Run:
        environment = {**os.environ, "ESBENCH_HISTORY": str(tmp_path / "history.sqlite"), **(env or {}),
                       "COLUMNS": "200"}
        done = subprocess.run([sys.executable, "-m", "esbench.cli", *args], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=timeout)
        return Run(done.returncode, done.stdout, done.stderr)

    return run
