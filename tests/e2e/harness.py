"""What the end-to-end tests share: where things are, how a cluster is driven (kubectl, Helm, images)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from tests.support.controlplane import k8s_bin_dir

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = Path(os.environ.get("ESBENCH_NODE_DIR", "/var/lib/esbench-node"))
OPERATOR_NAMESPACE = "esbench-system"
RELEASE = "esbench"
ESBENCH_IMAGE = "docker.io/local/esbench:0.1.0"
ES_VERSION = "8.7.1"  # the image scripts/images/elasticsearch.sh builds by default
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
        Elasticsearch image the ECK stand-in runs. kind: operator/Dockerfile, as users build it
        (real ECK pulls its own Elasticsearch images)."""
        if self.flavour == "node":
            archives = [script("images/esbench.sh"), script("images/elasticsearch.sh", ES_VERSION)]
            run(["bash", str(ROOT / "scripts/images/import.sh"), *archives])
        else:
            run(["docker", "build", "-f", str(ROOT / "operator/Dockerfile"), "-t", ESBENCH_IMAGE, str(ROOT)])
            run(["kind", "load", "docker-image", ESBENCH_IMAGE, "--name", os.environ.get("KIND_CLUSTER_NAME", "kind")])


