"""The Helm chart charts/esbench: lints clean, renders what the operator needs, and what it
renders is accepted by a real kube-apiserver, under Pod Security "restricted".

Static checks read `helm template` output. The API-server checks use the integration tests'
control plane (real kube-apiserver, real RBAC and PodSecurity admission): server-side
dry-runs, and one real `helm install` per RBAC mode whose grants are then asked of the
API server's own authorizer (SubjectAccessReview). No operator pod runs here.
"""

from __future__ import annotations

import copy
import json
import time
import uuid

import pytest
from kubernetes import client

from esbench.api import models
from esbench.api.models import ExperimentSpec
from esbench.controller import config
from esbench.planning import manifests, names
from tests.support.waiting import wait_for

WATCHED = ["team-a", "team-b"]
MODES = {"all-namespaces": {}, "watch-namespaces": {"watchNamespaces": WATCHED}}
NETWORK_POLICIES = {"watchNamespaces": WATCHED, "networkPolicy": {"enabled": True, "experiments": {"enabled": True}}}

# What the operator does in a namespace it watches: (API group, resource, subresource, verbs).
# Kept here on purpose, apart from the chart, as the specification its Roles must meet.
OPERATOR_NEEDS = [
    ("esbench.io", "experiments", "", ["get", "list", "watch", "patch", "delete", "create"]),
    ("esbench.io", "experiments", "status", ["patch"]),
    ("esbench.io", "experimentsweeps", "", ["get", "list", "watch", "patch", "create", "delete"]),
    ("esbench.io", "experimentsweeps", "status", ["patch"]),
    ("esbench.io", "experimentschedules", "", ["get", "list", "watch", "patch"]),
    ("esbench.io", "experimentschedules", "status", ["patch"]),
    ("elasticsearch.k8s.elastic.co", "elasticsearches", "", ["create", "get", "list", "watch", "delete"]),
    ("batch", "jobs", "", ["create", "get", "list", "watch"]),
    ("", "pods", "", ["list"]),
    ("", "pods", "log", ["get"]),
    ("", "configmaps", "", ["create"]),
    ("", "events", "", ["create", "list"]),  # kopf posts core/v1 Events; ECK explains Invalid in one
]
# What is read cluster-wide whatever the namespaces: CRDs (kopf), nodes (the reproducibility record).
CLUSTER_NEEDS = [("apiextensions.k8s.io", "customresourcedefinitions", "", ["list", "watch"]),
                 ("", "nodes", "", ["get"])]
# With --namespace, kopf also follows namespaces.
KOPF_NAMESPACE_NEEDS = [("", "namespaces", "", ["list", "watch"])]
# The watches kopf opens across all namespaces when it runs without --namespace.
CLUSTER_WIDE_WATCHES = [
    ("esbench.io", "experiments", "", ["list", "watch"]),
    ("esbench.io", "experimentsweeps", "", ["list", "watch"]),
    ("esbench.io", "experimentschedules", "", ["list", "watch"]),
    ("elasticsearch.k8s.elastic.co", "elasticsearches", "", ["list", "watch"]),
    ("batch", "jobs", "", ["list", "watch"]),
]
ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def the(objects: list[dict], kind: str) -> dict:
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def release_name() -> str:
    return f"esbench-{uuid.uuid4().hex[:6]}"


# --- the chart on its own ----------------------------------------------------------------


@pytest.mark.parametrize("values", MODES.values(), ids=MODES.keys())
def test_helm_lint_strict_is_clean(helm, values):
    result = helm.run("lint", "--strict", str(helm.chart), *helm.value_args(values))
    assert "0 chart(s) failed" in result.stdout
    assert "[WARNING]" not in result.stdout and "[ERROR]" not in result.stdout, result.stdout


@pytest.mark.parametrize("values, complaint", [
    ({"replicas": 2}, "replicas"),
    ({"operator": {"rallyImage": "", "watchNamespaces": ["x"]}}, "watchNamespaces"),
    ({"image": {"repository": "esbench/esbench", "pullPolicy": "Sometimes"}}, "image.pullPolicy"),
    ({"watchNamespaces": ["team-*"]}, "watchNamespaces.0"),
    ({"networkPolicy": {"enabled": True, "egress": []}}, "networkPolicy"),
    ({"networkPolicy": {"apiServer": {"cidrs": ["10.0.0.10"]}}}, "networkPolicy.apiServer.cidrs.0"),
], ids=["unknown top-level key", "unknown operator key", "bad pull policy", "namespace pattern",
        "unknown networkPolicy key", "address without prefix length"])
def test_values_schema_refuses_what_the_chart_does_not_support(helm, values, complaint):
    result = helm.run("template", "x", str(helm.chart), *helm.value_args(values), check=False)
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


def test_an_existing_service_account_must_be_named_rather_than_default(helm):
    result = helm.run("template", "x", str(helm.chart), "--set", "serviceAccount.create=false", check=False)
    assert result.returncode != 0 and "serviceAccount.name is required" in result.stderr
    objects = helm.template({"serviceAccount": {"create": False, "name": "mine"}})
    assert not of_kind(objects, "ServiceAccount")
    assert the(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "mine"
    assert the(objects, "ClusterRoleBinding")["subjects"][0]["name"] == "mine"


def test_deployment_runs_one_esbench_operator_at_a_time_with_liveness_and_readiness_probes(helm):
    objects = helm.template()
    deployment = the(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["args"] == ["operator", "--liveness", "http://0.0.0.0:8080/healthz", "--metrics-port", "8081"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "liveness"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": "liveness"}
    assert {"name": "liveness", "containerPort": 8080, "protocol": "TCP"} in container["ports"]
    assert pod["serviceAccountName"] == the(objects, "ServiceAccount")["metadata"]["name"]
    labels = deployment["metadata"]["labels"]
    for key in ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
                "app.kubernetes.io/managed-by", "helm.sh/chart"):
        assert key in labels, key
    assert "app.kubernetes.io/version" not in deployment["spec"]["selector"]["matchLabels"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert "emptyDir" in next(v for v in pod["volumes"] if v["name"] == mounts["/tmp"])


def test_the_operators_metrics_are_served_on_a_named_port_behind_a_service_unless_disabled(helm):
    objects = helm.template()
    (container,) = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert {"name": "metrics", "containerPort": 8081, "protocol": "TCP"} in container["ports"]
    (service,) = of_kind(objects, "Service")
    pod = the(objects, "Deployment")["spec"]["template"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 8081, "targetPort": "metrics", "protocol": "TCP"}]
    off = helm.template({"metrics": {"enabled": False}})
    (container,) = the(off, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["args"][-2:] == ["--metrics-port", "0"] and "metrics" not in [p["name"] for p in container["ports"]]
    assert not of_kind(off, "Service")


def test_operator_settings_reach_the_environment_and_rally_defaults_to_the_operator_image(helm):
    def env(values=None):
        (container,) = the(helm.template(values), "Deployment")["spec"]["template"]["spec"]["containers"]
        return container["image"], {e["name"]: e["value"] for e in container["env"]}

    image, defaults = env({"image": {"repository": "registry.example/esbench", "tag": "1.2.3", "pullPolicy": "Always"}})
    assert image == "registry.example/esbench:1.2.3"
    # The Rally pod is Guaranteed unless the Experiment says otherwise: requests equal limits.
    rally = config.Settings.from_env(defaults).rally_resources
    assert rally["requests"] == rally["limits"] and set(rally["limits"]) == {"cpu", "memory"}, rally
    assert defaults.pop("ESBENCH_RALLY_RESOURCES")
    assert defaults == {
        "ESBENCH_RALLY_IMAGE": "registry.example/esbench:1.2.3",
        "ESBENCH_RALLY_IMAGE_PULL_POLICY": "Always",
        "ESBENCH_RESYNC_SECONDS": "10",
        "ESBENCH_MAX_WORKERS": "16",
    }
    _, custom = env({"operator": {"rallyImage": "rally:9", "rallyImagePullPolicy": "Never",
                                  "resyncSeconds": 2.5, "maxWorkers": 4, "rallyResources": None}})
    assert custom == {"ESBENCH_RALLY_IMAGE": "rally:9", "ESBENCH_RALLY_IMAGE_PULL_POLICY": "Never",
                      "ESBENCH_RESYNC_SECONDS": "2.5", "ESBENCH_MAX_WORKERS": "4", "ESBENCH_RALLY_RESOURCES": "null"}
    assert config.Settings.from_env(custom).rally_resources is None


RESULTS_STORE = {"resultsStore": {
    "url": "https://results-es-http.benchmarks.svc:9200", "username": "elastic",
    "passwordSecret": {"name": "results-es-elastic-user", "key": "elastic"},
    "caSecret": {"name": "results-es-http-certs-public"}}}


def test_a_results_store_reaches_the_operator_with_its_password_and_ca_as_files(helm, tmp_path):
    objects = helm.template({**RESULTS_STORE, "networkPolicy": {"enabled": True}})
    pod = the(objects, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}  # every one a plain value: no secretKeyRef
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    secrets = {v["name"]: v["secret"] for v in pod["volumes"] if "secret" in v}
    assert secrets == {
        "results-store-password": {"secretName": "results-es-elastic-user", "items": [{"key": "elastic", "path": "elastic"}]},
        "results-store-ca": {"secretName": "results-es-http-certs-public", "items": [{"key": "ca.crt", "path": "ca.crt"}]},
    }
    assert env["ESBENCH_RESULTS_STORE_PASSWORD_FILE"] == mounts["results-store-password"] + "/elastic"
    assert env["ESBENCH_RESULTS_STORE_CA_FILE"] == mounts["results-store-ca"] + "/ca.crt"
    # What the operator makes of it, with the Secrets' files where the pod would mount them.
    (tmp_path / "elastic").write_text("s3cret\n")
    store = config.Settings.from_env({**env, "ESBENCH_RESULTS_STORE_PASSWORD_FILE": str(tmp_path / "elastic")}).results_store
    assert (store.url, store.username, store.password) == ("https://results-es-http.benchmarks.svc:9200", "elastic", "s3cret")
    assert "s3cret" not in repr(store)
    # Reading race.json back needs get on ConfigMaps, granted only then; and the store's port.
    configmaps = next(r for r in the(objects, "ClusterRole")["rules"] if r["resources"] == ["configmaps"])
    assert configmaps["verbs"] == ["create", "get"]
    assert {"ports": [{"port": 9200, "protocol": "TCP"}]} in the(objects, "NetworkPolicy")["spec"]["egress"]
    without = helm.template()
    assert next(r for r in the(without, "ClusterRole")["rules"] if r["resources"] == ["configmaps"])["verbs"] == ["create"]
    assert config.Settings.from_env({}).results_store is None


def test_a_results_store_the_chart_creates_is_an_eck_cluster_the_operator_reaches_by_ecks_names(helm, tmp_path):
    objects = helm.template({"resultsStore": {"create": {"enabled": True}}, "networkPolicy": {"enabled": True}},
                            release="perf", namespace="bench")
    (store,) = of_kind(objects, "Elasticsearch")
    cluster = store["metadata"]["name"]
    assert (cluster, store["metadata"]["namespace"]) == ("perf-esbench-results", "bench")
    assert store["metadata"]["labels"]["app.kubernetes.io/component"] == "results-store"
    (node_set,) = store["spec"]["nodeSets"]
    assert node_set["config"] == {"node.store.allow_mmap": False}  # no privileged sysctl init container
    pod = the(objects, "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    # The Service and Secrets ECK makes for the cluster, by the names esbench knows them by.
    assert env["ESBENCH_RESULTS_STORE_URL"] == f"https://{names.es_http_service(cluster)}.bench.svc:9200"
    assert env["ESBENCH_RESULTS_STORE_USERNAME"] == "elastic"
    assert secrets == {"results-store-password": names.es_elastic_user_secret(cluster),
                       "results-store-ca": names.es_http_public_certs_secret(cluster)}
    assert env["ESBENCH_RESULTS_STORE_PASSWORD_FILE"].endswith("/elastic")
    assert env["ESBENCH_RESULTS_STORE_CA_FILE"].endswith("/ca.crt")
    configmaps = next(r for r in the(objects, "ClusterRole")["rules"] if r["resources"] == ["configmaps"])
    assert configmaps["verbs"] == ["create", "get"]
    assert {"ports": [{"port": 9200, "protocol": "TCP"}]} in the(objects, "NetworkPolicy")["spec"]["egress"]
    # The operator's own labels stay off the store's pods: its NetworkPolicy selects by them.
    assert "labels" not in node_set["podTemplate"].get("metadata", {})

    both = {"resultsStore": {"url": "https://results.example:9200", "create": {"enabled": True}}}
    result = helm.run("template", "x", str(helm.chart), *helm.value_args(both), check=False)
    assert result.returncode != 0 and "not both" in result.stderr, result.stderr


def test_watched_namespaces_become_flags_and_a_role_in_each_with_only_reads_cluster_wide(helm):
    objects = helm.template(MODES["watch-namespaces"])
    (container,) = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["args"][:5] == ["operator", "--namespace", "team-a", "--namespace", "team-b"]
    assert sorted(r["metadata"]["namespace"] for r in of_kind(objects, "Role")) == WATCHED
    assert sorted(b["metadata"]["namespace"] for b in of_kind(objects, "RoleBinding")) == WATCHED
    cluster_rules = the(objects, "ClusterRole")["rules"]
    assert {r for rule in cluster_rules for r in rule["resources"]} == {"customresourcedefinitions", "namespaces", "nodes"}
    assert {v for rule in cluster_rules for v in rule["verbs"]} == {"get", "list", "watch"}


@pytest.mark.parametrize("values", MODES.values(), ids=MODES.keys())
def test_no_role_grants_anything_on_secrets_nor_wildcards(helm, values):
    roles = [o for o in helm.template(values) if o["kind"] in ("ClusterRole", "Role")]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            where = f"{role['kind']} {role['metadata']['name']}: {rule}"
            assert not any(r == "secrets" or r.startswith("secrets/") for r in rule["resources"]), where
            assert "*" not in rule["resources"] + rule["verbs"] + rule["apiGroups"], where
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule, where


def test_the_admission_policy_is_on_by_default_and_gone_when_disabled(helm):
    def policy_kinds(values=None) -> list[str]:
        return sorted(o["kind"] for o in helm.template(values) if o["kind"].startswith("ValidatingAdmissionPolicy"))

    assert policy_kinds() == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]
    assert policy_kinds({"admissionPolicy": {"enabled": False}}) == []


def test_network_policies_are_off_by_default_and_those_of_experiments_need_watched_namespaces(helm):
    assert not of_kind(helm.template(), "NetworkPolicy")
    everywhere = {"networkPolicy": NETWORK_POLICIES["networkPolicy"]}
    result = helm.run("template", "x", str(helm.chart), *helm.value_args(everywhere), check=False)
    assert result.returncode != 0 and "needs watchNamespaces" in result.stderr, result.stderr


def test_the_operator_pod_may_reach_the_api_server_and_dns_only_and_be_probed_and_scraped(helm):
    objects = helm.template({"networkPolicy": {"enabled": True}})
    [policy] = of_kind(objects, "NetworkPolicy")
    assert policy["metadata"]["namespace"] == "esbench-system"
    pod = the(objects, "Deployment")["spec"]["template"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["ingress"] == [{"ports": [{"port": "liveness", "protocol": "TCP"}]},
                                         {"ports": [{"port": "metrics", "protocol": "TCP"}]}]
    assert policy["spec"]["egress"] == [
        {"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}]},
        {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]},
    ]
    [narrow] = of_kind(helm.template({"networkPolicy": {"enabled": True, "apiServer": {
        "cidrs": ["10.0.0.10/32"], "ports": [6443]}}}), "NetworkPolicy")
    assert narrow["spec"]["egress"][0] == {"ports": [{"port": 6443, "protocol": "TCP"}],
                                           "to": [{"ipBlock": {"cidr": "10.0.0.10/32"}}]}


def test_experiment_pods_take_ingress_only_from_each_other_and_from_eck_in_each_watched_namespace(helm):
    policies = [p for p in of_kind(helm.template(NETWORK_POLICIES), "NetworkPolicy") if p["metadata"]["namespace"] in WATCHED]
    assert sorted(p["metadata"]["namespace"] for p in policies) == WATCHED
    spec = policies[0]["spec"]
    experiment_pods = spec["podSelector"]["matchLabels"]
    experiment = manifests.Experiment("bench-1", "team-a", "uid", ExperimentSpec.model_validate(
        {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}))
    elasticsearch = manifests.elasticsearch_manifest(experiment)
    rally = manifests.rally_job_manifest(experiment, manifests.connection(experiment, elasticsearch), "esbench", "Never")
    for pod_labels in (elasticsearch["spec"]["nodeSets"][0]["podTemplate"]["metadata"]["labels"],
                       rally["spec"]["template"]["metadata"]["labels"]):
        assert experiment_pods.items() <= pod_labels.items(), "the policy must select what the operator creates"
    assert spec["policyTypes"] == ["Ingress"]  # egress open: external clusters, Git tracks
    assert spec["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": experiment_pods}}]},
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "elastic-system"}}}],
         "ports": [{"port": 9200, "protocol": "TCP"}]},
    ]


# --- against a real API server -----------------------------------------------------------


def dry_run(kubectl, objects: list[dict]):
    """Server-side dry-run create of every object: full validation and admission, nothing stored."""
    return kubectl("create", "--dry-run=server", "-o", "name", "-f", "-",
                   stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


# What is rendered: each RBAC mode, and the chart's own results store (an ECK Elasticsearch, held to ECK's CRD).
RENDERED = {**MODES, "created-store": {"resultsStore": {"create": {"enabled": True}}}}


@pytest.mark.parametrize("mode", RENDERED.keys())
def test_rendered_chart_is_accepted_by_the_api_server_in_a_restricted_namespace(
        helm, kubectl, control_plane, restricted_namespace, mode):
    values = copy.deepcopy(RENDERED[mode])
    extra = []
    if "watchNamespaces" in values:  # Roles go into the watched namespaces: they must exist
        extra = [control_plane.create_namespace("esbench-watched-") for _ in WATCHED]
        values["watchNamespaces"] = extra
    try:
        objects = helm.template(values, release=release_name(), namespace=restricted_namespace)
        result = dry_run(kubectl, objects)
        assert result.returncode == 0, result.stderr
        # PodSecurity does not refuse Deployments, but it warns about their pod template.
        assert "Warning" not in result.stderr, result.stderr
        assert len(result.stdout.split()) == len(objects)
    finally:
        for name in extra:
            control_plane.delete_namespace(name)


def test_network_policies_are_accepted_by_the_api_server(helm, kubectl, control_plane, restricted_namespace):
    watched = control_plane.create_namespace("esbench-watched-")
    try:
        values = {**NETWORK_POLICIES, "watchNamespaces": [watched]}
        policies = of_kind(helm.template(values, release=release_name(), namespace=restricted_namespace),
                           "NetworkPolicy")
        result = dry_run(kubectl, policies)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.split()) == len(policies) == 2
    finally:
        control_plane.delete_namespace(watched)


def test_operator_pod_is_admitted_under_pod_security_restricted(helm, kubectl, control_plane, restricted_namespace):
    """PodSecurity enforces on Pods only, so the Deployment's pod template is submitted as a Pod."""
    objects = helm.template(release=release_name(), namespace=restricted_namespace)
    with control_plane.api_client() as api_client:  # Pods are refused if their ServiceAccount is missing
        client.CoreV1Api(api_client).create_namespaced_service_account(
            restricted_namespace, the(objects, "ServiceAccount"))
    template = the(objects, "Deployment")["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**template["metadata"], "name": "esbench-operator", "namespace": restricted_namespace},
           "spec": template["spec"]}

    admitted = dry_run(kubectl, [pod])
    assert admitted.returncode == 0 and "Warning" not in admitted.stderr, admitted.stderr

    # The namespace really enforces "restricted": the same pod without its security contexts is refused.
    insecure = copy.deepcopy(pod)
    insecure["spec"].pop("securityContext")
    insecure["spec"]["containers"][0].pop("securityContext")
    refused = dry_run(kubectl, [insecure])
    assert refused.returncode != 0 and "violates PodSecurity" in refused.stderr, refused.stderr


class Authorizer:
    """Asks the API server's authorizer what the operator's ServiceAccount may do."""

    def __init__(self, api_client: client.ApiClient, namespace: str, service_account: str):
        self.api = client.AuthorizationV1Api(api_client)
        self.user = f"system:serviceaccount:{namespace}:{service_account}"
        self.groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]

    def allowed(self, verb: str, group: str, resource: str, subresource: str = "", namespace: str = "") -> bool:
        review = self.api.create_subject_access_review({"spec": {
            "user": self.user, "groups": self.groups,
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                   "subresource": subresource, "namespace": namespace},
        }})
        return bool(review.status.allowed)

    def missing(self, needs, namespace: str = "") -> list[str]:
        return [f"{verb} {group or 'core'}/{resource}{'/' + sub if sub else ''} in {namespace or 'all namespaces'}"
                for group, resource, sub, verbs in needs for verb in verbs
                if not self.allowed(verb, group, resource, sub, namespace)]

    def granted(self, needs, namespace: str = "") -> list[str]:
        return [f"{verb} {group or 'core'}/{resource}{'/' + sub if sub else ''} in {namespace or 'all namespaces'}"
                for group, resource, sub, verbs in needs for verb in verbs
                if self.allowed(verb, group, resource, sub, namespace)]

    def wait_until_allowed(self, verb: str, group: str, resource: str, namespace: str = "", timeout: float = 15) -> None:
        """RBAC reaches the authorizer through informers: a fresh binding takes a moment."""
        deadline = time.monotonic() + timeout
        while not self.allowed(verb, group, resource, namespace=namespace):
            assert time.monotonic() < deadline, f"{self.user} still may not {verb} {resource} after {timeout}s"
            time.sleep(0.2)


@pytest.mark.parametrize("mode", MODES.keys())
def test_installed_chart_lets_the_operator_do_its_work_and_nothing_with_secrets(
        helm, control_plane, namespace, mode):
    """A real `helm install`; then the API server's authorizer answers for the ServiceAccount."""
    watched = [control_plane.create_namespace("esbench-watched-") for _ in WATCHED] if mode != "all-namespaces" else []
    other = control_plane.create_namespace("esbench-unwatched-")
    release = release_name()
    values = {"watchNamespaces": watched} if watched else {}
    kubeconfig = control_plane.kubeconfig_path
    try:
        installed = helm.run("install", release, str(helm.chart), "--namespace", namespace,
                             *helm.value_args(values), kubeconfig=kubeconfig)
        assert "kubectl get esx" in installed.stdout and "raceJsonConfigMap" in installed.stdout, installed.stdout

        with control_plane.api_client() as api_client:
            authz = Authorizer(api_client, namespace, release)
            authz.wait_until_allowed("list", "apiextensions.k8s.io", "customresourcedefinitions")
            first_watched = watched[0] if watched else other
            authz.wait_until_allowed("create", "batch", "jobs", namespace=first_watched)

            assert authz.missing(CLUSTER_NEEDS) == []
            for ns in watched or [other, namespace]:
                assert authz.missing(OPERATOR_NEEDS, ns) == []
                assert authz.granted([("", "secrets", "", ALL_VERBS)], ns) == []
            assert authz.granted([("", "secrets", "", ALL_VERBS)]) == []
            if watched:
                assert authz.missing(KOPF_NAMESPACE_NEEDS) == []
                assert authz.granted(OPERATOR_NEEDS, other) == [], "grants outside the watched namespaces"
                assert authz.granted(CLUSTER_WIDE_WATCHES) == []
            else:
                assert authz.missing(CLUSTER_WIDE_WATCHES) == []
    finally:
        helm.run("uninstall", release, "--namespace", namespace, kubeconfig=kubeconfig, check=False)
        for name in [*watched, other]:
            control_plane.delete_namespace(name)


def experiment(name: str, **spec) -> dict:
    return {"apiVersion": "esbench.io/v1alpha1", "kind": "Experiment", "metadata": {"name": name},
            "spec": {"workload": {"track": "smoke"}, **spec}}


EXTERNAL = {"external": {"url": "https://es.example:9200", "username": "bench",
                         "passwordSecret": {"name": "bench-credentials", "key": "password"}}}
OWN_CLUSTER = {"elasticsearch": {"version": "8.15.3"}}


def test_admission_policy_lets_a_user_hand_the_rally_pod_only_what_they_could_reach_themselves(
        helm, kubectl, control_plane, namespace):
    """The chart's ValidatingAdmissionPolicy on the real API server, for a user (alice,
    impersonated) allowed to create Experiments and sweeps but, at first, nothing else: the
    API server's authorizer decides for every Secret, cluster and image the spec names."""
    objects = helm.template(release=release_name(), namespace="esbench-system")
    policy = [o for o in objects if o["kind"].startswith("ValidatingAdmissionPolicy")]
    operator_account = f"system:serviceaccount:esbench-system:{the(objects, 'ServiceAccount')['metadata']['name']}"

    def grant(name: str, rules: list[dict], user: str = "alice") -> None:
        role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": name, "namespace": namespace}, "rules": rules}
        binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": name, "namespace": namespace},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
        applied = kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [role, binding]}))
        assert applied.returncode == 0, applied.stderr

    def create(body: dict, user: str = "alice"):
        return kubectl("create", "--dry-run=server", "-o", "name", "-n", namespace, f"--as={user}", "-f", "-",
                       stdin=json.dumps(body))

    def refused(body: dict, user: str = "alice") -> str:
        result = create(body, user)
        assert result.returncode != 0, f"{body['metadata']['name']} was admitted"
        return result.stderr

    def admitted(body: dict, user: str = "alice") -> None:
        result = create(body, user)
        assert result.returncode == 0, result.stderr

    esbench_objects = [{"apiGroups": ["esbench.io"], "resources": ["experiments", "experimentsweeps", "experimentschedules"],
                        "verbs": ["create", "get", "update", "patch"]}]
    grant("experimenter", esbench_objects)
    grant("operator", esbench_objects, user=operator_account)
    with_secret = experiment("external", target=EXTERNAL)
    # RBAC alone: no policy yet. An installed chart's policy outlives `helm uninstall` for a
    # moment in the API server's admission cache (a red CI met one): wait for it to drop.
    policies = kubectl("get", "validatingadmissionpolicies", "-o", "name")
    assert policies.returncode == 0 and policies.stdout.strip() == "", policies.stdout + policies.stderr
    wait_for(lambda: create(with_secret).returncode == 0, what="no admission policy to apply")
    applied = kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": policy}))
    assert applied.returncode == 0, applied.stderr
    try:
        # The API server loads a new policy in the background: wait for its first refusal.
        message = wait_for(lambda: (result := create(with_secret)).returncode != 0 and result.stderr,
                           what="the admission policy to take effect")
        assert "you may not get Secret bench-credentials" in message and "spec.target.external.passwordSecret" in message

        grant("read-bench-credentials", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"],
                                          "resourceNames": ["bench-credentials"]}])
        wait_for(lambda: create(with_secret).returncode == 0, what="alice's right to read the Secret to reach the authorizer")
        with_ca = experiment("external-ca", target={"external": {**EXTERNAL["external"],
                                                                  "caSecret": {"name": "bench-ca", "key": "ca.crt"}}})
        assert "you may not get Secret bench-ca" in refused(with_ca)

        assert "you may not get Elasticsearch prod and its Secret prod-es-elastic-user" in refused(
            experiment("ref", target={"elasticsearchRef": {"name": "prod"}}))

        own_image = experiment("own-image", **OWN_CLUSTER, rally={"image": "alice/rally:1"})
        git_track = experiment("git-track", **OWN_CLUSTER, workload={
            "track": "mine", "source": "Git", "repository": {"url": "https://example.org/tracks.git"}})
        for body in (own_image, git_track):
            assert "only users who may create pods in" in refused(body)
        es_image = experiment("es-image", elasticsearch={**OWN_CLUSTER["elasticsearch"], "image": "alice/es:1"})
        assert "only users who may create Elasticsearch clusters" in refused(es_image)
        grant("run-pods", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]}])
        wait_for(lambda: create(own_image).returncode == 0, what="alice's right to create pods to reach the authorizer")
        admitted(git_track)
        admitted(experiment("plain", **OWN_CLUSTER))
        assert "only users who may create Elasticsearch clusters" in refused(es_image), "pods are not clusters"
        grant("make-clusters", [{"apiGroups": ["elasticsearch.k8s.elastic.co"], "resources": ["elasticsearches"],
                                 "verbs": ["create"]}])
        wait_for(lambda: create(es_image).returncode == 0,
                 what="alice's right to create Elasticsearch clusters to reach the authorizer")

        # A sweep is checked by its template; the operator creates its runs unchecked.
        sweep = {"apiVersion": "esbench.io/v1alpha1", "kind": "ExperimentSweep", "metadata": {"name": "sweep"},
                 "spec": {"template": {"target": {"external": {**EXTERNAL["external"], "passwordSecret": {
                     "name": "other-credentials", "key": "password"}}}, "workload": {"track": "smoke"}},
                     "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}]}}
        assert "you may not get Secret other-credentials" in refused(sweep)
        # Nor by a cell of its own: include cells are free maps the CRD's rules cannot see into.
        allowed_template = {**sweep["spec"], "template": {**OWN_CLUSTER, "workload": {"track": "smoke"}}}
        for field in models.TEMPLATE_ONLY_FIELDS:
            borrowing = {**sweep, "metadata": {"name": "borrowing"},
                         "spec": {**allowed_template, "include": [{"index.codec": "default"}, {field: "x"}]}}
            assert f"an include cell sets {field}, which cannot vary between cells" in refused(borrowing), field
        admitted({**sweep, "spec": {**allowed_template, "include": [{"index.codec": "lz4", "rally.imagePullPolicy": "Never"}]}})
        run = experiment("sweep-c0-r1-a1", target=sweep["spec"]["template"]["target"])
        admitted(run, user=operator_account)

        # A schedule by what each tick creates, when it is made and whenever its spec changes.
        def schedule(name: str, **what) -> dict:
            return {"apiVersion": "esbench.io/v1alpha1", "kind": "ExperimentSchedule", "metadata": {"name": name},
                    "spec": {"schedule": "0 2 * * *", **what}}

        other_secret = {"target": sweep["spec"]["template"]["target"], "workload": {"track": "smoke"}}
        assert "you may not get Secret other-credentials" in refused(schedule("nightly", experiment=other_secret))
        assert "you may not get Secret other-credentials" in refused(schedule("nightly-sweep", sweep=sweep["spec"]))
        kept = schedule("kept", experiment={**OWN_CLUSTER, "workload": {"track": "smoke"}})
        made = kubectl("create", "-n", namespace, "--as=alice", "-f", "-", stdin=json.dumps(kept))
        assert made.returncode == 0, made.stderr
        changed = kubectl("patch", "experimentschedule", "kept", "-n", namespace, "--as=alice", "--type=merge",
                          "--dry-run=server", "-p", json.dumps({"spec": {"experiment": {
                              "elasticsearch": None, "target": other_secret["target"]}}}))
        assert changed.returncode != 0 and "you may not get Secret other-credentials" in changed.stderr, changed

    finally:
        for obj in policy:
            kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"], "--ignore-not-found")
