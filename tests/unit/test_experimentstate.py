"""What an Experiment does next (controller/experimentstate.py), decided from what was read and the
time, without a cluster: the waits before the race and their deadline (clusterReadyTimeoutSeconds),
the Rally Job's start and end (raceTimeoutSeconds), the report, the end and what it cleans up."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from esbench.api.models import Phase
from esbench.api.race_report import MARKER, RaceReport
from esbench.api.reasons import ConditionType, Reason
from esbench.controller import experimentstate as state
from esbench.controller.experimentstate import End, Event, LookAgain, RaceFailure, ReadReport, StartRace, Write
from esbench.planning import manifests
from esbench.planning.readiness import ECK_NOT_INSTALLED, Readiness
from esbench.planning.status import parse
from tests.support.experiments import runner_log
from tests.support.standin_eck import eck_status

CREATED = "2026-12-03T04:00:00Z"
SOON = parse(CREATED) + timedelta(seconds=60)
TIMED_OUT = parse(CREATED) + timedelta(seconds=1800)  # clusterReadyTimeoutSeconds' default
UID = "exp-uid"


def body(status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """Experiment exp in namespace ns, created at CREATED; its own cluster unless SPEC says otherwise."""
    return {"metadata": {"name": "exp", "namespace": "ns", "uid": UID, "generation": 1, "creationTimestamp": CREATED},
            "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}, **spec},
            "status": status or {}}


def using(cluster: str) -> dict[str, Any]:
    """An Experiment that races on an Elasticsearch it does not own."""
    found = body(target={"elasticsearchRef": {"name": cluster}})
    del found["spec"]["elasticsearch"]
    return found


def experiment(of: dict[str, Any]) -> manifests.Experiment:
    return manifests.Experiment.from_body(of)


def cluster(up: bool = True, owners: list[dict[str, Any]] | None = None, name: str = "exp",
            **status: Any) -> dict[str, Any]:
    es = {"metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", "generation": 1,
                       "ownerReferences": [{"kind": "Experiment", "name": "exp", "uid": UID}] if owners is None else owners},
          "spec": {"version": "8.15.3", "nodeSets": [{"name": "default", "count": 1}]}}
    return {**es, "status": {**eck_status(es, up=up), **status}}


NAMESAKES = [{"kind": "Experiment", "name": "exp", "uid": "deleted-exp-uid"}]
STRANGERS = [{"kind": "Deployment", "name": "other", "uid": "other-uid"}]


# --- Pending ----------------------------------------------------------------------------------


def test_an_experiment_on_a_cluster_it_does_not_own_waits_for_it_and_says_which():
    of = using("shared")
    write = state.use_cluster(of, experiment(of), SOON)
    message = "Using Elasticsearch cluster shared, which this Experiment does not own"
    assert (write.phase, write.reason, write.message) == (Phase.PROVISIONING, Reason.WAITING_FOR_CLUSTER, message)
    assert write.fields == {"startTime": "2026-12-03T04:01:00Z", "raceId": UID, "clusterName": "shared"}
    assert write.event == Event("Normal", Reason.PROVISIONING, message)


def test_a_cluster_asked_for_is_announced_with_what_its_readiness_waits_for():
    of = body({"startTime": CREATED})
    write = state.provision(of, experiment(of), cluster(up=False), SOON)
    assert isinstance(write, Write) and write.phase == Phase.PROVISIONING
    assert write.fields == {"startTime": CREATED, "clusterName": "exp", "raceId": UID}  # the first start stands
    assert write.event == Event("Normal", Reason.PROVISIONING, "Creating Elasticsearch cluster exp (8.15.3)")
    ready = dict((type_, message) for type_, _, _, message in write.conditions)[ConditionType.CLUSTER_READY]
    assert ready.startswith("Waiting for the cluster: phase is ApplyingChanges")


def test_a_cluster_left_by_a_deleted_namesake_is_waited_for_until_the_cluster_wait_is_over():
    of = body()
    left = cluster(owners=NAMESAKES)
    waiting = state.provision(of, experiment(of), left, SOON)
    assert isinstance(waiting, Write)
    assert (waiting.phase, waiting.reason, waiting.event) == (Phase.PENDING, Reason.PREVIOUS_CLUSTER_DELETING, None)
    assert state.provision(of, experiment(of), left, TIMED_OUT) == End(
        Reason.CLUSTER_NAME_CONFLICT, "A Elasticsearch named exp already exists and does not belong to this "
                                      "Experiment; it was left untouched")


def test_a_strangers_cluster_of_the_experiments_name_is_a_conflict_at_once():
    of = body()
    end = state.provision(of, experiment(of), cluster(owners=STRANGERS), SOON)
    assert isinstance(end, End) and end.reason == Reason.CLUSTER_NAME_CONFLICT


def test_eck_missing_is_said_once_then_waited_for_until_the_cluster_wait_is_over():
    first = body({"phase": None})
    write = state.eck_missing(first, experiment(first), SOON)
    assert isinstance(write, Write) and write.phase == Phase.PENDING
    assert write.event == Event("Warning", Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
    again = body({"phase": "Pending"})
    assert state.eck_missing(again, experiment(again), SOON).event is None
    assert state.eck_missing(again, experiment(again), TIMED_OUT) == End(Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)


# --- Provisioning -----------------------------------------------------------------------------


def test_a_cluster_not_ready_within_cluster_ready_timeout_seconds_fails_cluster_not_ready():
    of = body({"phase": "Provisioning"})
    end = state.await_cluster(of, experiment(of), cluster(up=False), [], TIMED_OUT)
    assert isinstance(end, End) and end.reason == Reason.CLUSTER_NOT_READY
    assert end.message.startswith("Cluster not ready after 1800s. Waiting for the cluster: phase is ApplyingChanges")


def test_the_cluster_ready_timeout_counts_from_the_experiments_creation():
    of = body({"phase": "Provisioning"}, lifecycle={"clusterReadyTimeoutSeconds": 120})
    assert state.await_cluster(of, experiment(of), cluster(up=False), [], SOON) is not None  # still waiting
    end = state.await_cluster(of, experiment(of), cluster(up=False), [], parse(CREATED) + timedelta(seconds=120))
    assert isinstance(end, End) and end.message.startswith("Cluster not ready after 120s.")


def test_what_a_cluster_waits_for_is_written_once_per_change():
    of = body({"phase": "Provisioning", "reason": "Provisioning", "message": "Creating Elasticsearch cluster exp (8.15.3)"})
    write = state.await_cluster(of, experiment(of), cluster(up=False), [], SOON)
    assert isinstance(write, Write) and write.fields == {} and write.event is None
    assert (write.phase, write.reason, write.message) == (Phase.PROVISIONING, Reason.PROVISIONING,
                                                          "Creating Elasticsearch cluster exp (8.15.3)")
    (condition,) = write.conditions
    said = {**of, "status": {**of["status"], "conditions": [
        {"type": ConditionType.CLUSTER_READY, "status": "False", "reason": "Provisioning", "message": condition[3]}]}}
    assert state.await_cluster(said, experiment(said), cluster(up=False), [], SOON) is None


def test_a_ready_cluster_starts_the_race_and_the_job_started_moves_to_benchmarking():
    of = body({"phase": "Provisioning"})
    es = cluster(up=True)
    start = state.await_cluster(of, experiment(of), es, [], SOON)
    assert start == StartRace(Readiness(True, "Cluster ready: 1 nodes, health green", "8.15.3"), None)
    write = state.race_started(of, experiment(of), es, start, "exp-rally", True, None, SOON)
    assert isinstance(write, Write) and write.phase == Phase.BENCHMARKING
    assert write.fields == {"clusterReadyTime": "2026-12-03T04:01:00Z", "jobName": "exp-rally",
                            "clusterVersion": "8.15.3", "clusterUID": "exp-uid"}
    assert write.event == Event("Normal", Reason.BENCHMARKING,
                                "Cluster ready: 1 nodes, health green; Rally Job exp-rally started")


def test_a_cluster_it_does_not_own_is_never_recorded_for_deletion():
    of = using("shared")
    es = cluster(up=True, name="shared", owners=STRANGERS)
    start = state.await_cluster(of, experiment(of), es, [], SOON)
    assert isinstance(start, StartRace)
    assert "clusterUID" not in state.race_started(of, experiment(of), es, start, "exp-rally", True, None, SOON).fields


def test_a_strangers_cluster_under_the_experiments_own_name_is_a_conflict_whatever_eck_says():
    of = body({"phase": "Provisioning"})
    es = cluster(owners=STRANGERS, phase="Invalid")
    assert not state.needs_eck_reason(experiment(of), es)
    end = state.await_cluster(of, experiment(of), es, [], SOON)
    assert isinstance(end, End) and end.reason == Reason.CLUSTER_NAME_CONFLICT


def test_a_cluster_eck_refuses_fails_with_ecks_last_reason_and_waits_for_one_until_the_cluster_wait_is_over():
    of = body({"phase": "Provisioning"})
    invalid = cluster(up=False, phase="Invalid")
    assert state.needs_eck_reason(experiment(of), invalid)
    assert state.await_cluster(of, experiment(of), invalid, ["old", "spec.nodeSets: too many"], SOON) == End(
        Reason.CLUSTER_INVALID, "ECK refuses Elasticsearch exp: spec.nodeSets: too many")
    assert state.await_cluster(of, experiment(of), invalid, [], SOON) == LookAgain(
        "ECK marked Elasticsearch exp Invalid; its reason is to come")
    end = state.await_cluster(of, experiment(of), invalid, [], TIMED_OUT)
    assert isinstance(end, End) and end.reason == Reason.CLUSTER_NOT_READY


def test_a_referenced_cluster_that_does_not_exist_fails_cluster_not_found_once_the_cluster_wait_is_over():
    of = using("shared")
    assert state.cluster_not_found(of, experiment(of), SOON) is None
    assert state.cluster_not_found(of, experiment(of), TIMED_OUT) == End(
        Reason.CLUSTER_NOT_FOUND, "Elasticsearch shared (spec.target.elasticsearchRef) does not exist in namespace ns")


def test_an_external_cluster_starts_the_race_at_once_the_runner_waits_for_it():
    of = body(target={"external": {"url": "https://es.example:9200"}})
    del of["spec"]["elasticsearch"]
    assert state.await_cluster(of, experiment(of), None, [], SOON) == StartRace(
        Readiness(True, "External cluster https://es.example:9200"), None)


def test_a_profiled_race_on_a_cluster_that_records_no_profile_fails_invalid_spec():
    of = using("shared")
    of["spec"]["profile"] = {"event": "cpu"}
    end = state.await_cluster(of, experiment(of), cluster(up=True, name="shared", owners=STRANGERS), [], SOON)
    assert isinstance(end, End) and end.reason == Reason.INVALID_SPEC and "record no profile" in end.message
    # Pods with esbench's sidecar but no profiler (made for an Experiment without spec.profile): the same.
    made = manifests.elasticsearch_manifest(experiment(body()), manifests.SidecarImage("esbench:dev"))
    end = state.await_cluster(of, experiment(of), {**cluster(up=True, name="shared", owners=STRANGERS), "spec": made["spec"]},
                              [], SOON)
    assert isinstance(end, End) and "record no profile" in end.message


def test_a_race_on_a_cluster_esbench_made_reads_each_pods_sidecar():
    of = body({"phase": "Provisioning"})
    made = manifests.elasticsearch_manifest(experiment(of), manifests.SidecarImage("esbench:dev"))
    start = state.await_cluster(of, experiment(of), {**cluster(up=True), "spec": made["spec"]}, [], SOON)
    assert start.node_sidecars == ["https://exp-es-default-0.exp-es-default.ns.svc:9443"]


@pytest.mark.parametrize("owners, now, expected", [
    (NAMESAKES, SOON, None),  # the garbage collector is removing it: the next pass creates ours
    (NAMESAKES, TIMED_OUT, Reason.JOB_NAME_CONFLICT),
    (STRANGERS, SOON, Reason.JOB_NAME_CONFLICT),
])
def test_a_job_of_its_name_that_is_not_its_own_is_waited_for_or_a_conflict(owners, now, expected):
    of = body({"phase": "Provisioning"})
    stale = {"metadata": {"name": "exp-rally", "ownerReferences": owners}}
    step = state.race_started(of, experiment(of), cluster(), StartRace(Readiness(True, "ready"), None), "exp-rally",
                              False, stale, now)
    assert (step.reason if isinstance(step, End) else step) == expected


def test_a_job_in_the_way_and_gone_since_is_left_to_the_next_pass():
    of = body({"phase": "Provisioning"})
    assert state.race_started(of, experiment(of), cluster(), StartRace(Readiness(True, "ready"), None), "exp-rally",
                              False, None, SOON) is None


# --- Benchmarking -----------------------------------------------------------------------------


def job(*conditions: dict[str, Any], owner: str = UID) -> dict[str, Any]:
    return {"metadata": {"name": "exp-rally", "ownerReferences": [{"uid": owner}]},
            "status": {"conditions": [{"status": "True", **c} for c in conditions]}}


@pytest.mark.parametrize("found, step", [
    (None, End(Reason.JOB_DELETED, "Rally Job exp-rally was deleted before it finished")),
    (job(), None),  # running
    (job({"type": "Complete"}), ReadReport()),
    (job({"type": "FailureTarget", "reason": "BackoffLimitExceeded"}), ReadReport()),  # the log says why
    (job({"type": "FailureTarget", "reason": "DeadlineExceeded"}),
     End(Reason.RACE_TIMEOUT, "The race did not finish within 600s")),
    (job({"type": "Failed", "reason": "DeadlineExceeded"}), End(Reason.RACE_TIMEOUT, "The race did not finish within 600s")),
])
def test_the_rally_job_says_whether_the_race_runs_timed_out_or_ended_with_a_report_to_read(found, step):
    of = body({"phase": "Benchmarking"}, lifecycle={"raceTimeoutSeconds": 600})
    assert state.job_end(experiment(of), "exp-rally", found) == step


def test_a_strangers_job_of_the_rally_jobs_name_is_a_conflict():
    of = body({"phase": "Benchmarking"})
    end = state.job_end(experiment(of), "exp-rally", job({"type": "Complete"}, owner="other-uid"))
    assert isinstance(end, End) and end.reason == Reason.JOB_NAME_CONFLICT


POD = {"metadata": {"name": "exp-rally-x1y2z"},
       "status": {"containerStatuses": [{"name": "rally", "state": {"terminated": {"exitCode": 1}}}]}}


def test_a_job_that_ended_without_a_report_fails_job_failed_with_its_exit_code_and_log_tail():
    failure = state.race_report("exp-rally", POD, "esrally: command not found\npassword=hunter2\n")
    assert failure == RaceFailure(Reason.JOB_FAILED, "Rally Job exp-rally ended (exit code 1) without a report. "
                                                     "Log tail:\nesrally: command not found\npassword=[redacted]")


def test_a_job_whose_pod_is_gone_has_no_results_to_collect():
    assert state.race_report("exp-rally", None, "") == RaceFailure(Reason.RESULTS_UNAVAILABLE,
                                                                   "The pod of Job exp-rally is gone")


def test_a_report_cut_short_is_unreadable():
    failure = state.race_report("exp-rally", POD, f"{MARKER} 1/2 H4sI\n")
    assert isinstance(failure, RaceFailure) and failure.reason == Reason.RESULTS_UNREADABLE
    assert failure.message.startswith("Rally Job exp-rally: the log holds race report lines but no complete report")


def test_the_report_decides_how_the_race_ended():
    report = state.race_report("exp-rally", POD, runner_log(RaceReport(succeeded=True)))
    assert state.report_verdict(report) == End(Reason.RACE_SUCCEEDED, "Race finished; results collected", succeeded=True)
    failed = RaceReport(succeeded=False, failure={"kind": "TrackError", "message": "no track; token=abc"})
    assert state.report_verdict(failed) == RaceFailure(Reason.TRACK_ERROR, "no track; token=[redacted]")
    assert state.report_verdict(RaceReport(succeeded=False)) == RaceFailure(Reason.RACE_FAILED, "Race failed")


# --- Succeeded | Failed -----------------------------------------------------------------------


def test_the_results_are_written_in_the_same_write_that_ends_the_experiment():
    of = body({"phase": "Benchmarking", "clusterVersion": "8.15.3"})
    write = state.ending(of, End(Reason.RACE_SUCCEEDED, "done", succeeded=True), SOON, {"headline": "1 docs/s"})
    assert (write.phase, write.reason, write.message) == (Phase.SUCCEEDED, Reason.RACE_SUCCEEDED, "done")
    assert write.fields == {"completionTime": "2026-12-03T04:01:00Z", "headline": "1 docs/s"}
    assert [c[:2] for c in write.conditions] == [("BenchmarkComplete", True)]  # ClusterReady stays as it was


def test_a_cluster_that_never_became_ready_is_not_ready_for_the_reason_the_experiment_failed():
    of = body({"phase": "Provisioning"})
    write = state.ending(of, End(Reason.CLUSTER_NOT_READY, "not ready"), SOON)
    assert write.phase == Phase.FAILED
    assert write.conditions == (("BenchmarkComplete", False, Reason.CLUSTER_NOT_READY, "not ready"),
                                (ConditionType.CLUSTER_READY, False, Reason.CLUSTER_NOT_READY, "not ready"))


@pytest.mark.parametrize("cleanup, succeeded, deleted", [
    ("Delete", True, True), ("Delete", False, True),
    ("KeepOnFailure", True, True), ("KeepOnFailure", False, False),
    ("Keep", True, False), ("Keep", False, False),
])
def test_the_cleanup_policy_decides_whether_its_own_cluster_is_deleted(cleanup, succeeded, deleted):
    assert state.deletes_cluster(experiment(body(lifecycle={"cleanup": cleanup})), succeeded) is deleted


def test_a_cluster_it_only_uses_is_never_deleted():
    of = using("shared")
    of["spec"]["lifecycle"] = {"cleanup": "Delete"}
    assert not state.deletes_cluster(experiment(of), succeeded=True)


def test_a_finished_experiment_expires_ttl_seconds_after_finished_after_its_completion():
    finished = body({"phase": "Succeeded", "completionTime": CREATED}, lifecycle={"ttlSecondsAfterFinished": 60})
    assert not state.expired(finished, SOON - timedelta(seconds=1))
    assert state.expired(finished, SOON)
    assert not state.expired(body({"phase": "Succeeded", "completionTime": CREATED}), TIMED_OUT)  # no TTL


def test_a_sweeps_run_goes_only_once_its_sweep_has_recorded_how_it_ended():
    run = body({"phase": "Succeeded"})
    assert state.recorded_by_sweep(run, None)  # the sweep is gone
    assert not state.recorded_by_sweep(run, {"status": {"runs": [{"name": "exp", "phase": "Benchmarking"}]}})
    assert state.recorded_by_sweep(run, {"status": {"runs": [{"name": "exp", "phase": "Succeeded"}]}})
