"""Fixtures for the CLI tests: `esbench` run as its own process, as a person runs it (real
Elasticsearch and esrally, shared with the runner tests: tests/support/fixtures.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.result_files import write_result_files


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def esbench(tmp_path):
    """Runs `esbench ARGS...` in a separate process (cwd tmp_path), without a terminal."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> Run:
        environment = {**os.environ, **(env or {}), "COLUMNS": "200"}
        done = subprocess.run([sys.executable, "-m", "esbench.cli", *args], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=timeout)
        return Run(done.returncode, done.stdout, done.stderr)

    return run


@pytest.fixture(scope="session")
def result_files(tmp_path_factory) -> list[Path]:
    """Experiment result files made from the real race.json fixtures (tests/support/result_files.py)."""
    files = write_result_files(tmp_path_factory.mktemp("results"))
    assert len(files) >= 2, "tests/fixtures/race/ needs at least two race.json files with results"
    return files
