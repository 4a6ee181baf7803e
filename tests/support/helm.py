"""helm as `make deps` builds it (scripts/helm.sh), and the chart rendered or installed with it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from .controlplane import ControlPlane, cache_dir

HELM_VERSION = "v3.17.3"  # keep in step with scripts/helm.sh


def helm_binary_path() -> Path:
    return cache_dir() / "helm" / HELM_VERSION / "helm"


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


@contextmanager
def operator_access(helm: Helm, control_plane: ControlPlane, namespace: str, release: str = "esbench",
                    values: dict[str, Any] | None = None) -> Iterator[Path]:
    """What `helm install` of the chart gives the operator, but its Deployment (no image can run
    here): its ServiceAccount, RBAC and admission policy, removed on exit. Yields a kubeconfig
    for an operator run as a process to act as that ServiceAccount, with a token from the
    TokenRequest API as a pod's projected token is, not with the test harness's admin
    certificate (whose group skips RBAC)."""
    objects = [obj for obj in helm.template(values, release=release, namespace=namespace) if obj["kind"] != "Deployment"]
    with control_plane.api_client() as api_client:
        resources = DynamicClient(api_client).resources

        def resource(obj: dict):
            return resources.get(api_version=obj["apiVersion"], kind=obj["kind"])

        try:
            for obj in objects:
                resource(obj).create(body=obj, namespace=obj["metadata"].get("namespace"))
            (account,) = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "ServiceAccount"]
            yield control_plane.service_account_kubeconfig(namespace, account)
        finally:
            for obj in reversed(objects):
                try:
                    resource(obj).delete(name=obj["metadata"]["name"], namespace=obj["metadata"].get("namespace"))
                except NotFoundError:
                    pass
