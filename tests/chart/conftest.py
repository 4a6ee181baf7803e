"""Fixtures for the Helm chart tests: helm and kubectl, a chart renderer, and a real API server.

The control plane and the per-test namespace come from tests/support/fixtures.py, shared
with the integration tests (one control plane per session).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from tests.support.controlplane import k8s_bin_dir
from tests.support.helm import Helm, helm_binary_path

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
}


def _tool(path: Path, script: str) -> Path:
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path.name} not found at {path}. Run `make deps` ({script}) first.", pytrace=False)
    return path


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    return _tool(helm_binary_path(), "scripts/helm.sh")


@pytest.fixture(scope="session")
def kubectl_binary() -> Path:
    return _tool(k8s_bin_dir() / "kubectl", "scripts/k8s-binaries.sh")


@pytest.fixture(scope="session")
def chart_dir(repo_root: Path) -> Path:
    return repo_root / "charts" / "esbench"


@pytest.fixture(scope="session")
def helm(helm_binary: Path, chart_dir: Path, tmp_path_factory) -> Helm:
    return Helm(helm_binary, chart_dir, tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="session")
def kubectl(kubectl_binary: Path, control_plane):
    """Runs kubectl against the control plane; returns the CompletedProcess (stderr carries warnings)."""

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(kubectl_binary), "--kubeconfig", str(control_plane.kubeconfig_path), *args],
            input=stdin, capture_output=True, text=True, timeout=120,
        )

    return run


@pytest.fixture
def restricted_namespace(control_plane):
    """A fresh namespace where Pod Security "restricted" is enforced (and warned about)."""
    name = control_plane.create_namespace("esbench-chart-")
    with control_plane.api_client() as api_client:
        client.CoreV1Api(api_client).patch_namespace(name, {"metadata": {"labels": RESTRICTED}})
    yield name
    control_plane.delete_namespace(name)
