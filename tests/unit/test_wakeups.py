"""When the operator looks at an object that no watch event brings back: an Experiment rarely
while its own cluster's or Job's events will, at every resync when nothing would tell the
operator, never later than a deadline, and not at all once finished; a failed reconcile again
after a backoff."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from esbench.controller.wakeups import MAX_BACKOFF_DOUBLINGS, WATCHED_WAIT_RESYNCS, Agenda, next_look

RESYNC = 10.0
WATCHED = WATCHED_WAIT_RESYNCS * RESYNC


def experiment(phase: str | None, created_ago: float = 0, recorded: str | None = None, **spec) -> dict:
    created = (datetime.now(UTC) - timedelta(seconds=created_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    state = {"phase": phase} if phase else {}
    if recorded:
        state["conditions"] = [{"type": "Recorded", "status": recorded}]
    return {"metadata": {"name": "e", "namespace": "perf", "uid": "u", "creationTimestamp": created},
            "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}, **spec},
            "status": state}


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
    (lambda: experiment("Succeeded", lifecycle={"ttlSecondsAfterFinished": 60}), RESYNC),
    (lambda: experiment("Succeeded"), None),  # finished, nothing left to do
    (lambda: experiment("Failed"), None),
    (lambda: experiment("Succeeded", recorded="False"), RESYNC),  # the results store was down: tried again
    (lambda: experiment("Succeeded", recorded="True"), None),
    (lambda: experiment("Provisioning", index={"shards": 2}, workload={"track": "smoke", "trackParams": {"number_of_shards": 3}}),
     RESYNC),  # fails as InvalidSpec at its next reconcile
])
def test_an_experiment_is_looked_at_rarely_only_while_its_own_childrens_events_will_bring_it_back(body, seconds):
    assert next_look(body(), RESYNC) == seconds


def test_a_cluster_that_is_not_ready_is_looked_at_again_at_its_deadline():
    timeout = {"lifecycle": {"clusterReadyTimeoutSeconds": 1800}}
    near = next_look(experiment("Provisioning", created_ago=1790, **timeout), RESYNC)
    assert 8 <= near <= 10  # the creation timestamp has whole seconds
    assert next_look(experiment("Provisioning", created_ago=1801, **timeout), RESYNC) == 0


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_tracked_object_is_due_once_it_has_gone_unattended_for_its_interval():
    clock = Clock()
    agenda = Agenda(RESYNC, clock)
    agenda.track(("ns", "waits"), WATCHED)
    agenda.track(("ns", "every-pass"), 0)
    assert agenda.due() == [("ns", "every-pass")]
    clock.now += WATCHED - 1
    assert agenda.due() == [("ns", "every-pass")]
    clock.now += 1
    assert agenda.due() == [("ns", "every-pass"), ("ns", "waits")]
    assert agenda.due() == [("ns", "every-pass")]  # and not again for its interval
    agenda.look_soon(("ns", "waits"))
    assert agenda.due() == [("ns", "every-pass"), ("ns", "waits")]
    agenda.untrack(("ns", "every-pass"))
    agenda.look_soon(("ns", "every-pass"))  # untracked: nothing to come back to
    assert agenda.due() == []


def test_a_failed_reconcile_is_tried_again_after_a_doubling_backoff_tracked_or_not():
    clock = Clock()
    agenda = Agenda(RESYNC, clock)
    tracked, finished = ("ns", "tracked"), ("ns", "finished")
    agenda.track(tracked, 0)
    delays = []
    for attempt in range(MAX_BACKOFF_DOUBLINGS + 2):
        assert agenda.failed(tracked, "tracked", RuntimeError("refused")) is (attempt == 0)
        agenda.failed(finished, "finished", RuntimeError("refused"))
        waited = 0.0
        while not agenda.due():  # meanwhile not even at its own interval
            clock.now += 1
            waited += 1
        delays.append(waited)
    assert delays == [RESYNC * 2 ** min(n, MAX_BACKOFF_DOUBLINGS) for n in range(MAX_BACKOFF_DOUBLINGS + 2)]
    agenda.succeeded(tracked)
    agenda.forget(finished)
    assert agenda.due() == [tracked]
