"""The single readiness decision, from ECK's real status fields."""

import pytest

from esbench.eck import readiness


def es(generation=1, spec_version="8.15.3", **status):
    base = {"phase": "Ready", "health": "green", "availableNodes": 3, "observedGeneration": 1, "version": "8.15.3"}
    base.update(status)
    return {"metadata": {"generation": generation}, "spec": {"version": spec_version}, "status": base}


def test_ready_when_eck_has_caught_up_and_all_nodes_serve():
    result = readiness(es(), expected_nodes=3)
    assert result.ready and result.version == "8.15.3"


@pytest.mark.parametrize("status, expected_message", [
    ({"phase": "ApplyingChanges"}, "phase is ApplyingChanges, not Ready"),
    ({"health": "yellow"}, "health is yellow, not green"),
    ({"availableNodes": 2}, "2/3 nodes available"),
    ({"observedGeneration": 0}, "ECK has not observed generation 1 yet"),
    ({"version": "8.14.0"}, "running version 8.14.0, not 8.15.3"),
])
def test_not_ready_while_any_signal_lags(status, expected_message):
    result = readiness(es(**status), expected_nodes=3)
    assert not result.ready
    assert expected_message in result.message


def test_not_ready_without_any_status():
    result = readiness({"metadata": {"generation": 1}, "spec": {"version": "8.15.3"}}, expected_nodes=1)
    assert not result.ready
    assert "phase is unset" in result.message
