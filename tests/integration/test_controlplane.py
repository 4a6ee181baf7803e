"""The integration harness itself: real controllers doing real work, the stand-in
kubelet doing only the kubelet's part."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.answers import read_json
from tests.support.waiting import wait_for


def job_manifest(name: str, backoff_limit: int = 0) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "rally", "image": "local/rally:1", "command": ["true"]}],
                }
            },
        },
    }


def job_condition(batch: client.BatchV1Api, namespace: str, name: str, kind: str) -> bool:
    job = read_json(batch.read_namespaced_job, name, namespace)
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == kind and c["status"] == "True" for c in conditions)


@pytest.fixture
def api(control_plane):
    with control_plane.api_client() as api_client:
        yield api_client


def test_job_controller_creates_a_pod(api, namespace):
    client.BatchV1Api(api).create_namespaced_job(namespace, job_manifest("make-pod"))
    core = client.CoreV1Api(api)

    pods = wait_for(
        lambda: core.list_namespaced_pod(namespace, label_selector="batch.kubernetes.io/job-name=make-pod").items,
        what="the Job controller to create a Pod",
    )
    assert pods[0].metadata.owner_references[0].kind == "Job"
    assert not pods[0].spec.node_name  # no scheduler: nothing binds it on its own


def test_successful_pod_completes_the_job_and_its_log_is_readable(api, namespace, standin_kubelet):
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(namespace, job_manifest("succeeds"))

    pod = standin_kubelet.finish_job_pod(namespace, "succeeds", log="race done\nall good\n", exit_code=0)

    wait_for(lambda: job_condition(batch, namespace, "succeeds", "Complete"), what="Job Complete")
    # Through the real kube-apiserver, which proxies to the stand-in's /containerLogs.
    assert core.read_namespaced_pod_log(pod, namespace) == "race done\nall good\n"
    assert core.read_namespaced_pod_log(pod, namespace, tail_lines=1) == "all good\n"
    status = core.read_namespaced_pod(pod, namespace).status
    assert status.phase == "Succeeded"
    assert status.container_statuses[0].state.terminated.exit_code == 0


def test_the_api_server_reads_logs_over_one_kept_connection_without_nagle(api, namespace, standin_kubelet):
    """As from a real kubelet (Go's net/http): a TLS handshake per log read, or Nagle's algorithm
    (40 ms a read, waiting for a delayed ACK), would make every read (and the operator's results
    step in make bench) slower than a real kubelet makes it."""
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(namespace, job_manifest("read-often"))
    pod = standin_kubelet.finish_job_pod(namespace, "read-often", log="race done\n", exit_code=0)
    before = len(standin_kubelet.log_requests)

    for _ in range(3):
        assert core.read_namespaced_pod_log(pod, namespace) == "race done\n"

    requests = standin_kubelet.log_requests[before:]
    assert len(requests) == 3 and len({r.peer for r in requests}) == 1, requests
    assert all(r.no_delay for r in requests), requests


def test_the_kubelet_keeps_its_connection_to_the_api_server(api, namespace, standin_kubelet):
    """As a real kubelet (one connection, kept open): an answer the stand-in left unread closed its
    connection, and each pod it finished made the API server accept two new TLS connections."""
    batch = client.BatchV1Api(api)
    for name in ("kept-1", "kept-2", "kept-3"):
        batch.create_namespaced_job(namespace, job_manifest(name))
    standin_kubelet.finish_job_pod(namespace, "kept-1", log="done\n")  # may open the one it keeps
    opened = standin_kubelet.api_connections_opened

    for name in ("kept-2", "kept-3"):
        standin_kubelet.finish_job_pod(namespace, name, log="done\n")

    assert standin_kubelet.api_connections_opened == opened


def test_failing_pod_fails_the_job(api, namespace, standin_kubelet):
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job(namespace, job_manifest("fails", backoff_limit=0))

    standin_kubelet.finish_job_pod(namespace, "fails", log="boom\n", exit_code=1)

    wait_for(lambda: job_condition(batch, namespace, "fails", "Failed"), what="Job Failed")
    assert not job_condition(batch, namespace, "fails", "Complete")


def test_running_pod_counts_as_active_and_ready(api, namespace, standin_kubelet):
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(namespace, job_manifest("runs"))

    pod = standin_kubelet.run_job_pod(namespace, "runs", log="warming up\n")

    wait_for(lambda: (batch.read_namespaced_job("runs", namespace).status.ready or 0) == 1, what="Job to count a ready Pod")
    assert batch.read_namespaced_job("runs", namespace).status.active == 1
    assert core.read_namespaced_pod_log(pod, namespace) == "warming up\n"


def test_deleting_a_job_removes_its_running_pod(api, namespace, standin_kubelet):
    """Real GC deletes the Pod; the stand-in kubelet completes the graceful deletion."""
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    batch.create_namespaced_job(namespace, job_manifest("deleted"))
    pod = standin_kubelet.run_job_pod(namespace, "deleted")

    batch.delete_namespaced_job("deleted", namespace, propagation_policy="Background")

    def pod_gone() -> bool:
        try:
            core.read_namespaced_pod(pod, namespace)
            return False
        except ApiException as error:
            return error.status == 404

    wait_for(pod_gone, what="the Job's Pod to be deleted")


def test_garbage_collector_deletes_dependents(api, namespace):
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, {
        "metadata": {
            "name": "dependent",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}],
        },
    })

    core.delete_namespaced_config_map("owner", namespace)

    def dependent_gone() -> bool:
        try:
            core.read_namespaced_config_map("dependent", namespace)
            return False
        except ApiException as error:
            return error.status == 404

    wait_for(dependent_gone, what="the garbage collector to delete the dependent ConfigMap")


def test_eck_elasticsearch_crd_is_served(api, namespace):
    custom = client.CustomObjectsApi(api)
    group, version, plural = "elasticsearch.k8s.elastic.co", "v1", "elasticsearches"
    custom.create_namespaced_custom_object(group, version, namespace, plural, {
        "apiVersion": f"{group}/{version}",
        "kind": "Elasticsearch",
        "metadata": {"name": "quickstart"},
        "spec": {"version": "8.7.1", "nodeSets": [{"name": "default", "count": 1}]},
    })

    custom.patch_namespaced_custom_object_status(
        group, version, namespace, plural, "quickstart",
        {"status": {"phase": "Ready", "health": "green", "availableNodes": 1, "version": "8.7.1"}},
        _content_type="application/merge-patch+json",
    )

    es = custom.get_namespaced_custom_object(group, version, namespace, plural, "quickstart")
    assert es["status"]["health"] == "green"
    assert es["status"]["availableNodes"] == 1
    assert es["spec"]["nodeSets"][0]["count"] == 1
