"""Failing workloads end with the right failure kind, message and exit status."""

from __future__ import annotations

import pytest

from esbench.api.reasons import Reason
from esbench.localnode.localcluster import free_port
from esbench.runner.esrallyprocess import rally_processes
from esbench.runner.race import EXIT_CODES
from tests.support.elasticsearch import LATEST

# Larger than index.max_result_window (10000): Elasticsearch rejects the search with a 400.
TOO_MANY_HITS = {"doc_count": 200, "fetch_size": 20000}


def spec(track: str = "smoke", **workload) -> dict:
    return {"elasticsearch": {"version": LATEST}, "workload": {"track": track, "testMode": True, **workload}}


def assert_failed(run, kind: Reason, *message_parts: str) -> None:
    assert run.report is not None, run.output
    assert not run.report.succeeded
    assert run.report.failure.kind == kind, run.report.failure
    assert run.exit_code == EXIT_CODES[kind]
    for part in message_parts:
        assert part in run.report.failure.message


def test_an_unknown_track_parameter_is_a_track_error(clusters, race):
    run = race(spec(trackParams={"doc_count": 100, "no_such_param": 1}), clusters.get(LATEST).url)
    assert_failed(run, Reason.TRACK_ERROR, "Unused track parameters", "no_such_param")


def test_a_rejected_query_aborts_the_race_by_default(clusters, race):
    run = race(spec("codec-search", trackParams=TOO_MANY_HITS), clusters.get(LATEST).url)
    assert_failed(run, Reason.RACE_FAILED, "fetch-500-newest", "Result window is too large")


def test_a_rejected_query_with_on_error_continue_finishes_with_race_errors(clusters, race):
    run = race(spec("codec-search", trackParams=TOO_MANY_HITS, onError="continue"), clusters.get(LATEST).url)
    assert_failed(run, Reason.RACE_ERRORS, "fetch-500-newest")
    tasks = {t.task: t for t in run.report.results.tasks}
    assert tasks["fetch-500-newest"].error_rate == 1.0
    assert tasks["index-append"].error_rate == 0.0
    assert run.report.race_json["results"]  # the race did finish: its results travel along


def test_a_shard_elasticsearch_will_not_allocate_stops_the_race_with_its_reasons(clusters, race):
    # The track waits for green, retrying until the race's timeout: the runner asks Elasticsearch why
    # the primary stays unassigned and stops the race once the refusal has lasted.
    filtered = {**spec(), "index": {"settings": {"index.routing.allocation.require._name": "no-such-node"}}}
    run = race(filtered, clusters.get(LATEST).url, unassigned_timeout=5)
    assert_failed(run, Reason.SHARDS_UNASSIGNED, "Elasticsearch refused for 5s to allocate shard [smoke][0] (primary)",
                  'filter: node does not match index setting [index.routing.allocation.require] filters '
                  '[_name:"no-such-node"]', "esrally was stopped")
    assert rally_processes(run.work_dir / "rally") == []


def test_an_unreachable_target_is_reported_without_starting_rally(race):
    run = race(spec(), f"http://127.0.0.1:{free_port()}", target_timeout=2)
    assert_failed(run, Reason.TARGET_UNREACHABLE, "did not answer")
    assert "esrally race" not in run.output


def test_an_unknown_bundled_track_is_an_invalid_spec(race):
    run = race(spec("no-such-track"), "http://127.0.0.1:1")
    assert_failed(run, Reason.INVALID_SPEC, "workload.track must name a bundled track", "smoke")


def test_a_malformed_spec_is_an_invalid_spec(race):
    run = race({"workload": {"track": "smoke"}}, "http://127.0.0.1:1")
    assert_failed(run, Reason.INVALID_SPEC, "elasticsearch")


# Its 75 s budget is wall time: a race that first waits for another machine-wide Rally (the runner
# waits; Rally refuses to race beside one, and the e2e suite's Rally pods are processes of this
# machine) would spend it waiting.
@pytest.mark.measures
def test_a_race_over_its_time_budget_is_stopped_with_all_its_rally_processes(clusters, race):
    # 75 s for everything, minus the runner's reporting margin (a quarter): a query task of 120 s cannot fit.
    slow = spec("range-queries", testMode=False, trackParams={"doc_count": 1000},
                load={"targetThroughput": 5, "timePeriodSeconds": 120})
    slow["lifecycle"] = {"raceTimeoutSeconds": 75}
    run = race(slow, clusters.get(LATEST).url)
    assert_failed(run, Reason.RACE_TIMEOUT, "did not finish within lifecycle.raceTimeoutSeconds (75s): esrally was stopped after 56s")
    assert rally_processes(run.work_dir / "rally") == []
    # What survives, as the README says: the node figures sampled until the stop, and the race.json
    # Rally stored when the race began, without results (it computes them only at the end).
    assert run.report.results.nodes and run.report.results.nodes[0].samples >= 2
    assert run.report.race_json["track"] == "range-queries" and "results" not in run.report.race_json


@pytest.mark.measures  # a budget of wall time, as the test above
def test_a_race_that_fails_before_the_refusal_has_lasted_names_the_refusal(clusters, race):
    # The race's budget (30 s: esrally stopped after 22 s) ends before the watch's 60 s grace: the
    # race fails as a timeout, and its message says what Elasticsearch refused meanwhile.
    filtered = {**spec(), "index": {"settings": {"index.routing.allocation.require._name": "no-such-node"}},
                "lifecycle": {"raceTimeoutSeconds": 30}}
    run = race(filtered, clusters.get(LATEST).url)
    assert_failed(run, Reason.RACE_TIMEOUT, "esrally was stopped after 22s",
                  "; meanwhile Elasticsearch refused to allocate shard [smoke][0] (primary)",
                  '[_name:"no-such-node"]')
    assert rally_processes(run.work_dir / "rally") == []
