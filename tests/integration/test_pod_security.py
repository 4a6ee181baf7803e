"""The Rally pod the operator builds is admitted under Pod Security "restricted" by the real
API server's PodSecurity admission (enforced on Pods; a dry-run creates nothing).

The namespaces get their labels when they are created: PodSecurity admission reads namespaces
from its informer's cache, which may still hold a namespace without a label patched on a moment
ago (the privileged pod was once admitted so, under load), while a namespace the cache has not
seen yet is read from the API server."""

from kubernetes import client

from esbench.api.models import ExperimentSpec
from esbench.planning import manifests


def test_rally_pod_is_admitted_in_a_restricted_namespace(control_plane):
    core = client.CoreV1Api(control_plane.api_client())
    namespace = control_plane.create_namespace("restricted-", labels={
        "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"})
    experiment = manifests.Experiment(
        "psa", namespace, "00000000-0000-0000-0000-000000000001",
        ExperimentSpec.model_validate({"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}))
    connection = manifests.connection(experiment, manifests.elasticsearch_manifest(experiment))
    template = manifests.rally_job_manifest(experiment, connection, "esbench/esbench:test", "Never")["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "psa-rally", **template["metadata"]},
           "spec": template["spec"]}
    created = core.create_namespaced_pod(namespace, pod, dry_run="All")
    assert created.spec.automount_service_account_token is False


def test_a_privileged_pod_is_refused_there_so_the_check_is_real(control_plane):
    core = client.CoreV1Api(control_plane.api_client())
    namespace = control_plane.create_namespace("restricted-", labels={"pod-security.kubernetes.io/enforce": "restricted"})
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    try:
        core.create_namespaced_pod(namespace, pod, dry_run="All")
    except client.ApiException as error:
        assert error.status == 403 and "violates PodSecurity" in error.body
    else:
        raise AssertionError("PodSecurity admission did not enforce 'restricted'")
