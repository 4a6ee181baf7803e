"""The real ECK operator (built from its Go module by scripts/eck-operator.sh), run out of
cluster against the test API server, as its own process.

Everything ECK does through the API happens for real: it validates the `Elasticsearch`
resource, writes its status and conditions, and creates the Services, Secrets, ConfigMaps and
StatefulSets it would create on any cluster. Only pods never start: the bare test control
plane has no scheduler and no kubelet. It watches only the namespace it is given, so the
stand-in can serve every other namespace of the same control plane.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from tests.support.controlplane import ControlPlane, cache_dir, eck_crd_path
from tests.support.processes import OwnedProcess

ECK_VERSION = eck_crd_path().parent.name


def eck_operator_path() -> Path:
    return cache_dir() / "eck" / ECK_VERSION / "eck-operator"


class RealEck(OwnedProcess):
    def __init__(self, control_plane: ControlPlane, namespace: str, workdir: Path):
        super().__init__(workdir / "eck-operator.log")
        self.control_plane = control_plane
        self.namespace = namespace
        self.workdir = workdir

    def start(self) -> RealEck:
        binary = eck_operator_path()
        if not binary.is_file():
            raise FileNotFoundError(f"{binary} not found: run `make deps` (scripts/eck-operator.sh)")
        self._install_other_crds(binary.parent / "all-crds.yaml")
        operator_namespace = self.control_plane.create_namespace("elastic-system-")
        self.launch([str(binary), "manager", f"--namespaces={self.namespace}",
                     f"--operator-namespace={operator_namespace}", "--enable-webhook=false",
                     "--enable-leader-election=false", "--disable-telemetry", "--metrics-port=0"],
                    {**os.environ, "KUBECONFIG": str(self.control_plane.kubeconfig_path)})
        return self

    def _install_other_crds(self, all_crds: Path) -> None:
        """ECK watches all of its kinds; the session's Elasticsearch CRD (the full one, with
        descriptions) stays as it is."""
        documents = [d for d in yaml.load_all(all_crds.read_text(), Loader=yaml.CSafeLoader)
                     if d and d["metadata"]["name"] != "elasticsearches.elasticsearch.k8s.elastic.co"]
        others = self.workdir / "eck-other-crds.yaml"
        others.write_text(yaml.safe_dump_all(documents))
        self.control_plane.apply_crd(others)

    def check_running(self) -> None:
        if self.process and self.process.poll() is not None:
            raise RuntimeError(f"the ECK operator exited with {self.process.returncode}:\n{self.log_tail()}")
