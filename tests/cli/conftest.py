"""Fixtures for the CLI tests (`esbench` run as its own process, real Elasticsearch and esrally:
tests/support/fixtures.py, shared with the runner and integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.result_files import write_result_files


@pytest.fixture(scope="session")
def result_files(tmp_path_factory) -> list[Path]:
    """Experiment result files made from the real race.json fixtures (tests/support/result_files.py)."""
    files = write_result_files(tmp_path_factory.mktemp("results"))
    assert len(files) >= 2, "tests/fixtures/race/ needs at least two race.json files with results"
    return files
