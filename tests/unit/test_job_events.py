"""Which watch events of a Rally Job or an ECK cluster are worth a reconcile of their Experiment
(each costs two reads at least), from the Jobs the Job controller really writes; and which
cluster a reconcile takes from its event instead of reading it again."""

import threading

import kopf
import pytest

from esbench.api import models
from esbench.controller import handlers
from esbench.controller.config import Settings
from esbench.controller.experimentstate import race_ended
from esbench.controller.kube import ECK_GROUP, ECK_PLURAL, ECK_VERSION, Gone
from esbench.controller.lifecycle import Reconciler, RetryLater
from esbench.controller.wakeups import Agenda
from tests.support.standin_eck import eck_status


def job(*conditions: tuple[str, str]) -> dict:
    return {"status": {"conditions": [{"type": type_, "status": status} for type_, status in conditions]}}


@pytest.mark.parametrize("conditions, ended", [
    ((), False),  # created, or its pod running
    ((("SuccessCriteriaMet", "True"),), False),  # Kubernetes 1.31+: Complete follows once the pod is gone
    ((("SuccessCriteriaMet", "True"), ("Complete", "True")), True),
    ((("FailureTarget", "True"),), True),  # the Job controller has decided: Failed follows
    ((("FailureTarget", "True"), ("Failed", "True")), True),
    ((("Failed", "False"),), False),
])
def test_a_race_has_ended_once_the_job_controller_says_complete_or_failed(conditions, ended):
    assert race_ended(job(*conditions)) is ended


def test_the_api_server_sends_the_operator_only_esbenchs_own_jobs_and_clusters():
    """Filtered by the API server: the cluster's other Jobs and Elasticsearch clusters never reach
    the operator, which would otherwise receive and parse each of their events only to drop them.
    Every Experiment does, a sweep's runs too."""
    settings = kopf.OperatorSettings()
    handlers.tune(settings)
    selectors = settings.watching.label_selectors
    assert list(selectors.collect(kopf.Resource("batch", "v1", "jobs"))) == [handlers.EXPERIMENT_LABEL]
    assert list(selectors.collect(kopf.Resource(ECK_GROUP, ECK_VERSION, ECK_PLURAL))) == [handlers.EXPERIMENT_LABEL]
    assert not list(selectors.collect(kopf.Resource(models.GROUP, models.VERSION, models.PLURAL)))


def test_kopf_builds_no_state_to_diff_events_against():
    """Its default storage deep-copies each object of each event into a state that only change
    handlers use, and the operator has none."""
    settings = kopf.OperatorSettings()
    handlers.tune(settings)
    ended = {"metadata": {"labels": {handlers.EXPERIMENT_LABEL: "e"}}, "spec": {"template": {}}, **job(("Complete", "True"))}
    assert settings.persistence.diffbase_storage.build(body=kopf.Body(ended)) == {}


def tracking(monkeypatch, *keys: tuple[str, str]) -> Agenda:
    """The handlers' Experiment agenda, replaced by one that tracks these."""
    agenda = Agenda(10.0)
    for key in keys:
        agenda.track(key, 300.0)
    monkeypatch.setattr(handlers, "_experiments", agenda)
    return agenda


def test_only_a_jobs_end_or_deletion_reconciles_its_unfinished_experiment(monkeypatch):
    tracking(monkeypatch, ("ns", "running"))

    def reconciles(type_, body, experiment="running"):
        return handlers._race_ended_or_gone(type=type_, body=body, namespace="ns",
                                            labels={handlers.EXPERIMENT_LABEL: experiment})

    assert not reconciles("ADDED", job())
    assert not reconciles("MODIFIED", job())
    assert reconciles("MODIFIED", job(("Complete", "True")))
    assert reconciles("DELETED", job())
    assert reconciles(None, job(("Failed", "True")))  # listed at a restart
    assert not reconciles("MODIFIED", job(("Complete", "True")), experiment="finished")


def test_a_deleted_cluster_matters_only_to_an_experiment_still_tracked(monkeypatch):
    tracking(monkeypatch, ("ns", "running"))
    labels = {handlers.EXPERIMENT_LABEL: "running"}
    assert handlers._may_need_its_experiment(type="DELETED", namespace="ns", labels=labels)
    finished = {handlers.EXPERIMENT_LABEL: "finished"}
    assert not handlers._may_need_its_experiment(type="DELETED", namespace="ns", labels=finished)
    # Any other event may be the one a restart lists: a finished Experiment's cleanup still pending.
    assert handlers._may_need_its_experiment(type=None, namespace="ns", labels=finished)
    assert handlers._may_need_its_experiment(type="MODIFIED", namespace="ns", labels=finished)


def test_a_clusters_creation_is_not_news_its_changes_are(monkeypatch):
    """Only the operator creates clusters with the label, in a reconcile that has read what it made."""
    tracking(monkeypatch, ("ns", "running"))
    labels = {handlers.EXPERIMENT_LABEL: "running"}
    assert not handlers._may_need_its_experiment(type="ADDED", namespace="ns", labels=labels)
    assert handlers._may_need_its_experiment(type="MODIFIED", namespace="ns", labels=labels)


class LeavesItAs:
    """Stands in for the Reconciler: what handlers do with the Experiment a reconcile leaves."""

    def __init__(self, body: dict | None = None, raises: Exception | None = None):
        self.body, self.raises = body, raises

    def reconcile(self, namespace: str, name: str, job: dict | None = None, cluster: dict | None = None) -> dict | None:
        if self.raises:
            raise self.raises
        return self.body


@pytest.mark.parametrize("left, still_tracked", [
    ({"spec": {"rally": {}}, "status": {"phase": "Succeeded"}}, False),
    ({"spec": {"rally": {}}, "status": {"phase": "Failed"}}, False),
    ({"spec": {"lifecycle": {"ttlSecondsAfterFinished": 60}}, "status": {"phase": "Succeeded"}}, True),  # a TTL to keep
    ({"spec": {"rally": {}}, "status": {"phase": "Benchmarking"}}, True),
    (None, True),  # gone: its own DELETED event says so
])
def test_an_experiment_a_reconcile_finishes_is_untracked_at_once(monkeypatch, left, still_tracked):
    """So that its cluster's deletion, which follows at once and may come before the Experiment's
    own watch event, costs no reconcile."""
    key = ("ns", "exp")
    agenda = tracking(monkeypatch, key)
    monkeypatch.setattr(handlers, "_reconciler", LeavesItAs(left))
    handlers._reconcile(*key)
    assert agenda.tracked(key) is still_tracked
    assert handlers._may_need_its_experiment(type="DELETED", namespace="ns",
                                             labels={handlers.EXPERIMENT_LABEL: "exp"}) is still_tracked


@pytest.mark.parametrize("raises", [RetryLater("log not readable yet"), Gone()])
def test_a_reconcile_that_ends_early_leaves_the_tracking_as_it_was(monkeypatch, raises):
    key = ("ns", "exp")
    agenda = tracking(monkeypatch, key)
    monkeypatch.setattr(handlers, "_reconciler", LeavesItAs(raises=raises))
    handlers._reconcile(*key)
    assert agenda.tracked(key)


def experiment_body(**status) -> dict:
    """Experiment exp in namespace ns, with that status. Created in the future: no wait of it is
    ever over."""
    return {"metadata": {"name": "exp", "namespace": "ns", "uid": "exp-uid", "generation": 1,
                         "creationTimestamp": "2999-01-01T00:00:00Z"},
            "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
            "status": status}


class ProvisioningExperiment:
    """Stands in for Kube (the calls of the wait for a cluster, answered from memory as Kube returns
    them): an Experiment waiting for its own cluster, which is not ready yet. No Job of its name
    exists unless one is given, which then ended (made before a crash, its race has run)."""

    def __init__(self, ended_job: bool = False):
        self.experiment = experiment_body(phase="Provisioning")
        self.reads: list[str] = []
        self.jobs: list[dict] = []
        self.ended_job = ended_job
        self.deleted: list[str] = []

    def get_experiment(self, namespace, name):
        return self.experiment

    def get_elasticsearch(self, namespace, name):
        self.reads.append(name)
        return cluster(name, up=False)

    def create_job(self, manifest):
        if self.ended_job:
            return False
        self.jobs.append(manifest)
        return True

    def get_job(self, namespace, name):
        assert self.ended_job, "a Job made now has not ended: its end comes as its watch event"
        return {"metadata": {"name": name, "ownerReferences": [{"uid": "exp-uid"}]},
                "status": {"conditions": [{"type": "Complete", "status": "True"}]}}

    def job_pod(self, namespace, job_name):  # gone with the crash, say
        return None

    def delete_elasticsearch(self, namespace, name, uid):
        self.deleted.append(name)
        return True

    def patch_experiment_status(self, namespace, name, status):
        self.experiment["status"].update(status)


def cluster(name: str, up: bool) -> dict:
    es = {"metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", "generation": 1,
                       "ownerReferences": [{"kind": "Experiment", "name": "exp", "uid": "exp-uid"}]},
          "spec": {"version": "8.15.3", "nodeSets": [{"name": "default", "count": 1}]}}
    return {**es, "status": eck_status(es, up=up)}


def test_the_cluster_its_event_shows_is_taken_as_seen():
    kube = ProvisioningExperiment()
    Reconciler(kube, Settings.from_env({}), lambda *_: None).reconcile("ns", "exp", cluster=cluster("exp", up=True))
    assert kube.reads == []
    assert [job["metadata"]["name"] for job in kube.jobs] == ["exp-rally"]
    assert kube.experiment["status"]["phase"] == "Benchmarking"


def test_a_cluster_of_another_name_is_not_taken_for_the_experiments_own():
    """Anyone may label a cluster with an Experiment's name; only the one of its name is its own."""
    kube = ProvisioningExperiment()
    Reconciler(kube, Settings.from_env({}), lambda *_: None).reconcile("ns", "exp", cluster=cluster("other", up=True))
    assert kube.reads == ["exp"]
    assert kube.jobs == []
    assert kube.experiment["status"]["phase"] == "Provisioning"


def test_a_job_made_before_a_crash_is_looked_at_at_once_it_may_have_ended():
    """Its end's watch event may have come while the operator was down, or before this Experiment
    was tracked again: the same reconcile goes on to the race's end."""
    kube = ProvisioningExperiment(ended_job=True)
    Reconciler(kube, Settings.from_env({}), lambda *_: None).reconcile("ns", "exp", cluster=cluster("exp", up=True))
    assert kube.experiment["status"]["phase"] == "Failed"
    assert kube.experiment["status"]["reason"] == "ResultsUnavailable"
    assert kube.deleted == ["exp"]


class RaceJustEnded:
    """Stands in for Kube: an Experiment whose race has just ended, and whose Experiment cannot be
    read until its race's log has been."""

    def __init__(self):
        self.log_read = threading.Event()
        self.experiment = experiment_body(phase="Benchmarking", clusterUID="exp-uid-cluster")

    def get_experiment(self, namespace, name):
        assert self.log_read.wait(10), "the race's log is read only after the Experiment"
        return self.experiment

    def job_pod(self, namespace, job_name):
        return {"metadata": {"name": f"{job_name}-x1y2z"}, "spec": {},
                "status": {"containerStatuses": [{"name": "rally", "state": {"terminated": {"exitCode": 1}}}]}}

    def pod_log(self, namespace, pod_name):
        self.log_read.set()
        return "esrally: command not found\n"

    def patch_experiment_status(self, namespace, name, status):
        self.experiment["status"].update(status)

    def delete_elasticsearch(self, namespace, name, uid):
        return True


def test_the_end_of_a_race_is_read_alongside_its_experiment():
    """The Experiment is read while the race's pod and log are: the results step does not wait for
    one read after the other."""
    kube = RaceJustEnded()
    ended = {"metadata": {"name": "exp-rally", "ownerReferences": [{"uid": "exp-uid"}]},
             "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    Reconciler(kube, Settings.from_env({}), lambda *_: None).reconcile("ns", "exp", job=ended)
    assert kube.experiment["status"]["phase"] == "Failed"
    assert kube.experiment["status"]["reason"] == "JobFailed"
    assert "esrally: command not found" in kube.experiment["status"]["message"]
