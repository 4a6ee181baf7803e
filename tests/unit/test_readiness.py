"""The single readiness decision, from ECK's real status fields."""

import pytest

from esbench.planning.readiness import invalid, readiness, serves_tls


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


def condition(type_: str, status: str, message: str = "") -> dict:
    return {"type": type_, "status": status, "message": message, "lastTransitionTime": "2026-11-23T16:50:00Z"}


# The status real ECK v3.5.0 wrote one second after an `Elasticsearch` 8.7.1 was created, before
# any pod existed (recorded with ECK built from its Go module, out of cluster, on the test API server).
ECK_BEFORE_ANY_POD = {
    "phase": "ApplyingChanges", "health": "unknown", "observedGeneration": 2, "version": "8.7.1",
    "conditions": [
        condition("ReconciliationComplete", "False", "Elasticsearch cluster UUID is not reconciled"),
        condition("RunningDesiredVersion", "True", "All nodes are running version 8.7.1"),
        condition("ElasticsearchIsReachable", "False", "Service probe/probe-es-internal-http has no endpoint"),
    ],
}


def test_real_eck_before_any_pod_is_not_ready_and_says_why():
    result = readiness({"metadata": {"generation": 2}, "spec": {"version": "8.7.1", "nodeSets": [{"count": 1}]},
                        "status": ECK_BEFORE_ANY_POD})
    assert not result.ready
    assert "ReconciliationComplete is False (Elasticsearch cluster UUID is not reconciled)" in result.message
    assert "ElasticsearchIsReachable is False" in result.message
    assert "RunningDesiredVersion" not in result.message


@pytest.mark.parametrize("unmet", ["ReconciliationComplete", "RunningDesiredVersion", "ElasticsearchIsReachable"])
def test_phase_ready_is_not_enough_while_an_eck_condition_is_unmet(unmet):
    conditions = [condition(t, "False" if t == unmet else "True") for t in
                  ("ReconciliationComplete", "RunningDesiredVersion", "ElasticsearchIsReachable")]
    result = readiness(es(conditions=conditions))
    assert not result.ready and f"{unmet} is False" in result.message
    conditions = [condition(t, "True") for t in ("ReconciliationComplete", "RunningDesiredVersion",
                                                 "ElasticsearchIsReachable", "ResourcesAwareManagement")]
    assert readiness(es(conditions=conditions)).ready


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


def test_invalid_only_when_eck_refuses_the_current_spec():
    assert invalid(es(phase="Invalid", health="unknown"))
    assert not invalid(es(generation=2, phase="Invalid")), "a verdict on an older spec"
    assert not invalid(es(phase="ApplyingChanges"))
