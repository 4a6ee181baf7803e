"""The real esbench operator, run as its own process (`esbench operator`), as the image runs it."""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

from tests.support.controlplane import free_port
from tests.support.processes import OwnedProcess
from tests.support.waiting import wait_for


class OperatorProcess(OwnedProcess):
    def __init__(self, kubeconfig: Path, log_path: Path, *args: str, **env: str):
        """args: more `esbench operator` options (e.g. --namespace NS, as the chart's watchNamespaces)."""
        super().__init__(log_path)
        self.kubeconfig = kubeconfig
        self.args = args
        self.env = env
        self.liveness_port = 0
        self.metrics_port = 0

    def start(self, timeout: float = 60) -> OperatorProcess:
        self.liveness_port, self.metrics_port = free_port(), free_port()
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "ESBENCH_RESYNC_SECONDS": "1", **self.env}
        self.launch([sys.executable, "-m", "esbench.cli", "operator",
                     f"--liveness=http://127.0.0.1:{self.liveness_port}/healthz",
                     f"--metrics-port={self.metrics_port}", *self.args], env)

        def live() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"operator exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.liveness_port}/healthz", timeout=1)
                return True
            except OSError:
                return False

        wait_for(live, timeout, what="the operator to be live", diagnose=self.log_tail)
        return self

    def metrics(self) -> str:
        """What Prometheus would scrape from it."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as answer:
            return answer.read().decode()
