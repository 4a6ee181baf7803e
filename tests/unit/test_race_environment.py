"""The Kubernetes environment the operator adds to a race's results: a part it cannot read is said
once, in a Warning on an Experiment that has results, and never costs the results; nor does a
ConfigMap beside them (race.json, profiles) that cannot be created. A task whose figures are
suspect is a Warning too.

The operator's API layer (Kube) is stood in for by `ApiServer`, which answers the few calls of the
results step from memory, as Kube returns them; the same step runs on the real API server in the
integration suite (test_experiment_runs_to_success_with_rallys_numbers_in_status), where every
read succeeds.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.controller.config import Settings
from esbench.controller.lifecycle import Reconciler
from esbench.runner.results import summarize
from tests.support.experiments import runner_log, successful_race_json

NAMESPACE, NAME, UID = "perf", "env", "0b8f3c1e-uid"


class ApiServer:
    """The calls of the results step; listing the cluster's pods fails (a 503, as while the API
    server is overloaded): Kube passes that on, as it does any error but a missing node."""

    def __init__(self, log: str, configmaps_exist: bool = False):
        self.log = log
        self.configmaps_exist = configmaps_exist
        self.status: dict[str, Any] = {"phase": "Benchmarking", "clusterVersion": "8.15.3", "clusterUID": "es-uid",
                                       "jobName": f"{NAME}-rally", "startTime": "2026-11-24T08:00:00Z"}

    def get_experiment(self, namespace, name):
        return {"metadata": {"name": NAME, "namespace": NAMESPACE, "uid": UID, "generation": 1},
                "spec": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"},
                         "lifecycle": {"cleanup": "Keep"}},
                "status": dict(self.status)}

    def job_pod(self, namespace, job_name):
        return {"metadata": {"name": f"{job_name}-x7k2p"}, "spec": {"nodeName": "node-1"},
                "status": {"containerStatuses": [{"state": {"terminated": {"exitCode": 0}}}]}}

    def pod_log(self, namespace, pod_name):
        return self.log

    def server_version(self):
        return "v1.32.4"

    def get_node(self, name):
        return {"metadata": {"name": name}, "status": {"capacity": {"cpu": "2", "memory": "24Gi"}}}

    def cluster_pods(self, namespace, cluster):
        raise ApiException(status=503, reason="Service Unavailable")

    def create_configmap(self, manifest):
        return not self.configmaps_exist  # Kube's answer when one of that name is there already

    def patch_experiment_status(self, namespace, name, status):
        self.status.update(status)


def finish_race(log: str, configmaps_exist: bool = False, messages: bool = False) -> tuple[ApiServer, list[tuple]]:
    """The Events as (type, reason), or with messages (type, reason, message)."""
    api = ApiServer(log, configmaps_exist)
    events: list[tuple] = []
    reconciler = Reconciler(api, Settings.from_env({}), lambda body, type_, reason, message: events.append(
        (type_, reason, message) if messages else (type_, reason)))
    ended = {"metadata": {"ownerReferences": [{"uid": UID}]}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    reconciler.reconcile(NAMESPACE, NAME, ended)
    reconciler.side_reads.shutdown(wait=True)  # a detached read would speak after the step ended
    return api, events


def test_an_unreadable_part_is_said_once_and_the_rest_is_recorded():
    race_json = successful_race_json()
    api, events = finish_race(runner_log(RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)))
    assert api.status["phase"] == "Succeeded"
    kubernetes = api.status["results"]["environment"]["kubernetes"]
    assert kubernetes["serverVersion"] == "v1.32.4" and kubernetes["rally"]["nodeCpu"] == "2"
    assert "elasticsearch" not in kubernetes
    assert events.count(("Warning", "EnvironmentIncomplete")) == 1


def test_a_task_whose_disk_took_writes_the_nodes_did_not_make_is_a_warning_event_naming_it():
    """analysis/foreignwrites.py: kubectl describe shows it beside the results it casts doubt on."""
    race_json = successful_race_json()
    results = summarize(race_json)
    first = results.tasks[0]
    first.resources = models.TaskResources(seconds=60, nodes=1, io_write_bytes=2**30, index_operations=0,
                                           merged_bytes=0, flushes=0)
    api, events = finish_race(runner_log(RaceReport(succeeded=True, results=results, race_json=race_json)), messages=True)
    assert api.status["phase"] == "Succeeded"
    (suspect,) = [message for type_, reason, message in events if reason == "MeasurementSuspect" and type_ == "Warning"]
    assert suspect.startswith(f"task {first.task}: the data path's disk took 1.00 GiB")


@pytest.mark.parametrize("log", ["[ERROR] Cannot race. Traceback ...\n", ""])
def test_a_race_without_results_says_nothing_of_an_environment_it_does_not_record(log):
    api, events = finish_race(log)
    assert api.status["phase"] == "Failed" and api.status["reason"] == "JobFailed"
    assert ("Warning", "EnvironmentIncomplete") not in events


@pytest.mark.parametrize("configmaps_exist", [False, True])
def test_results_whose_configmaps_cannot_be_created_are_kept_without_pointing_at_another_races(configmaps_exist):
    """A ConfigMap of that name left by a deleted namesake: the status must not name it."""
    race_json = successful_race_json()
    results = summarize(race_json)
    results.profile = models.ProfileRecording(profiler="async-profiler 4.6", event="cpu")
    report = RaceReport(succeeded=True, results=results, race_json=race_json, profiles={"index-append.collapsed": "eA=="})
    api, events = finish_race(runner_log(report), configmaps_exist)
    assert api.status["phase"] == "Succeeded" and api.status["results"]["tasks"]
    stored = {"raceJson": api.status.get("raceJsonConfigMap"), "profiles": api.status["results"]["profile"].get("configMap")}
    warnings = {reason for type_, reason in events if type_ == "Warning"}
    if configmaps_exist:
        assert stored == {"raceJson": None, "profiles": None}
        assert {"RaceJsonNotStored", "ProfilesNotStored"} <= warnings
    else:
        assert stored == {"raceJson": f"{NAME}-race", "profiles": f"{NAME}-profiles"}
        assert not {"RaceJsonNotStored", "ProfilesNotStored"} & warnings
