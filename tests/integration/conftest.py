"""Fixtures of the operator tests: API clients, the ECK stand-in and the operator process."""

from __future__ import annotations

import pytest

from tests.support.experiments import Apis, successful_race_json
from tests.support.operator_process import OperatorProcess
from tests.support.standin_eck import StandinEck


@pytest.fixture
def apis(control_plane) -> Apis:
    return Apis(control_plane.api_client())


@pytest.fixture
def eck(control_plane):
    """The ECK stand-in; a test fails when the stand-in failed at something it served."""
    standin = StandinEck(control_plane.api_client())
    yield standin
    standin.stop()
    assert not standin.errors, "the ECK stand-in failed:\n" + "\n".join(standin.errors)


@pytest.fixture
def operator(operator_kubeconfig, tmp_path):
    """The real operator as its own process, as the chart's ServiceAccount; the Rally Job gets a
    5 s deadline grace (not 120 s).

    Its log goes to the teardown's output, which pytest shows only for a test that failed. A
    handler that raised fails the test: whatever the test saw, the operator did not handle it.
    """
    process = OperatorProcess(operator_kubeconfig, tmp_path / "operator.log",
                              ESBENCH_JOB_DEADLINE_GRACE_SECONDS="5").start()
    yield process
    process.stop()
    lines = process.log_path.read_text(errors="replace").splitlines()
    print("operator log (last lines):\n" + "\n".join(lines[-200:]))
    crashes = [line for line in lines if "failed with an exception" in line or "resync of" in line]
    assert not crashes, "the operator's handlers raised:\n" + "\n".join(crashes)


@pytest.fixture(scope="session")
def race_json() -> dict:
    return successful_race_json()
