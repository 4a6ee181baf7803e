"""Which watch events of a Rally Job or an ECK cluster are worth a reconcile of their Experiment
(each costs two reads at least), from the Jobs the Job controller really writes."""

import pytest

from esbench.controller import handlers
from esbench.controller.lifecycle import race_ended


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


def test_only_a_jobs_end_or_deletion_reconciles_its_unfinished_experiment(monkeypatch):
    monkeypatch.setattr(handlers, "_tracked", {("ns", "running")})

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
    monkeypatch.setattr(handlers, "_tracked", {("ns", "running")})
    labels = {handlers.EXPERIMENT_LABEL: "running"}
    assert handlers._may_need_its_experiment(type="DELETED", namespace="ns", labels=labels)
    finished = {handlers.EXPERIMENT_LABEL: "finished"}
    assert not handlers._may_need_its_experiment(type="DELETED", namespace="ns", labels=finished)
    # Any other event may be the one a restart lists: a finished Experiment's cleanup still pending.
    assert handlers._may_need_its_experiment(type=None, namespace="ns", labels=finished)
    assert handlers._may_need_its_experiment(type="MODIFIED", namespace="ns", labels=finished)
