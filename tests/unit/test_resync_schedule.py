"""How often the resync looks at an Experiment that no watch event brings back: rarely while its
own cluster's or Job's events will, at every resync when nothing would tell the operator, and never
later than a deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from esbench.controller.lifecycle import WATCHED_WAIT_RESYNCS, unattended_seconds

RESYNC = 10.0
WATCHED = WATCHED_WAIT_RESYNCS * RESYNC


def experiment(phase: str | None, created_ago: float = 0, **spec) -> dict:
    created = (datetime.now(UTC) - timedelta(seconds=created_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": "e", "namespace": "perf", "uid": "u", "creationTimestamp": created},
            "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}, **spec},
            "status": {"phase": phase} if phase else {}}


def referencing(phase: str) -> dict:
    body = experiment(phase)
    del body["spec"]["elasticsearch"]
    body["spec"]["target"] = {"elasticsearchRef": {"name": "shared"}}
    return body


# Built when the test runs: the creation timestamp is now then, not at collection.
@pytest.mark.parametrize("body, seconds", [
    (lambda: experiment("Provisioning"), WATCHED),  # its cluster's events bring it back
    (lambda: experiment("Benchmarking"), WATCHED),  # its Job's events do; the race's deadline is the Job's
    (lambda: referencing("Benchmarking"), WATCHED),
    (lambda: referencing("Provisioning"), RESYNC),  # a cluster it does not own: not watched
    (lambda: experiment(None), RESYNC),  # just created, or its reconcile is still to come
    (lambda: experiment("Pending"), RESYNC),  # ECK not installed, or a namesake's cluster still going
    (lambda: experiment("Succeeded", rally={"ttlSecondsAfterFinished": 60}), RESYNC),
    (lambda: experiment("Provisioning", index={"shards": 2}, workload={"track": "smoke", "trackParams": {"number_of_shards": 3}}),
     RESYNC),  # fails as InvalidSpec at its next reconcile
])
def test_an_experiment_is_looked_at_rarely_only_while_its_own_childrens_events_will_bring_it_back(body, seconds):
    assert unattended_seconds(body(), RESYNC) == seconds


def test_a_cluster_that_is_not_ready_is_looked_at_again_at_its_deadline():
    timeout = {"rally": {"clusterReadyTimeoutSeconds": 1800}}
    near = unattended_seconds(experiment("Provisioning", created_ago=1790, **timeout), RESYNC)
    assert 8 <= near <= 10  # the creation timestamp has whole seconds
    assert unattended_seconds(experiment("Provisioning", created_ago=1801, **timeout), RESYNC) == 0
