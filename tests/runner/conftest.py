"""Fixtures for the runner tests: the real `esbench race` (real Elasticsearch and esrally: tests/support/fixtures.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from esbench.api.race_report import RaceReport, decode_report


@dataclass
class RaceRun:
    exit_code: int
    output: str
    report: RaceReport | None
    work_dir: Path


@pytest.fixture
def race(esrally, tmp_path):
    """Runs `esbench race` as the Job does: a separate process, the spec in ESBENCH_SPEC."""

    def run(spec: dict, target_url: str, *, ca_file: str | None = None, username: str | None = None,
            password: str | None = None, target_timeout: float = 30, extra_env: dict | None = None,
            snapshot_repository: Path | None = None, unassigned_timeout: float | None = None) -> RaceRun:
        work_dir = tmp_path / f"work-{uuid.uuid4().hex[:8]}"
        env = {**os.environ, **(extra_env or {}), "ESBENCH_SPEC": json.dumps(spec), "ESBENCH_ESRALLY": esrally}
        env.pop("ES_USERNAME", None)
        env.pop("ES_PASSWORD", None)
        if username:
            env["ES_USERNAME"] = username
        if password:
            env["ES_PASSWORD"] = password
        command = [sys.executable, "-m", "esbench.cli", "race", "--target-url", target_url,
                   "--race-id", f"test-{uuid.uuid4().hex[:12]}", "--work-dir", str(work_dir),
                   "--target-timeout", str(target_timeout)]
        if ca_file:
            command += ["--ca-file", ca_file]
        if snapshot_repository:
            command += ["--snapshot-repository", str(snapshot_repository)]
        if unassigned_timeout is not None:
            command += ["--unassigned-timeout", str(unassigned_timeout)]
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
        (tmp_path / f"{work_dir.name}.log").write_text(done.stdout)  # kept for post-mortems
        return RaceRun(done.returncode, done.stdout, decode_report(done.stdout), work_dir)

    return run
