"""End to end: the esbench chart on a real Kubernetes, examples/quickstart.yaml through to results.

Real: the API server, scheduler, controllers, kubelet, containerd, kube-proxy, DNS, the
volume provisioner, the operator image installed by Helm, the ECK operator installed with its
own chart, Elasticsearch pods (ECK's HTTPS, basic auth, transport TLS), the Rally Job. Nothing
is stood in for; offline, clusters name the Elasticsearch image of scripts/images/elasticsearch.sh.
See conftest.py for how the cluster is obtained. Every namespace here enforces Pod Security "restricted".
"""

from __future__ import annotations

import base64
import gzip
import json
from datetime import datetime
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.utils import parse_quantity

from esbench.analysis import profiles
from esbench.planning.readiness import readiness
from esbench.planning.status import recorded
from esbench.runner.corpus import TEST_MODE_COUNT
from tests.e2e.harness import ES_VERSION, ES_VERSIONS, ROOT, Cluster, es_image
from tests.support.experiments import condition
from tests.support.standin_eck import eck_status, what_esbench_reads
from tests.support.waiting import wait_for

GROUP, VERSION, PLURAL = "esbench.io", "v1alpha1", "experiments"
ECK = ("elasticsearch.k8s.elastic.co", "v1", "elasticsearches")
QUICKSTART = ROOT / "examples" / "quickstart.yaml"
RACE_TIMEOUT = 900  # cluster start + a smoke race on 2 shared cores takes 2-3 minutes
POLL_SECONDS = 2  # each poll lists several kinds on a busy 2-core node: poll gently


def quickstart(cluster: Cluster, version: str = ES_VERSION, *, test_mode: bool = False,
               **lifecycle: Any) -> dict[str, Any]:
    """examples/quickstart.yaml, as it is but for the version and, on the local node, its offline image.

    test_mode: Rally's --test-mode (it indexes the corpus's first 1,000 documents and runs each
    task a few times): for races whose figures no test reads beyond their presence.
    """
    body = yaml.safe_load(QUICKSTART.read_text())
    assert body["spec"]["elasticsearch"]["version"] == ES_VERSION, (
        f"examples/quickstart.yaml asks for {body['spec']['elasticsearch']['version']}; "
        f"the e2e Elasticsearch image is {ES_VERSION} (scripts/images/elasticsearch.sh VERSION)")
    body["spec"]["elasticsearch"]["version"] = version
    if cluster.flavour == "node":
        body["spec"]["elasticsearch"]["image"] = es_image(version)
    if test_mode:
        body["spec"]["workload"]["testMode"] = True
    if lifecycle:
        body["spec"].setdefault("lifecycle", {}).update(lifecycle)
    return body


class Experiments:
    """The Experiment API of one namespace, plus what a failing test needs to explain itself."""

    def __init__(self, cluster: Cluster, namespace: str, operator_namespace: str):
        self.cluster, self.namespace, self.operator_namespace = cluster, namespace, operator_namespace
        self.custom = client.CustomObjectsApi(cluster.api)
        self.core = client.CoreV1Api(cluster.api)
        self.batch = client.BatchV1Api(cluster.api)
        self.apps = client.AppsV1Api(cluster.api)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, body)

    def get(self, name: str) -> dict[str, Any] | None:
        return _absent_as_none(lambda: self.custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace,
                                                                                PLURAL, name))

    def phase(self, name: str) -> str | None:
        return ((self.get(name) or {}).get("status") or {}).get("phase")

    def wait_finished(self, name: str) -> dict[str, Any]:
        wait_for(lambda: self.phase(name) in ("Succeeded", "Failed"), RACE_TIMEOUT, what=f"Experiment {name} to finish",
                 interval=POLL_SECONDS, diagnose=self.diagnose)
        experiment = self.get(name)
        assert experiment["status"]["phase"] == "Succeeded", (
            f"{experiment['status'].get('reason')}: {experiment['status'].get('message')}\n{self.diagnose()}")
        return experiment

    def wait_recorded(self, name: str) -> dict[str, Any]:
        """The Experiment once written to the results store the chart created (operator fixture):
        its last change."""
        return wait_for(lambda: (e := self.get(name)) and recorded(e) and e, 300,
                        what=f"Experiment {name} to be recorded in the chart's results store", interval=POLL_SECONDS,
                        diagnose=lambda: self.diagnose() + "\n" + self.operator_log()[-3000:])

    def elasticsearches(self) -> list[dict[str, Any]]:
        return self.custom.list_namespaced_custom_object(*ECK[:2], self.namespace, ECK[2])["items"]

    def jobs(self) -> list[client.V1Job]:
        return self.batch.list_namespaced_job(self.namespace).items

    def pods(self) -> list[client.V1Pod]:
        return self.core.list_namespaced_pod(self.namespace).items

    def claims(self) -> list[client.V1PersistentVolumeClaim]:
        return self.core.list_namespaced_persistent_volume_claim(self.namespace).items

    def volume_exists(self, name: str) -> bool:
        return _absent_as_none(lambda: self.core.read_persistent_volume(name)) is not None

    def events(self) -> list[client.CoreV1Event]:
        return self.core.list_namespaced_event(self.namespace).items

    def operator_pods(self) -> list[client.V1Pod]:
        return self.core.list_namespaced_pod(self.operator_namespace,
                                             label_selector="app.kubernetes.io/name=esbench").items

    def operator_log(self) -> str:
        (pod,) = [p for p in self.operator_pods() if not p.metadata.deletion_timestamp]
        return self.core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace)

    def diagnose(self) -> str:
        lines = ["--- experiments:"]
        for item in self.custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL)["items"]:
            lines.append(json.dumps({"name": item["metadata"]["name"], "status": item.get("status")}, default=str)[:3000])
        lines.append("--- elasticsearch status: " + json.dumps([e.get("status") for e in self.elasticsearches()]))
        lines.append("--- pods: " + ", ".join(f"{p.metadata.name}={p.status.phase}" for p in self.pods()))
        lines.append("--- events:")
        lines += [f"{e.reason}: {e.involved_object.kind}/{e.involved_object.name}: {e.message}" for e in self.events()][-30:]
        for pod in self.operator_pods()[:1] + self.pods():
            try:
                log = self.core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace, tail_lines=25)
            except client.ApiException as error:
                log = f"(no log: {error.reason})"
            lines.append(f"--- log of {pod.metadata.namespace}/{pod.metadata.name}:\n{log}")
        return "\n".join(lines)

    def assert_no_pod_was_refused(self) -> None:
        refused = [e.message for e in self.events() if e.reason == "FailedCreate" and "PodSecurity" in (e.message or "")]
        assert not refused, f"Pod Security refused pods: {refused}"


def _absent_as_none(read):
    try:
        return read()
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise


@pytest.fixture
def experiments(cluster, operator, restricted_namespace) -> Experiments:
    return Experiments(cluster, restricted_namespace, operator["namespace"])


def test_helm_installs_an_operator_that_runs_under_pod_security_restricted(cluster, operator):
    apps = client.AppsV1Api(cluster.api)
    deployments = apps.list_namespaced_deployment(operator["namespace"]).items
    assert [d.status.available_replicas for d in deployments] == [1]
    namespace = client.CoreV1Api(cluster.api).read_namespace(operator["namespace"])
    assert namespace.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert "esbench" in cluster.helm("list", "--namespace", operator["namespace"], "--short")


def test_restricted_namespace_refuses_a_privileged_pod(cluster, restricted_namespace):
    """The control for the tests below: Pod Security really is enforced in their namespaces."""
    pod = {"metadata": {"name": "privileged"},
           "spec": {"containers": [{"name": "c", "image": "docker.io/local/pause:3.10",
                                    "securityContext": {"privileged": True}}]}}
    with pytest.raises(client.ApiException) as refused:
        client.CoreV1Api(cluster.api).create_namespaced_pod(restricted_namespace, pod)
    assert refused.value.status == 403 and "violates PodSecurity" in refused.value.body


@pytest.mark.parametrize("version", ES_VERSIONS)
def test_quickstart_succeeds_with_sane_results_and_cleans_up_its_cluster(cluster, operator, experiments, version):
    # The quickstart the README shows (8.7.1) races exactly as it is; the other versions in test mode.
    test_mode = version != ES_VERSION
    body = quickstart(cluster, version, test_mode=test_mode)
    created = experiments.create(body)
    # ECK formed the cluster (it notes the UUID it read from `GET /` on the resource) and its
    # status says what esbench waits for (ECK may write phase Ready before it counts the node).
    ready = wait_for(lambda: next((es for es in experiments.elasticsearches()
                                   if "elasticsearch.k8s.elastic.co/cluster-uuid" in (es["metadata"].get("annotations") or {})
                                   and es.get("status") and readiness(es).ready), None), RACE_TIMEOUT,
                     what="ECK to form the cluster and make it ready", interval=POLL_SECONDS, diagnose=experiments.diagnose)
    # The integration tests' stand-in writes, for a ready cluster, what real ECK wrote here.
    assert what_esbench_reads({**ready, "status": eck_status(ready, up=True)}) == what_esbench_reads(ready)
    experiments.wait_finished("quickstart")
    # Recorded in the results store the chart created (operator fixture): an ECK cluster in the
    # operator's restricted namespace, written over HTTPS with ECK's CA as ECK's elastic user.
    experiment = experiments.wait_recorded("quickstart")
    status = experiment["status"]
    assert condition(experiment, "Recorded")["message"].startswith("Recorded in the results store as race ")
    store = operator["results_store"]
    (deployment,) = experiments.apps.list_namespaced_deployment(operator["namespace"]).items
    env = {e.name: e.value for e in deployment.spec.template.spec.containers[0].env}
    assert env["ESBENCH_RESULTS_STORE_URL"] == f"https://{store}-es-http.{operator['namespace']}.svc:9200"
    (store_pod,) = experiments.core.list_namespaced_pod(
        operator["namespace"], label_selector=f"elasticsearch.k8s.elastic.co/cluster-name={store}").items
    assert store_pod.status.phase == "Running"  # so Pod Security "restricted" admitted it

    assert status["clusterVersion"] == version
    assert status["raceId"] == created["metadata"]["uid"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "ClusterReady": "True", "BenchmarkComplete": "True", "Recorded": "True"}
    results = status["results"]
    assert results["track"] == "smoke" and results["distributionVersion"] == version
    tasks = {task["task"]: task for task in results["tasks"]}
    assert "index-append" in tasks, tasks.keys()
    for task in tasks.values():
        assert task["errorRate"] == 0, task
        assert task["throughput"]["median"] > 0, task
        # The Rally pod's launcher kept each task's requests, and the runner looked for a steady state in them.
        assert test_mode or task["steadyState"]["samples"] > 0, task
        # Rally reports a percentile only from enough samples: test mode's few requests give p100 alone.
        assert task["serviceTime"]["p100" if test_mode else "p50"] > 0 and task["serviceTime"]["unit"] == "ms", task
    assert tasks["index-append"]["throughput"]["unit"] == "docs/s"
    # esbench's sidecar read the node beside each sample: its JVM, found in the pod's process namespace
    # (7.x and 8.x start it differently), and its index files, on its data volume.
    bulk = tasks["index-append"]["resources"]
    assert bulk["jitCpuMs"] > 0 and bulk["gcCpuMs"] >= 0 and bulk["majorPageFaults"] >= 0, bulk
    assert test_mode or bulk["indexFiles"], bulk  # means over the samples inside the task: test mode's may have none
    assert results["cluster"]["storeSizeBytes"] > 0
    assert results["cluster"]["segmentCount"] >= 1
    # As esbench sets every node it creates (models.DEFAULT_NODE_CONFIG), recorded as the node reports it.
    (node,) = results["environment"]["nodes"]
    assert node["mmap"] is False, node
    # The memory the page cache has: the limit the pod runs under, read from its cgroup by the node.
    limit = body["spec"]["elasticsearch"]["resources"]["limits"]["memory"]
    assert node["cgroupMemoryLimitBytes"] == int(parse_quantity(limit)), node
    # The QoS class each pod got, as the kubelet reports it: without rally.resources, the chart's
    # operator.rallyResources make the Rally pod Guaranteed.
    pods = results["environment"]["kubernetes"]
    if not (body["spec"].get("rally") or {}).get("resources"):
        assert pods["rally"]["qosClass"] == "Guaranteed", pods["rally"]
        # The runner read its CPU limit and the CFS periods of the race from the pod's cgroup.
        driver = results["environment"]["loadDriver"]
        assert driver["cpuLimit"] == 0.5 and driver["cpuPeriods"] > 0, driver
        print(f"{version}: the Rally pod throttled in {driver['cpuThrottledPeriods']} of {driver['cpuPeriods']} "
              f"CFS periods ({driver['cpuThrottledSeconds']:.1f} s)")
    assert all(pod["qosClass"] in ("Guaranteed", "Burstable", "BestEffort") for pod in pods["elasticsearch"]), pods
    assert status["headline"]
    created_at = datetime.fromisoformat(experiment["metadata"]["creationTimestamp"])
    print(f"{version}: created -> cluster ready "
          f"{(datetime.fromisoformat(status['clusterReadyTime']) - created_at).total_seconds():.0f} s, -> finished "
          f"{(datetime.fromisoformat(status['completionTime']) - created_at).total_seconds():.0f} s")

    race = experiments.core.read_namespaced_config_map(status["raceJsonConfigMap"], experiments.namespace)
    race_json = json.loads(race.data["race.json"])
    assert race_json["race-id"] == status["raceId"]
    for param, value in body["spec"]["workload"].get("trackParams", {}).items():
        assert race_json["track-params"][param] == value

    # Every pod the Experiment needed (Elasticsearch and Rally) was admitted under "restricted".
    experiments.assert_no_pod_was_refused()
    # cleanup: Delete (the default): the cluster goes once the race is over; the Job stays as a record.
    wait_for(lambda: not experiments.elasticsearches(), 120, what="the cluster to be deleted after the race",
             interval=POLL_SECONDS, diagnose=experiments.diagnose)
    wait_for(lambda: not [p for p in experiments.pods() if "-es-" in p.metadata.name], 120,
             what="the Elasticsearch pods to go", interval=POLL_SECONDS, diagnose=experiments.diagnose)
    assert [job.status.succeeded for job in experiments.jobs()] == [1]


def test_three_profiled_nodes_serve_a_race_on_replicated_shards_store_its_profiles_and_free_their_volumes(
        cluster, experiments):
    """ECK's discovery and transport TLS between three pods; the index's replicas on other nodes.
    Profiled: each pod records from its JVM's start and serves its recordings to the Rally Job,
    which sums the three nodes' stacks per task into a ConfigMap."""
    body = quickstart(cluster, test_mode=True)
    body["metadata"]["name"] = "three-nodes"
    es = body["spec"]["elasticsearch"]
    es.update(nodeCount=3, heap="384m", resources={"requests": {"cpu": "300m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}})
    body["spec"]["index"] = {"shards": 3, "replicas": 1}
    body["spec"]["profile"] = {"event": "cpu"}
    experiments.create(body)
    # The data on volumes of the cluster's default StorageClass (on the node: the local-path
    # provisioner of scripts/node/storage.sh), one claim per pod, bound as the pods are scheduled.
    wait_for(lambda: [c.status.phase for c in experiments.claims()] == ["Bound"] * 3, RACE_TIMEOUT,
             what="three bound data claims", interval=POLL_SECONDS, diagnose=experiments.diagnose)
    volumes = [c.spec.volume_name for c in experiments.claims()]
    experiment = experiments.wait_finished("three-nodes")
    status = experiment["status"]
    created_at = datetime.fromisoformat(experiment["metadata"]["creationTimestamp"])
    print(f"3 nodes: created -> cluster ready "
          f"{(datetime.fromisoformat(status['clusterReadyTime']) - created_at).total_seconds():.0f} s")
    assert "3 nodes, health green" in status["conditions"][0]["message"] + status["conditions"][1]["message"]
    # The index the race made: every document indexed twice (a primary and its replica, never on
    # one node), spread over three primaries: each node holds two of the six copies, a third of
    # the documents each (with 2 primaries, two nodes would hold half as many; with no replica,
    # each document would count once).
    indexed = {node["node"]: node["indexingTotal"] for node in status["results"]["nodes"]}
    assert len(indexed) == 3 and sum(indexed.values()) == 2 * TEST_MODE_COUNT, indexed
    assert all(0.5 * TEST_MODE_COUNT < count < 0.85 * TEST_MODE_COUNT for count in indexed.values()), indexed
    assert all(task["errorRate"] == 0 for task in status["results"]["tasks"])
    # The profiles: each task's stacks in the ConfigMap beside the Experiment, its top frames in
    # the status. Bulk indexing on three nodes runs Elasticsearch's code on every one of them.
    recording = status["results"]["profile"]
    assert recording["event"] == "cpu" and recording["interval"] == "10ms" and "folder" not in recording, recording
    stored = experiments.core.read_namespaced_config_map(recording["configMap"], experiments.namespace).binary_data
    profiled = {task["task"]: task["profile"] for task in status["results"]["tasks"] if task.get("profile")}
    assert set(stored) == {profile["stacks"] for profile in profiled.values()}, (stored.keys(), profiled)
    bulk = profiles.parse(gzip.decompress(base64.b64decode(stored[profiled["index-append"]["stacks"]])).decode())
    assert bulk.samples == profiled["index-append"]["samples"] > 0, profiled["index-append"]
    in_bulk = bulk.share(r"^org\.elasticsearch\.action\.bulk\.")
    print(f"3 nodes, profiled: index-append {bulk.samples} samples, {100 * in_bulk:.0f} % of them in bulk actions")
    assert in_bulk > 0.05, profiled["index-append"]["top"]
    # Every pod (Elasticsearch with the profiler's init container and sidecar) passed "restricted".
    experiments.assert_no_pod_was_refused()
    # cleanup Delete: the cluster goes, ECK's claims with it, and the provisioner frees the volumes.
    wait_for(lambda: not (experiments.claims() or any(map(experiments.volume_exists, volumes))), 180,
             what=f"the claims and volumes {volumes} to go", interval=POLL_SECONDS, diagnose=experiments.diagnose)


def test_a_capacity_search_runs_in_the_rally_pod_after_the_race_and_its_probes_reach_the_status(cluster, experiments):
    """workload.capacity on Kubernetes, reduced: a flat-out warm-up probe and two probes in the Rally pod,
    after the race, on the index it built. The pod's CPU limit (the chart's 0.5 CPU) throttles
    esrally's start in most of its periods, and now and then one while it sends (in a CI run, 2 of
    24 periods at 4 ops/s): the driver is asked about only within a probe's window, and only for a
    probe that failed."""
    body = quickstart(cluster)
    body["metadata"]["name"] = "capacity"
    body["spec"]["workload"] = {
        "track": "range-queries", "excludeTasks": ["terms-1950s", "range-1900-1989", "terms-1900-1989"], "trackParams": {"doc_count": 1000},
        "load": {"clients": 2, "timePeriodSeconds": 2, "warmupTimePeriodSeconds": 0},
        "capacity": {"task": "range-1950s", "objective": {"metric": "service_time.p50", "maxMilliseconds": 5000},
                     "minTargetThroughput": 4, "maxTargetThroughput": 8, "maxProbes": 2, "warmupProbes": 1,
                     "probeSeconds": 3, "warmupSeconds": 0}}
    experiments.create(body)
    found = experiments.wait_finished("capacity")["status"]["results"]["capacity"]
    print(f"capacity on Kubernetes: {found['message']}; {found['seconds']:.0f} s, probes "
          f"{[(p.get('targetThroughput'), p['seconds'], p.get('driver')) for p in found['warmup'] + found['probes']]}")
    # One warm-up probe cannot tell a steady node: said. Then the race's first rate (4 to 8 ops/s) and 8
    # held; 8 is the range's top, whose confirmation the budget of two probes leaves out.
    assert [(p.get("targetThroughput"), p.get("verdict")) for p in found["warmup"]] == [(None, None)], found
    assert found.get("steady", True) is False and "still getting faster after 1 warm-up probes" in found["message"]
    (first, first_verdict), top = [(p["targetThroughput"], p["verdict"]) for p in found["probes"]]
    assert 4 <= first < 8 and (first_verdict, top) == ("Passed", (8, "Passed")), found
    assert (found["stop"], found["capacity"]) == ("BudgetSpent", 8), found["message"]
    assert all(p["nodeCpuPercent"] > 0 and p["serviceTime"]["p50"] > 0 for p in found["probes"]), found["probes"]
    # What the warm-up is for, measured on Kubernetes too: the JIT compilers' share of the node's CPU (the pod's sidecar).
    assert all(p["jitSharePercent"] >= 0 for p in found["warmup"] + found["probes"]), found["warmup"]
    experiments.assert_no_pod_was_refused()


def test_a_cluster_ecks_webhook_rejects_fails_the_experiment_at_once_with_ecks_message(cluster, experiments):
    """ECK's validating webhook (on, as ECK's chart installs it) refuses a version outside ECK's
    range; esbench's own admission lets it through, as it cannot know which ECK runs."""
    body = quickstart(cluster)
    body["metadata"]["name"] = "unsupported"
    body["spec"]["elasticsearch"]["version"] = "10.0.0"
    experiments.create(body)
    wait_for(lambda: experiments.phase("unsupported") == "Failed", 120, what="the Experiment to fail",
             interval=POLL_SECONDS, diagnose=experiments.diagnose)
    status = experiments.get("unsupported")["status"]
    assert status["reason"] == "ClusterRejected", status
    assert "denied the request" in status["message"] and "Unsupported version" in status["message"], status["message"]
    assert not experiments.elasticsearches() and not experiments.jobs()


def test_operator_pod_killed_mid_race_experiment_still_finishes_once_and_deleting_it_removes_everything(experiments):
    experiments.create(quickstart(experiments.cluster, cleanup="Keep"))
    wait_for(lambda: experiments.phase("quickstart") == "Benchmarking" and experiments.jobs(), RACE_TIMEOUT,
             what="the race to start", interval=POLL_SECONDS, diagnose=experiments.diagnose)
    job_uid = experiments.jobs()[0].metadata.uid
    cluster_uid = experiments.elasticsearches()[0]["metadata"]["uid"]

    (operator_pod,) = experiments.operator_pods()
    experiments.core.delete_namespaced_pod(operator_pod.metadata.name, operator_pod.metadata.namespace,
                                           grace_period_seconds=0)
    wait_for(lambda: any(
        p.metadata.uid != operator_pod.metadata.uid and p.status.container_statuses
        and p.status.container_statuses[0].ready for p in experiments.operator_pods()), 180,
        what="a new operator pod to be ready", interval=POLL_SECONDS, diagnose=experiments.diagnose)

    experiments.wait_finished("quickstart")
    experiment = experiments.wait_recorded("quickstart")  # its last write: the store's Recorded condition
    # Still the one cluster and the one Job: the restarted operator adopted them, made no second.
    assert [job.metadata.uid for job in experiments.jobs()] == [job_uid]
    assert [es["metadata"]["uid"] for es in experiments.elasticsearches()] == [cluster_uid]
    assert experiment["status"]["results"]["tasks"]
    finished = [e for e in experiments.events() if e.involved_object.kind == "Experiment" and e.reason == "RaceSucceeded"]
    assert sum(e.count or 1 for e in finished) == 1, [e.message for e in finished]
    # Results are written once, never again: make the operator reconcile the finished Experiment
    # (a change to its cluster, which Keep left up: a change to its Job no longer reaches a finished
    # one) and, once kopf has logged that handler's end, find the Experiment unchanged.
    cluster = experiments.elasticsearches()[0]["metadata"]["name"]
    handled = f"[{experiments.namespace}/{cluster}] Handler 'cluster_changed' succeeded."
    before = experiments.operator_log().count(handled)
    experiments.custom.patch_namespaced_custom_object(*ECK[:2], experiments.namespace, ECK[2], cluster,
                                                      {"metadata": {"annotations": {"esbench.test/poke": "1"}}})
    wait_for(lambda: experiments.operator_log().count(handled) > before, 60,
             what="the operator to handle the cluster's change", interval=POLL_SECONDS, diagnose=experiments.diagnose)
    assert experiments.get("quickstart")["metadata"]["resourceVersion"] == experiment["metadata"]["resourceVersion"]
    experiments.assert_no_pod_was_refused()

    # cleanup: Keep left the cluster up; deleting the Experiment removes it and the Job (owner references).
    assert experiments.apps.list_namespaced_stateful_set(experiments.namespace).items
    experiments.custom.delete_namespaced_custom_object(GROUP, VERSION, experiments.namespace, PLURAL, "quickstart",
                                                       propagation_policy="Foreground")
    wait_for(lambda: not (
        experiments.get("quickstart") or experiments.elasticsearches() or experiments.jobs() or experiments.pods()
        or experiments.apps.list_namespaced_stateful_set(experiments.namespace).items), 180,
        what="the Experiment, its cluster, Job and pods to go", interval=POLL_SECONDS, diagnose=experiments.diagnose)
