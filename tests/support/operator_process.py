"""The real esbench operator, run as its own process (`esbench operator`), as the image runs it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.support.controlplane import free_port
from tests.support.waiting import wait_for


class OperatorProcess:
    def __init__(self, kubeconfig: Path, log_path: Path, **env: str):
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.env = env
        self.process: subprocess.Popen | None = None
        self.liveness_port = 0

    def start(self, timeout: float = 60) -> OperatorProcess:
        self.liveness_port = free_port()
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "ESBENCH_RESYNC_SECONDS": "1", **self.env}
        log = self.log_path.open("ab")
        # --pdeathsig: if the test run itself is killed, the operator goes with it.
        prefix = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-m", "esbench.cli", "operator",
             f"--liveness=http://127.0.0.1:{self.liveness_port}/healthz"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

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

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as when a node dies or the OOM killer strikes."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
