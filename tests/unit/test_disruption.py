"""A failed race names the cause its pods show (controller/disruption.py): the Rally pod deleted or
evicted under it, an Elasticsearch pod replaced, restarted, being deleted or missing; the runner's
failure (what it saw of that) follows as the detail. Facts shaped as the real node wrote them
(Kubernetes 1.32, ECK 3.5: quickstart's pod deleted mid-race, then the Rally Job's)."""

from __future__ import annotations

from typing import Any

import pytest

from esbench.api.race_report import RaceReport
from esbench.api.reasons import Reason
from esbench.controller.config import Settings
from esbench.controller.disruption import RaceFacts, cause
from esbench.controller.lifecycle import Reconciler
from tests.support.experiments import runner_log

STARTED = "2026-12-02T22:49:58Z"  # status.clusterReadyTime: the Rally Job was created then
TLS_ERROR = ("elastic_transport.TlsError: TLS error caused by: TlsError(TLS error caused by: SSLError([SSL: "
             "CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain")


def es_pod(created: str = "2026-12-02T22:49:07Z", restarts: int = 0, last: dict | None = None,
           deleting: str | None = None, name: str = "quickstart-es-default-0") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if deleting:
        meta.update(deletionTimestamp=deleting, deletionGracePeriodSeconds=180)
    container: dict[str, Any] = {"name": "elasticsearch", "restartCount": restarts, "ready": False}
    if last:
        container["lastState"] = {"terminated": last}
    return {"metadata": meta, "status": {"containerStatuses": [container]}}


def elasticsearch(phase: str = "ApplyingChanges", health: str = "unknown", available: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": "quickstart"}, "spec": {"nodeSets": [{"name": "default", "count": 1}]},
            "status": {"phase": phase, "health": health, "availableNodes": available}}


def rally_pod(**status: Any) -> dict[str, Any]:
    meta = status.pop("metadata", {})
    return {"metadata": {"name": "quickstart-rally-xqtrp", "creationTimestamp": "2026-12-02T22:49:58Z", **meta},
            "status": {"phase": "Running", **status}}


def facts(rally: dict | None = None, pods: list | None = None, es: dict | None = None) -> RaceFacts:
    return RaceFacts(STARTED, rally if rally is not None else rally_pod(), "quickstart",
                     es if es is not None else elasticsearch(), [es_pod()] if pods is None else pods)


def test_an_elasticsearch_pod_replaced_during_the_race_is_the_cause_and_rallys_error_the_detail():
    reason, message = cause(facts(pods=[es_pod(created="2026-12-02T22:50:24Z")]), Reason.RACE_FAILED, TLS_ERROR)
    assert reason == Reason.CLUSTER_DISRUPTED
    assert message.startswith("Elasticsearch pod quickstart-es-default-0 was replaced during the race: the new one "
                              f"was created at 2026-12-02T22:50:24Z. The race started at {STARTED}; ECK now reports "
                              "phase ApplyingChanges, health unknown, 0/1 nodes available. ")
    assert message.endswith(f"The race failed with RaceFailed: {TLS_ERROR}")


def test_an_elasticsearch_container_restarted_during_the_race_says_how_it_ended():
    oom = {"reason": "OOMKilled", "exitCode": 137, "finishedAt": "2026-12-02T22:50:40Z"}
    reason, message = cause(facts(pods=[es_pod(restarts=1, last=oom)]), Reason.TARGET_UNREACHABLE, "refused")
    assert reason == Reason.CLUSTER_DISRUPTED
    assert "quickstart-es-default-0 restarted Elasticsearch at 2026-12-02T22:50:40Z (OOMKilled, exit code 137)" in message


@pytest.mark.parametrize("pods, said", [
    ([], "Elasticsearch pod quickstart-es-default-0 is missing"),  # deleted, not made again yet
    ([es_pod(deleting="2026-12-02T22:53:21Z")], "quickstart-es-default-0 is being deleted at 2026-12-02T22:50:21Z"),
])
def test_an_elasticsearch_pod_gone_or_going_is_the_cause(pods, said):
    reason, message = cause(facts(pods=pods), Reason.RACE_FAILED, TLS_ERROR)
    assert reason == Reason.CLUSTER_DISRUPTED and said in message


@pytest.mark.parametrize("pod", [
    es_pod(),
    es_pod(restarts=2, last={"reason": "Error", "exitCode": 1, "finishedAt": "2026-12-02T22:49:30Z"}),  # before it
])
def test_a_cluster_undisturbed_since_the_race_started_leaves_the_runners_failure_as_it_is(pod):
    assert cause(facts(pods=[pod], es=elasticsearch("Ready", "green", 1)), Reason.RACE_FAILED, TLS_ERROR) == (
        Reason.RACE_FAILED, TLS_ERROR)


def test_a_pod_not_listed_while_eck_counts_every_node_available_blames_nothing():
    """As the API server's tests see it (ECK's stand-in makes no pods) or a pod list read a moment
    out of step: missing only counts where ECK itself is short of nodes."""
    assert cause(facts(pods=[], es=elasticsearch("Ready", "green", 1)), Reason.JOB_FAILED, "no report") == (
        Reason.JOB_FAILED, "no report")


def test_an_external_cluster_has_no_pods_to_blame():
    external = RaceFacts(STARTED, rally_pod())
    assert cause(external, Reason.TARGET_UNREACHABLE, "refused") == (Reason.TARGET_UNREACHABLE, "refused")


def test_a_failure_of_the_spec_is_never_blamed_on_a_disruption():
    assert cause(facts(pods=[]), Reason.TRACK_ERROR, "unknown track") == (Reason.TRACK_ERROR, "unknown track")


def test_the_rally_pod_deleted_mid_race_says_so_and_when_it_was_asked():
    deleted = rally_pod(metadata={"deletionTimestamp": "2026-12-02T22:51:00Z", "deletionGracePeriodSeconds": 30})
    job_failed = "Rally Job quickstart-rally ended (exit code None) without a report. Log tail:\n..."
    reason, message = cause(facts(rally=deleted), Reason.JOB_FAILED, job_failed)
    assert reason == Reason.RALLY_POD_DELETED
    assert message.startswith("The Rally pod quickstart-rally-xqtrp was deleted at 2026-12-02T22:50:30Z, during the race")
    assert message.endswith(f"The race failed with JobFailed: {job_failed}")


@pytest.mark.parametrize("pod, said", [
    (rally_pod(conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                            "message": "Eviction API: evicting", "lastTransitionTime": "2026-12-02T22:50:30Z"}],
               metadata={"deletionTimestamp": "2026-12-02T22:51:00Z", "deletionGracePeriodSeconds": 30}),
     "was evicted at 2026-12-02T22:50:30Z (EvictionByEvictionAPI; Eviction API: evicting)"),
    (rally_pod(phase="Failed", reason="Evicted", message="The node was low on resource: memory."),
     "was evicted: The node was low on resource: memory."),
])
def test_the_rally_pod_evicted_mid_race_gives_kubernetes_reason(pod, said):
    reason, message = cause(facts(rally=pod), Reason.JOB_FAILED, "no report")
    assert reason == Reason.RALLY_POD_EVICTED and said in message


def test_the_rally_pods_own_end_comes_before_the_clusters():
    deleted = rally_pod(metadata={"deletionTimestamp": "2026-12-02T22:51:00Z"})
    assert cause(facts(rally=deleted, pods=[]), Reason.JOB_FAILED, "no report")[0] == Reason.RALLY_POD_DELETED


# --- the reconciler gathers the facts and writes the cause ----------------------------------


class ApiServer:
    """The calls of the results step for a race that ended, with the pods it ended among."""

    def __init__(self, log: str, rally: dict[str, Any], pods: list[dict[str, Any]]):
        self.log, self.rally, self.pods = log, rally, pods
        self.status: dict[str, Any] = {"phase": "Benchmarking", "clusterVersion": "8.7.1", "clusterUID": "es-uid",
                                       "clusterName": "quickstart", "clusterReadyTime": STARTED,
                                       "jobName": "quickstart-rally", "startTime": "2026-12-02T22:49:05Z"}

    def get_experiment(self, namespace, name):
        return {"metadata": {"name": "quickstart", "namespace": "default", "uid": "uid", "generation": 1},
                "spec": {"elasticsearch": {"version": "8.7.1"}, "workload": {"track": "smoke"},
                         "lifecycle": {"cleanup": "Keep"}},
                "status": dict(self.status)}

    def job_pod(self, namespace, job_name):
        return self.rally

    def pod_log(self, namespace, pod_name):
        return self.log

    def get_elasticsearch(self, namespace, name):
        return elasticsearch()

    def cluster_pods(self, namespace, cluster):
        return self.pods

    def server_version(self):
        return "v1.32.4"

    def get_node(self, name):
        return None

    def create_configmap(self, manifest):
        return True

    def patch_experiment_status(self, namespace, name, status):
        self.status.update(status)


def end_race(log: str, rally: dict[str, Any], pods: list[dict[str, Any]]) -> dict[str, Any]:
    api = ApiServer(log, rally, pods)
    reconciler = Reconciler(api, Settings.from_env({}), lambda *event: None)
    ended = {"metadata": {"ownerReferences": [{"uid": "uid"}]},
             "status": {"conditions": [{"type": "FailureTarget", "status": "True"}]}}
    reconciler.reconcile("default", "quickstart", ended)
    reconciler.side_reads.shutdown(wait=True)
    return api.status


def test_a_race_that_failed_while_its_elasticsearch_pod_was_replaced_ends_cluster_disrupted():
    failed = RaceReport(succeeded=False, failure={"kind": "RaceFailed", "message": TLS_ERROR})
    status = end_race(runner_log(failed), rally_pod(phase="Failed"), [es_pod(created="2026-12-02T22:50:24Z")])
    assert status["phase"] == "Failed" and status["reason"] == "ClusterDisrupted"
    assert "quickstart-es-default-0 was replaced" in status["message"] and TLS_ERROR in status["message"]


def test_a_race_whose_rally_pod_was_deleted_ends_rally_pod_deleted():
    deleted = rally_pod(metadata={"deletionTimestamp": "2026-12-02T22:51:00Z", "deletionGracePeriodSeconds": 30})
    status = end_race("[INFO] Race id is [r]\n", deleted, [es_pod()])
    assert status["phase"] == "Failed" and status["reason"] == "RallyPodDeleted"
    assert "(exit code None) without a report" in status["message"]  # what the runner's log showed
