"""Experiments against a cluster they do not own: an ECK cluster by reference, or an external URL.

Real: kube-apiserver, controller-manager (Job controller, garbage collector), both CRDs and
the operator process. Stood in for: ECK's controller (support.standin_eck) and the kubelet's
work (support.standin_kubelet), as in test_experiment_lifecycle.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.runner.results import summarize
from tests.support.experiments import (
    condition,
    create_experiment,
    es_exists,
    events,
    get_experiment,
    runner_log,
    wait_phase,
)
from tests.support.schedules import printed
from tests.support.standin_eck import GROUP, PLURAL, VERSION
from tests.support.waiting import wait_for


def create_unowned_cluster(apis, namespace: str, name: str) -> None:
    """An ECK cluster someone else made (no owner, no esbench labels)."""
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Elasticsearch", "metadata": {"name": name},
            "spec": {"version": "8.15.3", "nodeSets": [{"name": "default", "count": 2}]}}
    apis.custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


def container_of(apis, namespace: str, job_name: str):
    return apis.batch.read_namespaced_job(job_name, namespace).spec.template.spec.containers[0]


def password_secret_of(apis, namespace: str, job_name: str) -> str:
    """The Secret whose key the Rally pod reads as the file ES_PASSWORD_FILE names."""
    pod = apis.batch.read_namespaced_job(job_name, namespace).spec.template.spec
    env = {e.name: e.value for e in pod.containers[0].env}
    assert "ES_PASSWORD" not in env
    directory = env["ES_PASSWORD_FILE"].rpartition("/")[0]
    [mount] = [m for m in pod.containers[0].volume_mounts if m.mount_path == directory]
    [volume] = [v for v in pod.volumes if v.name == mount.name]
    return volume.secret.secret_name


def test_a_referenced_eck_cluster_is_waited_for_used_and_never_deleted(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_unowned_cluster(apis, namespace, "shared")
    create_experiment(apis, namespace, "on-shared", elasticsearch=None,
                      target={"elasticsearchRef": {"name": "shared"}})
    waiting = wait_phase(apis, namespace, "on-shared", "Provisioning")
    assert waiting["status"]["clusterName"] == "shared"
    assert condition(waiting, "ClusterReady")["reason"] == "WaitingForCluster"
    looked = wait_for(lambda: (e := get_experiment(apis, namespace, "on-shared"))
                      and "phase is unset" in condition(e, "ClusterReady")["message"] and e,
                      what="the operator to say what the referenced cluster lacks")
    assert looked["status"]["phase"] == "Provisioning", "it waits for ready"

    eck.make_ready(namespace, "shared")
    benchmarking = wait_phase(apis, namespace, "on-shared", "Benchmarking")
    assert benchmarking["status"]["clusterVersion"] == "8.15.3"
    assert printed(apis, namespace, "on-shared", models.PLURAL)["Version"] == "8.15.3"  # a spec without one
    container = container_of(apis, namespace, "on-shared-rally")
    assert "--target-url=https://shared-es-http." + namespace + ".svc:9200" in container.args
    assert password_secret_of(apis, namespace, "on-shared-rally") == "shared-es-elastic-user"

    standin_kubelet.finish_job_pod(namespace, "on-shared-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    wait_for(lambda: ("Normal", "RaceSucceeded") in events(apis, namespace, "on-shared"),
             what="the final Event, posted once the cleanup is decided")
    assert es_exists(eck, namespace, "shared"), "cleanup Delete applies only to a cluster the Experiment owns"
    assert "ClusterDeleted" not in [reason for _, reason in events(apis, namespace, "on-shared")]


def test_a_reference_to_a_missing_cluster_fails_after_the_ready_timeout_from_its_creation(
        apis, eck, namespace, operator):
    """The timeout counts from the Experiment's creation: made while the operator was down and
    past its timeout when the operator comes back, it fails at once, not a timeout later."""
    operator.stop()
    created = create_experiment(apis, namespace, "dangling", elasticsearch=None,
                                target={"elasticsearchRef": {"name": "nowhere"}},
                                lifecycle={"clusterReadyTimeoutSeconds": 30})
    deadline = datetime.strptime(created["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    time.sleep(max(0.0, (deadline + timedelta(seconds=31) - datetime.now(UTC)).total_seconds()))
    operator.start()
    failed = wait_phase(apis, namespace, "dangling", "Failed", timeout=15)
    assert failed["status"]["reason"] == "ClusterNotFound"
    assert "nowhere" in failed["status"]["message"]
    assert not es_exists(eck, namespace, "nowhere"), "a referenced cluster is never created"


def test_an_external_cluster_gets_its_credentials_from_secrets_only(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_experiment(apis, namespace, "external", elasticsearch=None, target={"external": {
        "url": "https://es.example.internal:9243", "username": "bench",
        "passwordSecret": {"name": "es-creds", "key": "password"}, "caSecret": {"name": "es-ca", "key": "ca.pem"}}})
    benchmarking = wait_phase(apis, namespace, "external", "Benchmarking")
    assert "clusterName" not in benchmarking["status"]
    assert eck.list(namespace) == [], "no cluster is created for an external target"
    container = container_of(apis, namespace, "external-rally")
    assert "--target-url=https://es.example.internal:9243" in container.args
    env = {e.name: e for e in container.env}
    assert env["ES_USERNAME"].value == "bench"
    assert password_secret_of(apis, namespace, "external-rally") == "es-creds"
    standin_kubelet.finish_job_pod(namespace, "external-rally", runner_log(
        RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json)), exit_code=0)
    assert wait_phase(apis, namespace, "external", "Succeeded")["status"]["results"]["tasks"]


def test_a_profile_of_a_referenced_cluster_whose_pods_record_nothing_fails_before_the_race(
        apis, eck, namespace, operator):
    create_unowned_cluster(apis, namespace, "plain")
    create_experiment(apis, namespace, "profiled-ref", elasticsearch=None,
                      target={"elasticsearchRef": {"name": "plain"}}, profile={"event": "cpu"})
    eck.make_ready(namespace, "plain")
    failed = wait_phase(apis, namespace, "profiled-ref", "Failed")
    assert failed["status"]["reason"] == "InvalidSpec"
    assert "the nodes of Elasticsearch plain record no profile" in failed["status"]["message"]
    assert apis.batch.list_namespaced_job(namespace).items == []
    assert es_exists(eck, namespace, "plain")
