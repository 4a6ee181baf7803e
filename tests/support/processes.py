"""A process a test starts and owns: in a session of its own, its output appended to a log file,
and tied to the test run (setpriv --pdeathsig: if the test run itself is killed, it goes too)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path


def tied_to_test_run(argv: list[str]) -> list[str]:
    """argv run so that the kernel kills it when the test run dies (e.g. SIGKILLed by a CI timeout)."""
    return ["setpriv", "--pdeathsig", "KILL", "--", *argv] if shutil.which("setpriv") else argv


class OwnedProcess:
    def __init__(self, log_path: Path):
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    def launch(self, argv: list[str], env: dict[str, str]) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(tied_to_test_run(argv), env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as when a node dies or the OOM killer strikes."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM to its process group; SIGKILL after `timeout` seconds."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
