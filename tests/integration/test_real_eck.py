"""esbench's Elasticsearch resources through the real ECK operator (v3.5.0, built from its Go
module by scripts/eck-operator.sh), out of cluster against the test API server.

Real: ECK's validation, status and conditions, and the Services, Secrets and StatefulSets it
makes. Not here: pods (the bare control plane has no scheduler or kubelet), so these tests see
a cluster only as ECK reports it before any pod runs; the end-to-end suite runs real pods.
"""

from __future__ import annotations

import base64
import uuid
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from esbench.api.models import ExperimentSpec
from esbench.planning import manifests
from esbench.planning.readiness import readiness
from tests.support.experiments import create_experiment, wait_phase
from tests.support.real_eck import RealEck
from tests.support.standin_eck import GROUP, PLURAL, VERSION, StandinEck, what_esbench_reads
from tests.support.waiting import wait_for

# ECK's own security defaults change at 8.0 (seccomp, fsGroup, dropped capabilities) and at 8.8
# (runAsNonRoot): one version on each side of both, and the newest major.
VERSIONS = ("7.17.29", "8.7.1", "8.15.3", "9.1.5")


@pytest.fixture(scope="module")
def real_eck(control_plane, tmp_path_factory):
    """The real ECK operator, watching one namespace of its own (the stand-in serves the rest)."""
    namespace = control_plane.create_namespace("real-eck-")
    eck = RealEck(control_plane, namespace, tmp_path_factory.mktemp("real-eck")).start()
    yield eck
    eck.stop()
    print("ECK operator log (last lines):\n" + eck.log_tail(100))


@pytest.fixture(scope="module")
def restricted_namespace(control_plane):
    namespace = control_plane.create_namespace("restricted-")
    with control_plane.api_client() as api_client:
        client.CoreV1Api(api_client).patch_namespace(namespace, {"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}}})
    return namespace


def cluster_manifest(namespace: str, name: str, version: str = "8.15.3") -> dict:
    """The Elasticsearch resource esbench makes for an Experiment NAME with default settings."""
    experiment = manifests.Experiment(name, namespace, str(uuid.uuid4()), ExperimentSpec.model_validate(
        {"elasticsearch": {"version": version}, "workload": {"track": "smoke"}}))
    manifest = manifests.elasticsearch_manifest(experiment, manifests.SidecarImage("docker.io/local/esbench:0.1.0"))
    # No Experiment exists here to own it: the garbage collector would delete it at once.
    del manifest["metadata"]["ownerReferences"]
    return manifest


def create(api_client: client.ApiClient, manifest: dict) -> dict:
    return client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        GROUP, VERSION, manifest["metadata"]["namespace"], PLURAL, manifest)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_pods_eck_makes_for_our_cluster_pass_pod_security_restricted(
        control_plane, real_eck, restricted_namespace, version):
    """The pod of the StatefulSet real ECK builds from esbench's resource, as the StatefulSet
    controller would make it, is admitted by the API server's PodSecurity admission (dry run)."""
    api_client = control_plane.api_client()
    manifest = cluster_manifest(real_eck.namespace, "psa-" + version.replace(".", "-"), version)
    create(api_client, manifest)
    apps = client.AppsV1Api(api_client)

    def statefulset():
        real_eck.check_running()
        try:
            return apps.read_namespaced_stateful_set(f"{manifest['metadata']['name']}-es-default", real_eck.namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    made = wait_for(statefulset, 60, "ECK to make the StatefulSet", diagnose=real_eck.log_tail)
    template = api_client.sanitize_for_serialization(made.spec.template)
    pod_name = f"{made.metadata.name}-0"
    # As the StatefulSet controller does: each claim template's volume becomes the pod's own claim.
    claims = {claim.metadata.name: {"name": claim.metadata.name, "persistentVolumeClaim": {
        "claimName": f"{claim.metadata.name}-{pod_name}"}} for claim in made.spec.volume_claim_templates or []}
    volumes = [claims.pop(volume["name"], volume) for volume in template["spec"].get("volumes", [])]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name, "labels": template["metadata"]["labels"]},
           "spec": {**template["spec"], "volumes": [*volumes, *claims.values()]}}
    # ECK kept esbench's sidecar, the pod's one process namespace and the sidecar's view of the data volume.
    sidecar = next(c for c in pod["spec"]["containers"] if c["name"] == manifests.SIDECAR_CONTAINER)
    assert pod["spec"]["shareProcessNamespace"] is True
    assert manifests.ES_DATA_VOLUME in {v["name"] for v in pod["spec"]["volumes"]} & {m["name"] for m in sidecar["volumeMounts"]}
    try:
        client.CoreV1Api(api_client).create_namespaced_pod(restricted_namespace, pod, dry_run="All")
    except ApiException as error:
        pytest.fail(f"Elasticsearch {version}'s pod is refused in a restricted namespace: {error.body}")


def test_the_standin_reports_what_real_eck_reports_before_any_pod(control_plane, real_eck, namespace):
    """The same resource through real ECK and through the stand-in (StandinEck.provision):
    the status fields, conditions and objects esbench reads must agree, so the fast tests built
    on the stand-in cannot drift from the real controller."""
    api_client = control_plane.api_client()
    custom = client.CustomObjectsApi(api_client)
    real = create(api_client, cluster_manifest(real_eck.namespace, "conformance"))
    stood_in = create(api_client, cluster_manifest(namespace, "conformance"))
    standin = StandinEck(api_client)
    standin.provision(namespace, "conformance")

    def settled(namespace: str) -> dict | None:
        real_eck.check_running()
        es = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "conformance")
        status = es.get("status") or {}
        return es if status.get("conditions") and status.get("observedGeneration") == es["metadata"]["generation"] \
            else None

    real = wait_for(lambda: settled(real_eck.namespace), 60, "ECK's status", diagnose=real_eck.log_tail)
    stood_in = settled(namespace)
    assert stood_in, "the stand-in's status is not for the resource's current generation"

    assert what_esbench_reads(stood_in) == what_esbench_reads(real)
    assert not readiness(real).ready

    core = client.CoreV1Api(api_client)
    for es in (real, stood_in):
        own = es["metadata"]["namespace"]
        connection = manifests.eck_connection("conformance", own, es)
        host = urlsplit(connection.url).hostname
        service = core.read_namespaced_service(host.split(".")[0], own)
        assert [(p.name, p.port) for p in service.spec.ports] == [("https", 9200)]
        for ref in (connection.password, connection.ca):
            assert ref.key in core.read_namespaced_secret(ref.name, own).data
        certificate = x509.load_pem_x509_certificate(base64.b64decode(
            core.read_namespaced_secret(connection.ca.name, own).data["tls.crt"]))
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert host in names.get_values_for_type(x509.DNSName)


def test_an_experiment_on_a_cluster_eck_refuses_fails_at_once_with_ecks_reason(
        control_plane, real_eck, apis, operator):
    """A cluster of the user's own without a master node (esbench's admission refuses that
    for its own clusters): ECK marks it Invalid and says why in an Event only."""
    manifest = cluster_manifest(real_eck.namespace, "no-master")
    manifest["spec"]["nodeSets"][0]["config"]["node.roles"] = ["data"]
    create(control_plane.api_client(), manifest)
    create_experiment(apis, real_eck.namespace, "on-no-master", elasticsearch=None,
                      target={"elasticsearchRef": {"name": "no-master"}})
    failed = wait_phase(apis, real_eck.namespace, "on-no-master", "Failed")
    assert failed["status"]["reason"] == "ClusterInvalid"
    assert failed["status"]["message"] == (
        "ECK refuses Elasticsearch no-master: Elasticsearch.elasticsearch.k8s.elastic.co \"no-master\" is invalid: "
        "spec.nodeSets: Required value: Elasticsearch needs to have at least one master node")
