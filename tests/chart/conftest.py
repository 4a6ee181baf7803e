"""Fixtures for the Helm chart tests: helm and kubectl, a chart renderer, and a real API server.

The control plane and the per-test namespace come from tests/support/fixtures.py, shared
with the integration tests (one control plane per session).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.support.controlplane import cache_dir, k8s_bin_dir

HELM_VERSION = "v3.17.3"  # keep in step with scripts/helm.sh

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
    return _tool(cache_dir() / "helm" / HELM_VERSION / "helm", "scripts/helm.sh")


@pytest.fixture(scope="session")
def kubectl_binary() -> Path:
    return _tool(k8s_bin_dir() / "kubectl", "scripts/k8s-binaries.sh")


@pytest.fixture(scope="session")
def chart_dir(repo_root: Path) -> Path:
    return repo_root / "charts" / "esbench"


@dataclass
class Helm:
    binary: Path
    chart: Path
    home: Path  # helm's config, cache and data directories: kept out of $HOME

    def run(self, *args: str, kubeconfig: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
        env = {**os.environ, **{f"HELM_{kind}_HOME": str(self.home / kind.lower()) for kind in ("CONFIG", "CACHE", "DATA")}}
        command = [str(self.binary), *args]
        if kubeconfig is not None:
            command += ["--kubeconfig", str(kubeconfig)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        if check and result.returncode != 0:
            raise AssertionError(f"`helm {' '.join(args)}` failed ({result.returncode}):\n{result.stderr}{result.stdout}")
        return result

    @staticmethod
    def value_args(values: dict[str, Any] | None) -> list[str]:
        return [f"--set-json={key}={json.dumps(value)}" for key, value in (values or {}).items()]

    def template(self, values: dict[str, Any] | None = None, *, release: str = "esbench",
                 namespace: str = "esbench-system") -> list[dict[str, Any]]:
        """The chart rendered with `helm template`, as a list of objects (no CRDs: see crds/)."""
        out = self.run("template", release, str(self.chart), "--namespace", namespace, *self.value_args(values)).stdout
        return [doc for doc in yaml.safe_load_all(out) if doc]


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
