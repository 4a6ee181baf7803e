"""Fixtures for the Helm chart tests: kubectl and a restricted namespace.

The control plane, the per-test namespace and helm with the chart come from
tests/support/fixtures.py, shared with the integration tests (one control plane per process).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kubernetes import client

from tests.support.controlplane import k8s_bin_dir
from tests.support.fixtures import installed_tool

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/warn-version": "latest",
}


@pytest.fixture(scope="session")
def kubectl_binary() -> Path:
    return installed_tool(k8s_bin_dir() / "kubectl", "scripts/k8s-binaries.sh")


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
