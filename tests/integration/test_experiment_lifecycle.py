"""The real operator process reconciles Experiments on a real kube-apiserver.

Real: etcd, kube-apiserver, kube-controller-manager (the Job controller makes the Rally pod
and marks the Job Complete/Failed; the garbage collector follows owner references), the
ECK CRD, our CRD, and the operator itself, run with `kopf run` as a separate process.
Stood in for: ECK's controller (support.standin_eck: Service, Secrets and status as ECK
writes them) and the kubelet's work (support.standin_kubelet: binds the pod, serves its
log, sets its terminal status). The pod log is the runner's real report of a real race.json.
"""

from __future__ import annotations

import json

import pytest

from esbench.api import models
from esbench.api.race_report import MARKER, Failure, RaceReport
from esbench.api.reasons import Reason
from esbench.planning.status import parse
from esbench.runner.results import summarize
from tests.support.admission import deletion_held, deletion_refused
from tests.support.controlplane import K8S_VERSION
from tests.support.experiments import (
    as_the_runner_reported,
    condition,
    create_experiment,
    elastic_password,
    es_exists,
    event_messages,
    events,
    get_experiment,
    job,
    run_to_benchmarking,
    runner_log,
    wait_phase,
)
from tests.support.helm import operator_access
from tests.support.operator_process import OperatorProcess
from tests.support.standin_eck import GROUP, PLURAL, VERSION
from tests.support.waiting import wait_for


def test_experiment_runs_to_success_with_rallys_numbers_in_status(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_experiment(apis, namespace, "happy", index={"codec": "best_compression", "shards": 1, "replicas": 0})
    provisioning = wait_phase(apis, namespace, "happy", "Provisioning")
    assert condition(provisioning, "ClusterReady")["status"] == "False"
    assert provisioning["status"]["clusterName"] == "happy"
    assert provisioning["status"]["raceId"] == provisioning["metadata"]["uid"]

    es = eck.get(namespace, "happy")
    assert es["metadata"]["ownerReferences"][0]["uid"] == provisioning["metadata"]["uid"]
    assert es["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "esbench-operator"
    assert job(apis, namespace, "happy") is None, "the race must wait for a ready cluster"

    eck.provision(namespace, "happy")  # ECK is working on it, not ready yet
    waiting = wait_for(lambda: (e := get_experiment(apis, namespace, "happy"))
                       and "phase is ApplyingChanges" in condition(e, "ClusterReady")["message"] and e,
                       what="the operator to say what the cluster lacks")
    assert waiting["status"]["phase"] == "Provisioning" and job(apis, namespace, "happy") is None

    eck.make_ready(namespace, "happy")
    password = elastic_password(apis, namespace, "happy")
    benchmarking = wait_phase(apis, namespace, "happy", "Benchmarking")
    rally = apis.batch.read_namespaced_job("happy-rally", namespace).spec.template.spec.containers[0]
    assert password not in json.dumps([rally.command, rally.args, [e.value for e in rally.env or []]])
    assert condition(benchmarking, "ClusterReady")["status"] == "True"
    assert condition(benchmarking, "ClusterReady")["reason"] == "ClusterReady"  # Reason.CLUSTER_READY, as written
    assert benchmarking["status"]["clusterVersion"] == "8.15.3"
    assert benchmarking["status"]["jobName"] == "happy-rally"
    assert benchmarking["status"]["clusterUID"] == eck.get(namespace, "happy")["metadata"]["uid"]  # what the cleanup deletes

    results = summarize(race_json)
    standin_kubelet.finish_job_pod(namespace, "happy-rally", runner_log(
        RaceReport(succeeded=True, results=results, race_json=race_json)), exit_code=0)
    done = wait_phase(apis, namespace, "happy", "Succeeded")

    status = done["status"]
    assert as_the_runner_reported(status["results"]) == results.to_wire()  # exactly Rally's numbers
    kubernetes = status["results"]["environment"]["kubernetes"]
    # The operator adds what Kubernetes ran the race on to the runner's reproducibility record.
    assert kubernetes["serverVersion"] == K8S_VERSION
    rally_pod = apis.core.list_namespaced_pod(namespace, label_selector="batch.kubernetes.io/job-name=happy-rally").items[0]
    assert kubernetes["rally"]["pod"] == rally_pod.metadata.name and kubernetes["rally"]["image"] == rally.image
    assert kubernetes["rally"]["node"] == standin_kubelet.node_name
    assert kubernetes["rally"]["nodeCpu"] and kubernetes["rally"]["nodeKernel"]
    assert "elasticsearch" not in kubernetes  # the stand-in ECK creates no pods
    assert status["headline"]
    assert condition(done, "BenchmarkComplete")["status"] == "True"
    assert status["completionTime"] >= status["startTime"]
    assert status["observedGeneration"] == done["metadata"]["generation"]
    configmap = apis.core.read_namespaced_config_map(status["raceJsonConfigMap"], namespace)
    assert json.loads(configmap.data["race.json"]) == race_json
    assert configmap.metadata.owner_references[0].uid == done["metadata"]["uid"]

    wait_for(lambda: not es_exists(eck, namespace, "happy"), what="cleanup of the cluster (policy Delete)")
    def reasons():
        return [reason for _, reason in events(apis, namespace, "happy")]
    wait_for(lambda: "ClusterDeleted" in reasons(), what="the ClusterDeleted event")
    # Event timestamps have second resolution, so the order within a second is not kept.
    assert {"Provisioning", "Benchmarking", "RaceSucceeded", "ClusterDeleted"} <= set(reasons())
    for text in (json.dumps(done), event_messages(apis, namespace, "happy"), operator.log_tail(lines=10_000)):
        assert password not in text


def test_cluster_is_kept_when_cleanup_is_keep(apis, eck, standin_kubelet, namespace, operator, race_json):
    run_to_benchmarking(apis, eck, namespace, "keep", lifecycle={"cleanup": "Keep"})
    standin_kubelet.finish_job_pod(namespace, "keep-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    wait_for(lambda: ("Normal", "RaceSucceeded") in events(apis, namespace, "keep"),
             what="the final Event, posted once the cleanup is decided")
    assert es_exists(eck, namespace, "keep")


def test_keep_on_failure_deletes_the_cluster_of_a_race_that_succeeded(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    run_to_benchmarking(apis, eck, namespace, "kof", lifecycle={"cleanup": "KeepOnFailure"})
    standin_kubelet.finish_job_pod(namespace, "kof-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    wait_phase(apis, namespace, "kof", "Succeeded")
    wait_for(lambda: not es_exists(eck, namespace, "kof"), what="cleanup of the cluster after success")


def test_a_strangers_job_under_our_name_fails_the_experiment_and_is_left_alone(apis, eck, namespace, operator):
    apis.batch.create_namespaced_job(namespace, {"metadata": {"name": "busy-rally"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "stranger"}]}}}})
    stranger_uid = apis.batch.read_namespaced_job("busy-rally", namespace).metadata.uid
    create_experiment(apis, namespace, "busy")
    wait_for(lambda: es_exists(eck, namespace, "busy"), what="the ECK Elasticsearch resource")
    eck.make_ready(namespace, "busy")
    failed = wait_phase(apis, namespace, "busy", "Failed")
    assert failed["status"]["reason"] == "JobNameConflict"
    wait_for(lambda: ("Warning", "JobNameConflict") in events(apis, namespace, "busy"),
             what="the final Event, posted once the cleanup is decided")
    assert apis.batch.read_namespaced_job("busy-rally", namespace).metadata.uid == stranger_uid


def test_a_pod_gone_before_its_log_was_read_fails_as_results_unavailable(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    run_to_benchmarking(apis, eck, namespace, "lost")
    operator.kill()  # nobody reads the log while the pod ends and goes
    pod = standin_kubelet.finish_job_pod(namespace, "lost-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    wait_for(lambda: (j := job(apis, namespace, "lost")) and j.status.succeeded, what="the Job to complete")
    apis.core.delete_namespaced_pod(pod, namespace, grace_period_seconds=0)
    wait_for(lambda: not apis.core.list_namespaced_pod(namespace, label_selector="batch.kubernetes.io/job-name=lost-rally")
             .items, what="the pod to be gone")
    operator.start()
    failed = wait_phase(apis, namespace, "lost", "Failed")
    assert failed["status"]["reason"] == "ResultsUnavailable"


def test_cluster_not_ready_before_the_timeout_fails_and_keep_on_failure_keeps_it(apis, eck, namespace, operator):
    # 45 s: more than the looks the operator takes at a cluster it waits for (every 30 resyncs,
    # 30 s here) and not a multiple of them: the look due at the deadline is not a regular one.
    create_experiment(apis, namespace, "slow", lifecycle={"clusterReadyTimeoutSeconds": 45, "cleanup": "KeepOnFailure"})
    wait_for(lambda: es_exists(eck, namespace, "slow"), what="the ECK Elasticsearch resource")
    eck.provision(namespace, "slow")
    eck.set_status(namespace, "slow", phase="Ready", health="yellow", availableNodes=1,
                   observedGeneration=1, version="8.15.3")
    failed = wait_phase(apis, namespace, "slow", "Failed", timeout=75)
    took = parse(failed["status"]["completionTime"]) - parse(failed["metadata"]["creationTimestamp"])
    assert took.total_seconds() < 45 + 7, f"failed {took.total_seconds():.0f}s after its creation"
    ready = condition(failed, "ClusterReady")
    assert ready["status"] == "False" and ready["reason"] == "ClusterNotReady"
    assert "health is yellow, not green" in ready["message"]
    assert job(apis, namespace, "slow") is None
    assert es_exists(eck, namespace, "slow"), "KeepOnFailure keeps a failed cluster for inspection"


def test_failed_job_without_report_fails_with_a_redacted_log_excerpt(
        apis, eck, standin_kubelet, namespace, operator):
    run_to_benchmarking(apis, eck, namespace, "crash")
    log = "Traceback (most recent call last):\n  connecting with password=hunter2\nRuntimeError: boom\n"
    standin_kubelet.finish_job_pod(namespace, "crash-rally", log, exit_code=1)
    failed = wait_phase(apis, namespace, "crash", "Failed")
    complete = condition(failed, "BenchmarkComplete")
    assert complete["reason"] == "JobFailed"
    assert "exit code 1" in complete["message"] and "RuntimeError: boom" in complete["message"]
    for text in (json.dumps(failed["status"]), event_messages(apis, namespace, "crash"), operator.log_tail(10_000)):
        assert "hunter2" not in text
    wait_for(lambda: not es_exists(eck, namespace, "crash"), what="cleanup of the cluster")


def quota(apis, namespace: str, hard: dict[str, str]) -> None:
    """A ResourceQuota, as an SRE sets one, once the quota controller has counted its usage."""
    apis.core.create_namespaced_resource_quota(namespace, {"metadata": {"name": "limits"}, "spec": {"hard": hard}})
    wait_for(lambda: (apis.core.read_namespaced_resource_quota("limits", namespace).status.hard or {}) == hard,
             what="the quota controller to count the quota's usage")


def test_a_cluster_the_api_server_rejects_fails_the_experiment_at_once(apis, eck, namespace, operator):
    quota(apis, namespace, {"count/elasticsearches.elasticsearch.k8s.elastic.co": "0"})
    create_experiment(apis, namespace, "no-room")
    failed = wait_phase(apis, namespace, "no-room", "Failed")
    assert failed["status"]["reason"] == "ClusterRejected"
    message = failed["status"]["message"]
    assert "rejected Elasticsearch no-room (403)" in message and "exceeded quota" in message, message
    assert condition(failed, "ClusterReady")["reason"] == "ClusterRejected"
    # The final Event is posted after the status that ends the Experiment: wait for it.
    wait_for(lambda: ("Warning", "ClusterRejected") in events(apis, namespace, "no-room"), what="the ClusterRejected Event")


def test_a_job_the_api_server_rejects_fails_the_experiment_and_releases_its_cluster(apis, eck, namespace, operator):
    quota(apis, namespace, {"count/jobs.batch": "0"})
    create_experiment(apis, namespace, "no-job")
    wait_for(lambda: es_exists(eck, namespace, "no-job"), what="the ECK Elasticsearch resource")
    eck.make_ready(namespace, "no-job")
    failed = wait_phase(apis, namespace, "no-job", "Failed")
    assert failed["status"]["reason"] == "JobRejected"
    assert "rejected Job no-job-rally (403)" in failed["status"]["message"]
    wait_for(lambda: not es_exists(eck, namespace, "no-job"), what="cleanup of the cluster (policy Delete)")


def test_a_report_that_cannot_be_read_fails_as_results_unreadable(apis, eck, standin_kubelet, namespace, operator):
    run_to_benchmarking(apis, eck, namespace, "garbled")
    standin_kubelet.finish_job_pod(namespace, "garbled-rally", f"{MARKER} 1/2 H4sIAAAA\ncut short", exit_code=0)
    failed = wait_phase(apis, namespace, "garbled", "Failed")
    assert failed["status"]["reason"] == "ResultsUnreadable"
    assert "no complete report" in failed["status"]["message"]


def test_race_errors_fail_the_experiment_and_keep_partial_results(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    run_to_benchmarking(apis, eck, namespace, "errors")
    report = RaceReport(succeeded=False, results=summarize(race_json), race_json=race_json,
                        failure=Failure(kind=Reason.RACE_ERRORS, message="error rate 12.5% in task query"))
    standin_kubelet.finish_job_pod(namespace, "errors-rally", runner_log(report), exit_code=13)
    failed = wait_phase(apis, namespace, "errors", "Failed")
    assert failed["status"]["reason"] == "RaceErrors"
    assert condition(failed, "BenchmarkComplete")["message"] == "error rate 12.5% in task query"
    assert as_the_runner_reported(failed["status"]["results"]) == summarize(race_json).to_wire()
    assert failed["status"]["raceJsonConfigMap"] == "errors-race"


def test_a_runner_that_hangs_past_its_deadline_is_reported_as_race_timeout(
        apis, eck, standin_kubelet, namespace, operator):
    # The operator under test gives the Job a 5 s grace (see the operator fixture).
    run_to_benchmarking(apis, eck, namespace, "timeout", lifecycle={"raceTimeoutSeconds": 30})
    job_spec = apis.batch.read_namespaced_job("timeout-rally", namespace).spec
    assert job_spec.active_deadline_seconds == 35
    standin_kubelet.run_job_pod(namespace, "timeout-rally")  # it runs and never finishes
    failed = wait_phase(apis, namespace, "timeout", "Failed", timeout=90)
    assert failed["status"]["reason"] == "RaceTimeout"


def test_deleting_the_experiment_mid_run_removes_its_children(apis, eck, standin_kubelet, namespace, operator):
    run_to_benchmarking(apis, eck, namespace, "gone")
    standin_kubelet.run_job_pod(namespace, "gone-rally")
    apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, "gone")
    wait_for(lambda: not es_exists(eck, namespace, "gone"), what="garbage collection of the cluster")
    wait_for(lambda: job(apis, namespace, "gone") is None, what="garbage collection of the Job")
    wait_for(lambda: not apis.core.list_namespaced_pod(
        namespace, label_selector="esbench.io/experiment=gone").items, what="garbage collection of the pod")


def test_deleted_job_fails_the_experiment(apis, eck, namespace, operator):
    run_to_benchmarking(apis, eck, namespace, "nojob")
    apis.batch.delete_namespaced_job("nojob-rally", namespace, propagation_policy="Background")
    failed = wait_phase(apis, namespace, "nojob", "Failed")
    assert failed["status"]["reason"] == "JobDeleted"


def test_operator_killed_mid_run_resumes_without_duplicates(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_experiment(apis, namespace, "resume")
    wait_phase(apis, namespace, "resume", "Provisioning")
    first_cluster_uid = eck.get(namespace, "resume")["metadata"]["uid"]
    operator.kill()

    eck.make_ready(namespace, "resume")  # the cluster becomes ready while nobody watches
    operator.start()
    wait_phase(apis, namespace, "resume", "Benchmarking")
    first_job_uid = job(apis, namespace, "resume").metadata.uid
    # The restarted operator raced on the cluster it had made, not on a second one.
    assert eck.get(namespace, "resume")["metadata"]["uid"] == first_cluster_uid
    operator.kill()

    standin_kubelet.finish_job_pod(namespace, "resume-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    operator.start()
    done = wait_phase(apis, namespace, "resume", "Succeeded")
    operator.stop()
    operator.start()  # and once more after the end: nothing changes
    operator_caught_up(apis, eck, namespace)

    after = get_experiment(apis, namespace, "resume")
    assert after["status"] == done["status"]
    assert len(apis.batch.list_namespaced_job(namespace).items) == 1
    assert job(apis, namespace, "resume").metadata.uid == first_job_uid
    # The one cluster (its UID checked above) was deleted once.
    assert not es_exists(eck, namespace, "resume")
    reasons = [r for _, r in events(apis, namespace, "resume")]
    assert reasons.count("Provisioning") == 1 and reasons.count("ClusterDeleted") == 1, reasons
    succeeded_events = [e for e in apis.core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=resume").items if e.reason == "RaceSucceeded"]
    assert len(succeeded_events) == 1 and succeeded_events[0].count in (None, 1)


def test_finished_experiment_is_deleted_after_its_ttl(apis, eck, standin_kubelet, namespace, operator, race_json):
    run_to_benchmarking(apis, eck, namespace, "ttl", lifecycle={"ttlSecondsAfterFinished": 2})
    standin_kubelet.finish_job_pod(namespace, "ttl-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    wait_phase(apis, namespace, "ttl", "Succeeded")
    wait_for(lambda: not any(e["metadata"]["name"] == "ttl" for e in apis.custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL)["items"]), timeout=30, what="TTL deletion")


def operator_caught_up(apis, eck, namespace: str) -> None:
    """Evidence that a (re)started operator has worked through what it listed at start: a new
    Experiment, created after it, has been reconciled."""
    create_experiment(apis, namespace, "probe")
    wait_phase(apis, namespace, "probe", "Provisioning")
    apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, "probe")


def test_a_crash_between_the_final_status_and_the_cleanup_is_mended_at_restart(apis, eck, namespace, operator):
    create_experiment(apis, namespace, "crashed")
    wait_phase(apis, namespace, "crashed", "Provisioning")
    operator.kill()
    # What the operator had written just before it died: the end, but not yet the cleanup.
    apis.custom.patch_namespaced_custom_object_status(
        models.GROUP, models.VERSION, namespace, models.PLURAL, "crashed",
        {"status": {"phase": "Failed", "reason": "ClusterNotReady", "message": "simulated"}})
    operator.start()
    wait_for(lambda: not es_exists(eck, namespace, "crashed"), what="the pending cleanup (policy Delete)")
    # The Event follows the deletion: wait for it rather than read the events at once.
    wait_for(lambda: ("Normal", "ClusterDeleted") in events(apis, namespace, "crashed"), what="the ClusterDeleted Event")


def test_a_cleanup_the_api_server_refuses_is_tried_again_until_it_succeeds(
        apis, eck, standin_kubelet, control_plane, operator_kubeconfig, namespace, race_json, tmp_path):
    # Its own operator: its handlers are meant to fail while the deletion is held.
    operator = OperatorProcess(operator_kubeconfig, tmp_path / "operator.log").start()
    try:
        run_to_benchmarking(apis, eck, namespace, "held")
        with deletion_held(control_plane, namespace, "held") as release:
            wait_for(lambda: deletion_refused(apis, namespace, "held"), what="the API server to load the admission policy")
            standin_kubelet.finish_job_pod(namespace, "held-rally", runner_log(
                RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
            wait_phase(apis, namespace, "held", "Succeeded")
            # Posted although the cleanup failed, with the refusal said; then the resync (each 1 s
            # here) tries again, backing off: 1 s, then 2 s.
            wait_for(lambda: ("Normal", "RaceSucceeded") in events(apis, namespace, "held"),
                     what="the RaceSucceeded Event")
            assert ("Warning", "CleanupFailed") in events(apis, namespace, "held")
            refusal = event_messages(apis, namespace, "held")
            assert "The API server refused to delete Elasticsearch held" in refusal and "held by the test" in refusal
            wait_for(lambda: f"{namespace}/held failed again (2 in a row; next try in 2s)" in operator.log_tail(10_000),
                     what="the resync to try the cleanup again")
            assert es_exists(eck, namespace, "held")
            release()
            wait_for(lambda: not es_exists(eck, namespace, "held"), what="the cleanup, once the API server allows it")
            wait_for(lambda: ("Normal", "ClusterDeleted") in events(apis, namespace, "held"),
                     what="the ClusterDeleted Event")
    finally:
        operator.stop()


UNRUNNABLE = [
    ("conflict", {"index": {"shards": 2}, "workload": {"track": "smoke", "trackParams": {"number_of_shards": 3}}},
     "workload.trackParams.number_of_shards conflicts with index.shards"),
    ("profiled", {"elasticsearch": None, "target": {"external": {"url": "https://es.example:9200"}},
                  "profile": {"event": "cpu"}}, "it cannot reach into an external one"),
]


@pytest.mark.parametrize("name, sections, message", UNRUNNABLE, ids=[name for name, _, _ in UNRUNNABLE])
def test_what_admission_lets_through_but_the_operator_cannot_run_fails_as_invalid_spec(
        apis, eck, namespace, operator, name, sections, message):
    """Track params that repeat index settings (CEL cannot see into them), and a profile of an
    external cluster, which no esbench process can reach into: failed at once, before anything is made."""
    create_experiment(apis, namespace, name, **sections)
    failed = wait_phase(apis, namespace, name, "Failed")
    assert failed["status"]["reason"] == "InvalidSpec"
    assert message in failed["status"]["message"]
    assert not es_exists(eck, namespace, name)


def test_a_strangers_cluster_under_our_name_is_never_used_or_deleted(apis, eck, namespace, operator):
    stranger = {"apiVersion": "elasticsearch.k8s.elastic.co/v1", "kind": "Elasticsearch",
                "metadata": {"name": "taken"}, "spec": {"version": "8.15.3", "nodeSets": [{"name": "d", "count": 1}]}}
    apis.custom.create_namespaced_custom_object("elasticsearch.k8s.elastic.co", "v1", namespace,
                                                "elasticsearches", stranger)
    eck.make_ready(namespace, "taken")
    create_experiment(apis, namespace, "taken")
    failed = wait_phase(apis, namespace, "taken", "Failed")
    assert failed["status"]["reason"] == "ClusterNameConflict"
    assert "does not belong to this Experiment" in failed["status"]["message"]
    wait_for(lambda: ("Warning", "ClusterNameConflict") in events(apis, namespace, "taken"),
             what="the final Event, posted once the cleanup is decided")
    assert not eck.get(namespace, "taken")["metadata"].get("ownerReferences")
    assert job(apis, namespace, "taken") is None


def test_an_experiment_applied_again_waits_for_the_cluster_of_its_deleted_namesake(apis, eck, namespace, operator):
    create_experiment(apis, namespace, "again")
    wait_phase(apis, namespace, "again", "Provisioning")
    # The old cluster lingers, as while ECK's pods terminate: a finalizer holds it.
    eck.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "again",
                                              {"metadata": {"finalizers": ["esbench.test/hold"]}})
    old_uid = eck.get(namespace, "again")["metadata"]["uid"]
    apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, "again")
    wait_for(lambda: "again" not in [e["metadata"]["name"] for e in apis.custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL)["items"]], what="the first Experiment to go")

    create_experiment(apis, namespace, "again")
    waiting = wait_for(lambda: (e := get_experiment(apis, namespace, "again"))
                       and (e.get("status") or {}).get("reason") == "PreviousClusterDeleting" and e,
                       what="the new Experiment to wait for the old cluster")
    assert waiting["status"]["phase"] == "Pending"
    eck.custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "again",
                                              {"metadata": {"finalizers": None}})
    provisioning = wait_phase(apis, namespace, "again", "Provisioning")
    es = eck.get(namespace, "again")
    assert es["metadata"]["uid"] != old_uid
    assert es["metadata"]["ownerReferences"][0]["uid"] == provisioning["metadata"]["uid"]


def test_an_experiment_can_be_deleted_while_the_operator_is_down(apis, eck, namespace, operator):
    create_experiment(apis, namespace, "orphan")
    provisioning = wait_phase(apis, namespace, "orphan", "Provisioning")
    assert not provisioning["metadata"].get("finalizers"), "a finalizer would block deletion without the operator"
    operator.kill()
    apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, "orphan")
    wait_for(lambda: not apis.custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL)["items"], what="the Experiment to go")
    wait_for(lambda: not es_exists(eck, namespace, "orphan"), what="garbage collection of the cluster")


def test_an_operator_watching_some_namespaces_leaves_the_others_alone(apis, control_plane, helm, namespace, tmp_path):
    """The chart's watchNamespaces at run time: its RBAC for the listed namespaces and the
    operator's --namespace, as its Deployment passes it. An Experiment elsewhere is never touched;
    it is created first, so an operator watching every namespace would see it before the watched
    one (one watch, in resourceVersion order)."""
    other = control_plane.create_namespace()
    home = control_plane.create_namespace("esbench-system-")
    with operator_access(helm, control_plane, home, release="esbench-watching",
                         values={"watchNamespaces": [namespace]}) as kubeconfig:
        operator = OperatorProcess(kubeconfig, tmp_path / "operator.log", "--namespace", namespace).start()
        try:
            create_experiment(apis, other, "unseen")
            create_experiment(apis, namespace, "seen")
            wait_phase(apis, namespace, "seen", "Provisioning", 30)
            assert "status" not in get_experiment(apis, other, "unseen")
            assert apis.custom.list_namespaced_custom_object(GROUP, VERSION, other, PLURAL)["items"] == []
        finally:
            operator.stop()
            control_plane.delete_namespace(other)
            control_plane.delete_namespace(home)
