"""The single readiness decision, from ECK's real status fields."""

import pytest

from esbench.controller.readiness import readiness, serves_tls


def es(generation=1, spec_version="8.15.3", node_sets=(3,), **status):
    base = {"phase": "Ready", "health": "green", "availableNodes": 3, "observedGeneration": 1, "version": "8.15.3"}
    base.update(status)
    spec = {"version": spec_version, "nodeSets": [{"name": f"set{i}", "count": c} for i, c in enumerate(node_sets)]}
    return {"metadata": {"generation": generation}, "spec": spec, "status": base}


def test_ready_when_eck_has_caught_up_and_all_nodes_serve():
    result = readiness(es())
    assert result.ready and result.version == "8.15.3"


def test_expects_the_nodes_of_every_node_set():
    result = readiness(es(node_sets=(1, 2), availableNodes=2))
    assert not result.ready and "2/3 nodes available" in result.message


@pytest.mark.parametrize("status, expected_message", [
    ({"phase": "ApplyingChanges"}, "phase is ApplyingChanges, not Ready"),
    ({"health": "yellow"}, "health is yellow, not green"),
    ({"availableNodes": 2}, "2/3 nodes available"),
    ({"observedGeneration": 0}, "ECK has not observed generation 1 yet"),
    ({"version": "8.14.0"}, "running version 8.14.0, not 8.15.3"),
])
def test_not_ready_while_any_signal_lags(status, expected_message):
    result = readiness(es(**status))
    assert not result.ready
    assert expected_message in result.message


def test_not_ready_without_any_status():
    result = readiness({"metadata": {"generation": 1}, "spec": {"version": "8.15.3", "nodeSets": [{"count": 1}]}})
    assert not result.ready
    assert "phase is unset" in result.message


@pytest.mark.parametrize("http, tls", [
    (None, True),
    ({"tls": {"selfSignedCertificate": {"disabled": False}}}, True),
    ({"tls": {"certificate": {"secretName": "mine"}}}, True),
    ({"tls": {"selfSignedCertificate": {"disabled": True}}}, False),
])
def test_https_unless_the_self_signed_certificate_is_off(http, tls):
    assert serves_tls({"spec": {"http": http} if http else {}}) is tls


def test_a_cluster_used_before_may_be_yellow():
    assert not readiness(es(health="yellow")).ready
    result = readiness(es(health="yellow"), accept_yellow=True)
    assert result.ready and "health yellow" in result.message
    assert not readiness(es(health="red"), accept_yellow=True).ready
