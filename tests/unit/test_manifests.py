"""The manifests built from an Experiment spec, checked without a cluster."""

import json

import pytest
import yaml

from esbench.api.models import ExperimentSpec
from esbench.planning import manifests, readiness


def experiment(**spec_overrides):
    spec = {
        "elasticsearch": {"version": "8.15.3"},
        "workload": {"track": "smoke"},
    }
    for key, value in spec_overrides.items():
        spec[key] = value
    return manifests.Experiment("bench-1", "perf", "0b8f3c1e-uid", ExperimentSpec.model_validate(spec))


def rally_job(exp, image="esbench:dev", pull_policy="Never"):
    """The Job for an Experiment with a cluster of its own (ECK's resource as we create it)."""
    connection = manifests.connection(exp, manifests.elasticsearch_manifest(exp))
    return manifests.rally_job_manifest(exp, connection, image, pull_policy)


def password_file(pod):
    """The Secret key the runner reads its password from, and the file's mode: ES_PASSWORD_FILE
    names a file of a read-only secret volume that holds that key alone."""
    [container] = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert "ES_PASSWORD" not in env, "no password in the environment, not even by reference"
    directory, _, file = env["ES_PASSWORD_FILE"]["value"].rpartition("/")
    [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
    assert mount["readOnly"] is True
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    [item] = volume["secret"]["items"]
    assert item["path"] == file
    return {"name": volume["secret"]["secretName"], "key": item["key"]}, volume["secret"]["defaultMode"]


def test_every_child_is_owned_by_the_experiment_and_labelled():
    exp = experiment()
    for manifest in (
        manifests.elasticsearch_manifest(exp),
        rally_job(exp),
        manifests.race_json_configmap(exp, {"race-id": "x"}),
    ):
        meta = manifest["metadata"]
        assert meta["namespace"] == "perf"
        assert meta["ownerReferences"] == [
            {"apiVersion": "esbench.io/v1alpha1", "kind": "Experiment", "name": "bench-1",
             "uid": "0b8f3c1e-uid", "controller": True, "blockOwnerDeletion": True}
        ]
        assert meta["labels"]["esbench.io/experiment"] == "bench-1"
        assert meta["labels"]["app.kubernetes.io/name"] == "esbench"
        assert meta["labels"]["app.kubernetes.io/instance"] == "bench-1"


def test_elasticsearch_defaults_to_one_node_with_a_pvc_and_tls():
    manifest = manifests.elasticsearch_manifest(experiment())
    assert manifest["apiVersion"] == "elasticsearch.k8s.elastic.co/v1"
    assert manifest["metadata"]["name"] == "bench-1"
    assert manifest["spec"]["version"] == "8.15.3"
    assert "http" not in manifest["spec"]  # ECK's default: self-signed TLS
    [node_set] = manifest["spec"]["nodeSets"]
    assert node_set["name"] == "default" and node_set["count"] == 1
    assert node_set["config"] == {"node.store.allow_mmap": False}
    [claim] = node_set["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "elasticsearch-data"
    assert claim["spec"]["resources"]["requests"]["storage"] == "10Gi"


def test_elasticsearch_reads_its_containers_cgroup_with_a_heap_or_without():
    """Under cgroup v1 Elasticsearch finds its container's cgroup only when told it is the root; else
    its node stats give the reproducibility record no memory limit, and no container CPU."""
    for heap, options in ((None, ""), ("1g", " -Xms1g -Xmx1g")):
        es = {"version": "8.15.3", **({"heap": heap} if heap else {})}
        [node_set] = manifests.elasticsearch_manifest(experiment(elasticsearch=es))["spec"]["nodeSets"]
        [container] = node_set["podTemplate"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["ES_JAVA_OPTS"] == "-Des.cgroups.hierarchy.override=/" + options


def test_elasticsearch_topology_resources_heap_storage_config_and_image():
    manifest = manifests.elasticsearch_manifest(experiment(elasticsearch={
        "version": "8.15.3",
        "nodeSets": [{"name": "masters", "count": 3, "roles": ["master"]},
                     {"name": "data", "count": 2, "roles": ["data", "ingest"]}],
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}},
        "heap": "2g",
        "storage": {"type": "EmptyDir"},
        "config": {"indices.memory.index_buffer_size": "20%", "node.store.allow_mmap": "true"},
        "image": "registry.local/elasticsearch:8.15.3",
        "tls": False,
    }))
    spec = manifest["spec"]
    assert spec["image"] == "registry.local/elasticsearch:8.15.3"
    assert spec["http"] == {"tls": {"selfSignedCertificate": {"disabled": True}}}
    masters, data = spec["nodeSets"]
    assert (masters["name"], masters["count"], masters["config"]["node.roles"]) == ("masters", 3, ["master"])
    assert (data["name"], data["count"], data["config"]["node.roles"]) == ("data", 2, ["data", "ingest"])
    assert data["config"]["indices.memory.index_buffer_size"] == "20%"
    assert data["config"]["node.store.allow_mmap"] == "true"  # the user's config wins over our default
    pod = data["podTemplate"]["spec"]
    [container] = pod["containers"]
    assert container["name"] == "elasticsearch"
    assert container["env"] == [{"name": "PRE_STOP_ADDITIONAL_WAIT_SECONDS", "value": "0"},
                                {"name": "ES_JAVA_OPTS", "value": "-Des.cgroups.hierarchy.override=/ -Xms2g -Xmx2g"}]
    assert container["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    assert pod["volumes"] == [{"name": "elasticsearch-data", "emptyDir": {}}]
    assert "volumeClaimTemplates" not in data
    assert readiness.expected_nodes(manifest) == 5


def test_a_cluster_for_reused_indices_keeps_its_snapshots_on_a_volume_of_its_one_pod():
    """workload.reuseIndex on a sweep's shared cluster: path.repo, which the runner finds."""
    exp = experiment(elasticsearch={"version": "8.15.3", "storage": {"type": "EmptyDir"}})
    [node_set] = manifests.cluster_manifest(exp, "shared", exp.spec.elasticsearch, snapshots=True)["spec"]["nodeSets"]
    assert node_set["config"]["path.repo"] == [manifests.SNAPSHOTS_DIR]
    pod = node_set["podTemplate"]["spec"]
    assert pod["volumes"] == [{"name": "elasticsearch-data", "emptyDir": {}}, {"name": "esbench-snapshots", "emptyDir": {}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "esbench-snapshots", "mountPath": manifests.SNAPSHOTS_DIR}]
    # Not without reuse; not on several nodes (a volume of one pod is no shared filesystem); and
    # never over a path.repo of the spec's own.
    for es, snapshots in (({"version": "8.15.3"}, False), ({"version": "8.15.3", "nodeCount": 3}, True),
                          ({"version": "8.15.3", "config": {"path.repo": "/mnt/nfs"}}, True)):
        exp = experiment(elasticsearch=es)
        manifest = manifests.cluster_manifest(exp, "shared", exp.spec.elasticsearch, snapshots=snapshots)
        for node_set in manifest["spec"]["nodeSets"]:
            assert node_set["config"].get("path.repo") in (None, "/mnt/nfs"), es
            assert "volumeMounts" not in node_set["podTemplate"]["spec"]["containers"][0], es


@pytest.mark.parametrize("version", ["7.17.29", "8.7.1", "9.1.5"])
def test_every_container_eck_makes_is_restricted_whatever_the_version(version):
    """ECK's own defaults meet Pod Security "restricted" only from 8.8; tests/integration/
    test_real_eck.py has the API server admit the pods the real ECK makes from these."""
    [node_set] = manifests.elasticsearch_manifest(experiment(elasticsearch={"version": version}))["spec"]["nodeSets"]
    pod = node_set["podTemplate"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    containers = {c["name"]: c["securityContext"] for c in pod["containers"] + pod["initContainers"]}
    assert containers.keys() == {"elasticsearch", "elastic-internal-init-filesystem", "elastic-internal-suspend"}
    for context in containers.values():
        assert context["capabilities"] == {"drop": ["ALL"]} and context["allowPrivilegeEscalation"] is False


def test_storage_class_reaches_the_claim():
    manifest = manifests.elasticsearch_manifest(experiment(elasticsearch={
        "version": "8.15.3", "storage": {"size": "50Gi", "storageClassName": "fast-ssd"}}))
    claim = manifest["spec"]["nodeSets"][0]["volumeClaimTemplates"][0]["spec"]
    assert claim == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "50Gi"}},
                     "storageClassName": "fast-ssd"}


def test_rally_job_gets_credentials_as_files_from_secrets_and_no_api_token():
    job = rally_job(experiment())
    assert job["metadata"]["name"] == "bench-1-rally"
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 7200 + 120
    pod = job["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["restartPolicy"] == "Never"
    [container] = pod["containers"]
    assert container["image"] == "esbench:dev" and container["imagePullPolicy"] == "Never"
    env = {e["name"]: e for e in container["env"]}
    assert password_file(pod) == ({"name": "bench-1-es-elastic-user", "key": "elastic"}, 0o400)
    assert env["ES_USERNAME"]["value"] == "elastic"
    assert not any("valueFrom" in e for e in container["env"])
    assert json.loads(env["ESBENCH_SPEC"]["value"])["workload"]["track"] == "smoke"
    assert container["args"] == [
        "race",
        "--target-url=https://bench-1-es-http.perf.svc:9200",
        "--race-id=0b8f3c1e-uid",
        "--work-dir=/work",
        "--ca-file=/etc/esbench/ca/ca.crt",
    ]
    ca_volume = next(v for v in pod["volumes"] if v["name"] == "es-ca")
    assert ca_volume["secret"]["secretName"] == "bench-1-es-http-certs-public"
    assert not any("password" in arg.lower() for arg in container["args"])


def test_rally_pod_meets_pod_security_restricted():
    pod = rally_job(experiment(), pull_policy="IfNotPresent")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = pod["containers"][0]["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert {"/work", "/tmp"} <= mounts  # writable places despite the read-only root


def test_the_rally_pod_and_the_operator_run_as_the_high_uid_of_the_esbench_image(repo_root):
    """One uid of 10000 or more (checkov's CKV_K8S_40) in both image builds, the chart and the Job."""
    uid = manifests.RUNNER_UID
    assert uid >= 10000
    pod = rally_job(experiment())["spec"]["template"]["spec"]["securityContext"]
    assert (pod["runAsUser"], pod["runAsGroup"], pod["fsGroup"]) == (uid, uid, uid)
    dockerfile = (repo_root / "operator" / "Dockerfile").read_text()
    offline_image = (repo_root / "scripts" / "images" / "esbench.sh").read_text()
    for build in (dockerfile, offline_image):
        assert f"groupadd --gid {uid} esbench" in build and f"useradd --uid {uid} --gid esbench" in build
    assert f"USER {uid}:{uid}\n" in dockerfile and f"--user {uid}:{uid} " in offline_image
    values = yaml.safe_load((repo_root / "charts" / "esbench" / "values.yaml").read_text())
    assert {key: values["podSecurityContext"][key] for key in ("runAsUser", "runAsGroup", "fsGroup")} == {
        "runAsUser": uid, "runAsGroup": uid, "fsGroup": uid}
    assert (values["securityContext"]["runAsUser"], values["securityContext"]["runAsGroup"]) == (uid, uid)


def test_rally_job_without_tls_uses_http_and_mounts_no_ca():
    job = rally_job(
        experiment(elasticsearch={"version": "7.17.29", "tls": False}, lifecycle={"raceTimeoutSeconds": 600},
                   rally={"image": "mine/rally:1", "resources": {"limits": {"cpu": "1"}}}))
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert "--target-url=http://bench-1-es-http.perf.svc:9200" in container["args"]
    assert not any(a.startswith("--ca-file") for a in container["args"])
    assert all(v["name"] != "es-ca" for v in job["spec"]["template"]["spec"]["volumes"])
    assert container["image"] == "mine/rally:1"
    assert container["resources"] == {"limits": {"cpu": "1"}}
    assert job["spec"]["activeDeadlineSeconds"] == 600 + 120


def test_the_rally_container_gets_the_operators_default_resources_unless_the_experiment_sets_its_own():
    guaranteed = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}

    def resources(exp, default):
        connection = manifests.connection(exp, manifests.elasticsearch_manifest(exp))
        job = manifests.rally_job_manifest(exp, connection, "esbench:dev", "Never", default_resources=default)
        return job["spec"]["template"]["spec"]["containers"][0].get("resources")

    assert resources(experiment(), guaranteed) == guaranteed
    assert resources(experiment(rally={"resources": {"limits": {"cpu": "3"}}}), guaranteed) == {"limits": {"cpu": "3"}}
    assert resources(experiment(), None) is None  # no setting: BestEffort, as before the chart's default


def test_race_json_configmap_is_immutable_and_gzips_when_large():
    exp = experiment()
    small = manifests.race_json_configmap(exp, {"race-id": "r1"})
    assert small["metadata"]["name"] == "bench-1-race"
    assert small["immutable"] is True
    assert json.loads(small["data"]["race.json"]) == {"race-id": "r1"}
    large = manifests.race_json_configmap(exp, {"blob": "x" * 2_000_000})
    assert "data" not in large and "race.json.gz" in large["binaryData"]
    assert len(large["binaryData"]["race.json.gz"]) < 100_000
    # Read back as written, for the results store.
    assert manifests.race_json_of(small) == {"race-id": "r1"}
    assert manifests.race_json_of(large) == {"blob": "x" * 2_000_000}
    assert manifests.race_json_of({"data": {}}) is None


@pytest.mark.parametrize("codec", ["default", "best_compression"])
def test_spec_round_trips_through_the_job_environment(codec):
    exp = experiment(index={"codec": codec, "shards": 2, "replicas": 0, "refreshInterval": "30s",
                            "settings": {"index.translog.durability": "async"}})
    job = rally_job(exp)
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert ExperimentSpec.model_validate(json.loads(env["ESBENCH_SPEC"]["value"])) == exp.spec


def test_rally_job_against_a_referenced_eck_cluster_uses_its_service_and_secrets():
    exp = experiment(elasticsearch=None, target={"elasticsearchRef": {"name": "shared"}})
    assert not exp.owns_cluster and exp.cluster == "shared"
    plain_http = {"spec": {"http": {"tls": {"selfSignedCertificate": {"disabled": True}}}}}
    for elasticsearch, url, ca in (({"spec": {}}, "https://shared-es-http.perf.svc:9200", True),
                                   (plain_http, "http://shared-es-http.perf.svc:9200", False)):
        job = manifests.rally_job_manifest(exp, manifests.connection(exp, elasticsearch), "esbench:dev", "Never")
        container = job["spec"]["template"]["spec"]["containers"][0]
        assert f"--target-url={url}" in container["args"]
        assert ("--ca-file=/etc/esbench/ca/ca.crt" in container["args"]) is ca
        assert password_file(job["spec"]["template"]["spec"])[0] == {"name": "shared-es-elastic-user", "key": "elastic"}
        assert job["metadata"]["ownerReferences"][0]["name"] == "bench-1"  # the Job is still the Experiment's


def test_rally_job_against_an_external_cluster_takes_secrets_by_reference():
    exp = experiment(elasticsearch=None, target={"external": {
        "url": "https://es.example.com:9243", "username": "bench",
        "passwordSecret": {"name": "es-creds", "key": "password"}, "caSecret": {"name": "es-ca", "key": "root.pem"}}})
    assert exp.cluster is None
    job = manifests.rally_job_manifest(exp, manifests.connection(exp, None), "esbench:dev", "Never")
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--target-url=https://es.example.com:9243" in container["args"]
    env = {e["name"]: e for e in container["env"]}
    assert env["ES_USERNAME"]["value"] == "bench"
    assert password_file(pod)[0] == {"name": "es-creds", "key": "password"}
    [ca] = [v for v in pod["volumes"] if v["name"] == "es-ca"]
    assert ca["secret"] == {"secretName": "es-ca", "items": [{"key": "root.pem", "path": "ca.crt"}]}


def test_rally_job_against_an_open_external_cluster_sends_no_credentials():
    exp = experiment(elasticsearch=None, target={"external": {"url": "http://es:9200"}})
    container = manifests.rally_job_manifest(exp, manifests.connection(exp, None), "esbench:dev", "Never")[
        "spec"]["template"]["spec"]["containers"][0]
    assert {e["name"] for e in container["env"]} == {"ESBENCH_SPEC", "HOME"}
    assert not any(a.startswith("--ca-file") for a in container["args"])
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/work", "/tmp"}
