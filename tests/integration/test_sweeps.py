"""ExperimentSweeps on a real API server: grid expansion, run order, cluster reuse, retries, gates.

Real: kube-apiserver, controller-manager (Job controller, garbage collector), the CRDs and the
operator process. Stood in for: ECK's controller (support.standin_eck) and the kubelet's work
(support.standin_kubelet); each run's pod log is the runner's report built from a real
race.json, with the indexing throughput set per cell so that the statistics have a known answer.
"""

from __future__ import annotations

import copy
import json

import kubernetes
import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from esbench.api import models
from esbench.planning import grid
from scripts import studies
from tests.support.admission import HELD, deletion_held, deletion_refused
from tests.support.experiments import condition, es_exists, event_messages, events
from tests.support.operator_process import OperatorProcess
from tests.support.standin_eck import eck_status
from tests.support.sweeps import CODECS, TEMPLATE, Driver, create_sweep, get_sweep, phase, runs
from tests.support.waiting import wait_for

# Indexing throughput per cell and repetition: best_compression about 20% slower, little noise;
# the warm-up race (cell w0) is slow, as on a cold node, and must not count.
THROUGHPUT = {"c0": [1000.0, 1010.0, 990.0], "c1": [800.0, 805.0, 795.0], "w0": [100.0]}


def test_cells_that_differ_in_index_settings_share_one_cluster_one_run_at_a_time(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "codec", matrix=CODECS, repetitions=3, order="Counterbalanced", warmupRuns=1,
                 gates=[{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5}])
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "codec")
    for _ in range(7):
        child = driver.next_benchmarking()
        cell = child["metadata"]["labels"]["esbench.io/cell"]
        repetition = int(child["metadata"]["labels"]["esbench.io/repetition"])
        assert child["spec"]["target"] == {"elasticsearchRef": {"name": "codec-g0"}}
        assert "elasticsearch" not in child["spec"]
        driver.finish(child, THROUGHPUT[cell][repetition - 1])
    done = driver.wait_done()

    # A warm-up race first, then counterbalanced (the default): every cell once per round, the
    # order turned from round to round (the seed gives c1 the first place); never two races on
    # the one cluster at a time.
    assert driver.started == ["codec-w0-r1", "codec-c1-r1", "codec-c0-r1", "codec-c0-r2", "codec-c1-r2",
                              "codec-c1-r3", "codec-c0-r3"]
    assert driver.most_at_once == 1
    status = done["status"]
    assert phase(done) == "Succeeded" and status["clusters"] == ["codec-g0"]
    assert status["progress"] == {"cells": 2, "runs": 7, "succeeded": 7, "failed": 0, "running": 0, "pending": 0,
                                  "retries": 0, "summary": "7/7"}
    assert [c["values"] for c in status["cells"]] == [{"index.codec": "default"}, {"index.codec": "best_compression"}]
    row = next(r for r in status["comparison"] if r["subject"] == "index-append" and r["metric"] == "throughput.median")
    baseline, contender = row["cells"]
    assert (baseline["cell"], baseline["verdict"], baseline["n"]) == ("c0", "Baseline", 3)
    assert contender["cell"] == "c1" and contender["verdict"] == "Worse" and contender["pAdjusted"] < 0.05
    assert contender["changeHighPercent"] < -15  # the interval, at the level Holm's correction sets
    assert row["family"] == "primary"  # the gate's question
    assert status["corrections"]["primary"] == {"correction": "Holm", "comparisons": 1}
    assert contender["changePercent"] == pytest.approx(-20.0, abs=0.1)
    gates = condition(done, "GatesPassed")
    assert gates["status"] == "False" and gates["reason"] == "GateFailed" and "c1 -20.0%" in gates["message"]
    assert condition(done, "Complete")["status"] == "True"
    # The shared cluster belongs to the sweep and goes when its runs are done (cleanup Delete).
    wait_for(lambda: not eck.list(namespace), 30, "the shared cluster to be deleted")


def test_a_shared_cluster_whose_deletion_the_api_server_refuses_is_said_and_released_once_allowed(
        apis, eck, standin_kubelet, control_plane, operator_kubeconfig, namespace, race_json, tmp_path):
    # Its own operator: its sweep handler is meant to fail while the deletion is held.
    operator = OperatorProcess(operator_kubeconfig, tmp_path / "operator.log").start()
    try:
        with deletion_held(control_plane, namespace, "held-g0") as release:
            create_sweep(apis, namespace, "held", matrix=[{"field": "index.codec", "values": ["default"]}], repetitions=1)
            driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "held")
            child = driver.next_benchmarking()
            wait_for(lambda: deletion_refused(apis, namespace, "held-g0"), what="the API server to load the policy")
            driver.finish(child, 1000.0)
            wait_for(lambda: ("Warning", "CleanupFailed") in events(apis, namespace, "held"),
                     what="the sweep's CleanupFailed Event", diagnose=lambda: operator.log_tail(40))
            refusal = event_messages(apis, namespace, "held")
            assert "The API server refused to delete Elasticsearch held-g0" in refusal and HELD in refusal
            # Tried again by the resync (each 1 s here), backing off: 1 s, then 2 s.
            wait_for(lambda: f"sweep {namespace}/held failed again (2 in a row; next try in 2s)"
                     in operator.log_tail(10_000), what="the resync to try the release again")
            assert es_exists(eck, namespace, "held-g0")
            assert phase(get_sweep(apis, namespace, "held")) == "Running"  # it ends once its cluster is released
            release()
            done = driver.wait_done()
            assert phase(done) == "Succeeded" and done["status"]["progress"]["succeeded"] == 1
            wait_for(lambda: not es_exists(eck, namespace, "held-g0"), what="the release, once allowed")
    finally:
        operator.stop()


def test_cells_with_different_versions_get_a_cluster_each_and_run_in_parallel(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "versions", repetitions=1, parallelism=2, matrix=[
        {"field": "elasticsearch.version", "values": ["8.15.3", "8.14.3"]}, *CODECS])
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "versions")
    first, second = driver.next_benchmarking(), driver.next_benchmarking()
    clusters = {c["spec"]["target"]["elasticsearchRef"]["name"] for c in (first, second)}
    assert clusters == {"versions-g0", "versions-g1"}, "one run per cluster at a time, both clusters at work"
    versions = {es["metadata"]["name"]: es["spec"]["version"] for es in eck.list(namespace)}
    assert versions == {"versions-g0": "8.15.3", "versions-g1": "8.14.3"}
    for child in (first, second):
        driver.finish(child, 1000.0)
    for _ in range(2):
        driver.finish(driver.next_benchmarking(), 1000.0)
    done = driver.wait_done()
    assert phase(done) == "Succeeded"
    assert done["status"]["clusters"] == ["versions-g0", "versions-g1"]
    assert driver.most_at_once == 2


def test_profiled_cells_share_a_cluster_only_with_their_own_profile_whose_pods_record_it(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "prof", repetitions=1, parallelism=2,
                 template={**TEMPLATE, "profile": {"event": "cpu"}},
                 matrix=[{"field": "profile.event", "values": ["cpu", "wall"]}])
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "prof")
    runs_now = [driver.next_benchmarking(), driver.next_benchmarking()]
    events_by_cluster = {}
    for es in eck.list(namespace):
        pod = es["spec"]["nodeSets"][0]["podTemplate"]["spec"]
        assert [c["name"] for c in pod["containers"]] == ["elasticsearch", "esbench-sidecar"], es["metadata"]["name"]
        [init] = [c for c in pod["initContainers"] if c["name"] == "esbench-profiler"]
        events_by_cluster[es["metadata"]["name"]] = init["command"][6].split("event=")[1].split(",")[0]
    assert sorted(events_by_cluster.values()) == ["ctimer", "wall"], "a cluster per profile"
    for run in runs_now:
        cluster = run["spec"]["target"]["elasticsearchRef"]["name"]
        job = apis.batch.read_namespaced_job(f"{run['metadata']['name']}-rally", namespace)
        assert f"--node-sidecar=https://{cluster}-es-default-0.{cluster}-es-default.{namespace}.svc:9443" in \
            job.spec.template.spec.containers[0].args
        driver.finish(run, 1000.0)
    assert phase(driver.wait_done()) == "Succeeded"


def test_a_shared_cluster_for_reused_indices_keeps_its_snapshots_where_its_runs_find_them(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    """workload.reuseIndex: the runner finds the repository in the nodes' path.repo (tests/e2e restores from it)."""
    create_sweep(apis, namespace, "reuse", matrix=CODECS, repetitions=1,
                 template={**TEMPLATE, "workload": {"track": "codec-search", "reuseIndex": True}})
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "reuse")
    first = driver.next_benchmarking()
    [es] = eck.list(namespace)
    [node_set] = es["spec"]["nodeSets"]
    assert node_set["config"]["path.repo"] == ["/esbench/snapshots"]
    assert {"name": "esbench-snapshots", "emptyDir": {}} in node_set["podTemplate"]["spec"]["volumes"]
    driver.finish(first, 1000.0)
    driver.finish(driver.next_benchmarking(), 1000.0)
    assert phase(driver.wait_done()) == "Succeeded"


def test_without_reuse_every_run_creates_its_own_cluster(apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "own", matrix=CODECS, repetitions=1, clusterReuse=False, parallelism=2)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "own")
    children = [driver.next_benchmarking(), driver.next_benchmarking()]
    assert all("elasticsearch" in c["spec"] and "target" not in c["spec"] for c in children)
    assert sorted(es["metadata"]["name"] for es in eck.list(namespace)) == ["own-c0-r1", "own-c1-r1"]
    for child in children:
        driver.finish(child, 1000.0)
    done = driver.wait_done()
    assert phase(done) == "Succeeded" and done["status"]["clusters"] == []


def test_a_shared_emptydir_cluster_a_disruption_emptied_is_made_anew_before_the_retry(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    """ECK makes a lost node's pod anew, empty, and it never joins the cluster it was part of: the
    retry would wait out clusterReadyTimeoutSeconds on it. The sweep deletes the cluster and makes
    it anew, then retries."""
    template = {**TEMPLATE, "elasticsearch": {**TEMPLATE["elasticsearch"], "storage": {"type": "EmptyDir"}}}
    create_sweep(apis, namespace, "lost", template=template, matrix=CODECS, repetitions=1, maxRetries=1)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "lost")
    first = driver.next_benchmarking()
    old = eck.get(namespace, "lost-g0")
    # Its node's pod is gone mid-race: ECK counts no node available, and the race fails.
    eck.set_status(namespace, "lost-g0", **{**eck_status(old, up=False), "availableNodes": 0})
    driver.finish(first, None)

    def made_anew():
        return next((es for es in eck.list(namespace) if es["metadata"]["name"] == "lost-g0"
                     and es["metadata"]["uid"] != old["metadata"]["uid"]), None)
    wait_for(made_anew, 60, "the shared cluster to be made anew",
             diagnose=lambda: str(get_sweep(apis, namespace, "lost").get("status")))
    retry = driver.next_benchmarking()
    assert retry["metadata"]["name"] == "lost-c0-r1-a2"
    failed = next(r for r in runs(apis, namespace, "lost") if r["metadata"]["name"] == "lost-c0-r1")
    assert failed["status"]["reason"] == "ClusterDisrupted"
    assert ("Normal", "ClusterRenewed") in events(apis, namespace, "lost")
    driver.finish(retry, 1000.0)
    driver.finish(driver.next_benchmarking(), 1000.0)
    done = driver.wait_done()
    assert phase(done) == "Succeeded" and done["status"]["progress"]["retries"] == 1


def test_a_failed_run_is_retried_and_a_run_that_keeps_failing_leaves_partial_results(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "flaky", matrix=CODECS, repetitions=1, maxRetries=1)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "flaky")
    driver.finish(driver.next_benchmarking(), None)  # c0 r1 crashes: retried
    retry = driver.next_benchmarking()
    assert retry["metadata"]["name"] == "flaky-c0-r1-a2" and retry["metadata"]["labels"]["esbench.io/attempt"] == "2"
    driver.finish(retry, 1000.0)
    driver.finish(driver.next_benchmarking(), None)  # c1 r1 fails twice: failed for good
    driver.finish(driver.next_benchmarking(), None)
    done = driver.wait_done()
    assert driver.started == ["flaky-c0-r1", "flaky-c0-r1-a2", "flaky-c1-r1", "flaky-c1-r1-a2"]
    status = done["status"]
    assert phase(done) == "Failed" and status["reason"] == "RunsFailed"
    assert status["progress"]["succeeded"] == 1 and status["progress"]["failed"] == 1
    assert status["progress"]["retries"] == 2
    assert [f["run"] for f in status["failures"]] == ["flaky-c0-r1", "flaky-c1-r1", "flaky-c1-r1-a2"]
    assert all(f["reason"] == "JobFailed" for f in status["failures"])
    row = next(r for r in status["comparison"] if r["subject"] == "index-append" and r["metric"] == "throughput.median")
    assert [c["cell"] for c in row["cells"]] == ["c0"], "the baseline's results stay visible"


def test_gates_pass_when_no_contender_is_significantly_worse_and_contrasts_are_kept_per_cell(
        apis, eck, standin_kubelet, namespace, operator, race_json, control_plane, esbench, tmp_path):
    contrast = {"name": "queries", "baseline": "match-all", "variants": ["term-category"], "metrics": ["service_time.p50"]}
    template = {**TEMPLATE, "workload": {**TEMPLATE["workload"], "contrasts": [contrast]}}
    create_sweep(apis, namespace, "even", template=template, matrix=CODECS, repetitions=2,
                 gates=[{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5}])
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "even")
    even = {"c0": [1000.0, 1010.0], "c1": [1008.0, 1001.0]}
    for _ in range(4):
        child = driver.next_benchmarking()
        labels = child["metadata"]["labels"]
        driver.finish(child, even[labels["esbench.io/cell"]][int(labels["esbench.io/repetition"]) - 1])
    done = driver.wait_done()
    gates = condition(done, "GatesPassed")
    assert (gates["status"], gates["reason"]) == ("True", "GatesPassed")
    assert done["status"]["gates"][0]["result"] == "Passed"
    # The tasks of each cell's races compared with each other, over the cell's two runs.
    service = {op["task"]: op["service_time"]["50_0"] for op in race_json["results"]["op_metrics"]}
    expected_change = (service["term-category"] - service["match-all"]) / service["match-all"] * 100
    assert [(c["cell"], c["name"]) for c in done["status"]["contrasts"]] == [("c0", "queries"), ("c1", "queries")]
    for cell in done["status"]["contrasts"]:
        (row,) = cell["rows"]
        baseline, variant = row["cells"]
        assert (row["metric"], baseline["cell"], variant["cell"]) == ("service_time.p50", "match-all", "term-category")
        assert baseline["n"] == variant["n"] == 2
        assert variant["changePercent"] == pytest.approx(expected_change, abs=0.01)
    # What the CLI makes of the status the operator wrote, the sweep and a run read by name from the
    # kube context (as a user would, after `kubectl wait`).
    kube = {"KUBECONFIG": str(control_plane.kubeconfig_path)}
    swept = esbench("sweep", "even", "--namespace", namespace, env=kube)
    assert swept.exit_code == 0, swept.stderr
    assert "even: Succeeded (Completed) 4/4 runs finished" in swept.stdout
    assert "Comparison against c0" in swept.stdout
    assert "gate index-append throughput.median (at most 5% worse): Passed" in swept.stdout
    assert json.loads(esbench("sweep", "even", "-n", namespace, "--format", "json", env=kube).stdout) == (
        done["status"]["comparison"])
    first_run, second_run = (run["name"] for run in done["status"]["runs"][:2])
    shown = esbench("show", first_run, "--namespace", namespace, env=kube)
    assert shown.exit_code == 0, shown.stderr
    assert first_run in shown.stdout and "index-append" in shown.stdout
    reported = esbench("report", first_run, second_run, "-n", namespace, "--markdown", "report.md", env=kube)
    assert reported.exit_code == 0, reported.stderr
    report = (tmp_path / "report.md").read_text()
    assert first_run in report and second_run in report and "index-append" in report


def test_runs_removed_by_the_templates_ttl_keep_their_results_and_are_not_started_again(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    template = {**TEMPLATE, "lifecycle": {"ttlSecondsAfterFinished": 0}}  # each run is deleted as it ends
    create_sweep(apis, namespace, "ttl", template=template, matrix=CODECS, repetitions=2)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "ttl")
    for _ in range(4):
        child = driver.next_benchmarking()
        cell = child["metadata"]["labels"]["esbench.io/cell"]
        repetition = int(child["metadata"]["labels"]["esbench.io/repetition"])
        driver.finish(child, THROUGHPUT[cell][repetition - 1])
    done = driver.wait_done()
    assert phase(done) == "Succeeded" and done["status"]["progress"]["summary"] == "4/4"
    wait_for(lambda: runs(apis, namespace, "ttl") == [], what="the runs' TTL deletion")
    assert sorted(r["name"] for r in done["status"]["runs"]) == ["ttl-c0-r1", "ttl-c0-r2", "ttl-c1-r1", "ttl-c1-r2"]
    row = next(r for r in get_sweep(apis, namespace, "ttl")["status"]["comparison"]
               if r["subject"] == "index-append" and r["metric"] == "throughput.median")
    assert [c["n"] for c in row["cells"]] == [2, 2], "every run's figures outlive the run"
    assert len(driver.started) == 4 and len(set(driver.started)) == 4


def test_a_run_deleted_mid_race_is_a_failed_attempt_and_retried_once(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    create_sweep(apis, namespace, "gone", matrix=[{"field": "index.codec", "values": ["default"]}], repetitions=1,
                 maxRetries=1)
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "gone")
    for name in ("gone-c0-r1", "gone-c0-r1-a2"):
        child = driver.next_benchmarking()
        assert child["metadata"]["name"] == name
        apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, name)
    done = driver.wait_done()
    assert phase(done) == "Failed" and done["status"]["progress"]["failed"] == 1
    assert [(r["name"], r["reason"]) for r in done["status"]["runs"]] == [
        ("gone-c0-r1", "RunDeleted"), ("gone-c0-r1-a2", "RunDeleted")]
    assert driver.started == ["gone-c0-r1", "gone-c0-r1-a2"]


def test_a_run_deleted_the_moment_it_exists_is_a_failed_attempt_never_started_twice(
        apis, eck, namespace, operator):
    """Deleted before the sweep has listed it even once: the sweep recorded it when it started it."""
    created = []
    watch = kubernetes.watch.Watch()
    stream = watch.stream(apis.custom.list_namespaced_custom_object, models.GROUP, models.VERSION, namespace,
                          models.PLURAL, label_selector="esbench.io/sweep=instant", timeout_seconds=60)
    create_sweep(apis, namespace, "instant", matrix=[{"field": "index.codec", "values": ["default"]}],
                 repetitions=1, maxRetries=1)
    for event in stream:
        if event["type"] == "ADDED":
            name = event["object"]["metadata"]["name"]
            created.append(name)
            apis.custom.delete_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL, name)
        if len(created) == 2:
            break
    done = wait_for(lambda: (s := get_sweep(apis, namespace, "instant")) and phase(s) == "Failed" and s, 30,
                    "the sweep to fail")
    watch.stop()
    assert [(r["name"], r["reason"]) for r in done["status"]["runs"]] == [
        ("instant-c0-r1", "RunDeleted"), ("instant-c0-r1-a2", "RunDeleted")]
    started = [e.message.split(":")[0] for e in apis.core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=instant,reason=RunStarted").items]
    assert sorted(started) == ["instant-c0-r1", "instant-c0-r1-a2"], "no run started twice"


def test_a_cell_the_experiment_crd_rejects_fails_the_sweep_before_any_run(apis, eck, namespace, operator):
    create_sweep(apis, namespace, "bad", matrix=[{"field": "index.refreshInterval", "values": ["1s", "soon"]}])
    done = wait_for(lambda: (s := get_sweep(apis, namespace, "bad")) and phase(s) == "Failed" and s, 30,
                    "the sweep to fail")
    assert done["status"]["reason"] == "InvalidSpec"
    assert "cell c1" in done["status"]["message"] and "index.refreshInterval" in done["status"]["message"]
    assert runs(apis, namespace, "bad") == [] and eck.list(namespace) == []


def test_a_run_the_api_server_refuses_is_said_and_tried_again_until_the_templates_ready_timeout(
        apis, eck, namespace, operator):
    """A ResourceQuota of no Experiments: every run's create is refused (403). The sweep says so
    (reason Rejected), tries again at each resync, and fails once the template's
    clusterReadyTimeoutSeconds have passed since it started."""
    quota = {"metadata": {"name": "no-experiments"}, "spec": {"hard": {"count/experiments.esbench.io": "0"}}}
    apis.core.create_namespaced_resource_quota(namespace, quota)
    template = {**TEMPLATE, "lifecycle": {"clusterReadyTimeoutSeconds": 30}}
    create_sweep(apis, namespace, "quota", template=template, matrix=CODECS, repetitions=1)
    waiting = wait_for(lambda: (s := get_sweep(apis, namespace, "quota")).get("status", {}).get("reason") == "Rejected"
                       and s, 30, "the sweep to say its run is refused")
    assert phase(waiting) == "Running" and "quota" in waiting["status"]["message"].lower()
    assert condition(waiting, "Complete")["status"] == "False"
    done = wait_for(lambda: (s := get_sweep(apis, namespace, "quota")) and phase(s) == "Failed" and s, 90,
                    "the sweep to give up")
    assert done["status"]["reason"] == "Rejected" and condition(done, "Complete")["status"] == "True"
    assert runs(apis, namespace, "quota") == []


def test_an_include_cell_that_sets_what_only_the_template_may_is_refused_at_admission(apis, eck, namespace, operator):
    # The CRD's CEL cannot see the keys of a map of free values; the chart's admission policy can
    # (the planner refuses it too, for a cluster without the policy: tests/unit/test_grid.py).
    with pytest.raises(ApiException) as refused:
        create_sweep(apis, namespace, "theirs", include=[{"target.external.passwordSecret.name": "theirs"}])
    assert refused.value.status == 422, refused.value.body
    assert "an include cell sets target, which cannot vary between cells" in refused.value.body
    assert runs(apis, namespace, "theirs") == [] and eck.list(namespace) == []


@pytest.mark.parametrize("change, message", [
    ({"metadata": {"name": "a-sweep-name-that-is-too-long"}}, "metadata.name must be at most 24 characters"),
    ({"metadata": {"name": "1st-sweep"}}, "metadata.name must be a DNS-1035 label"),
    ({"metadata": {"name": "codec.search"}}, "metadata.name must be a DNS-1035 label"),
    ({"spec": {"matrix": [{"field": "spec.index.codec", "values": ["default"]}]}}, "matrix field must be a field"),
    ({"spec": {"matrix": [{"field": "target.external.url", "values": ["http://es:9200"]}]}},
     "matrix field must be a field"),
    ({"spec": {"matrix": [{"field": "rally.image", "values": ["mine/rally:1"]}]}},
     "rally.image, elasticsearch.image, workload.source and workload.repository cannot vary between cells"),
    ({"spec": {"perRound": [{"field": "index.codec", "values": ["default"]}]}},
     "perRound field must be a track parameter, workload.trackParams.NAME"),
    ({"spec": {"perRound": [{"field": "workload.track", "values": ["smoke", "indexing"]}]}},
     "perRound field must be a track parameter, workload.trackParams.NAME"),
    ({"spec": {"matrix": [{"field": "workload.trackParams.bulk_size", "values": [100, 200]}],
               "perRound": [{"field": "workload.trackParams.bulk_size", "values": [300]}]}},
     "a field is either a matrix axis (compared) or perRound (varied, not compared), not both"),
    ({"spec": {"compareWithin": ["elasticsearch.heap"]}},
     "compareWithin names matrix fields: the levels each of which gets a baseline of its own"),
    ({"spec": {"compareWithin": ["index.codec"]}}, "compareWithin must leave a matrix field to compare"),
    ({"spec": {"repetitions": 0}}, "spec.repetitions"),
    ({"spec": {"gates": [{"task": "index-append", "metric": "speed", "maxRegressionPercent": 5}]}}, "spec.gates[0].metric"),
    ({"spec": {"repetitions": 1, "gates": [{"task": "index-append", "metric": "throughput.median",
                                            "maxRegressionPercent": 5}]}}, "gates need repetitions of 2 or more"),
    ({"spec": {"statistics": {"primary": [{"task": "index-append", "metric": "speed"}]}}},
     "spec.statistics.primary[0].metric"),
    ({"spec": {"order": "Sequential", "statistics": {"paired": True}}},
     "statistics.paired compares the runs of one round: it needs order Counterbalanced, Interleaved or Shuffled"),
    ({"spec": {"repetitions": 3, "maxRepetitions": 3, "statistics": {"primary": [
        {"task": "index-append", "metric": "throughput.median"}]}}}, "maxRepetitions must be more than repetitions"),
    ({"spec": {"maxRepetitions": 6}}, "maxRepetitions needs a primary question"),
    ({"spec": {"template": {"elasticsearch": {"version": "8.15.3"}}}}, "spec.template.workload: Required value"),
    ({"spec": {"template": {**TEMPLATE, "index": {"codec": "zstd"}}}}, "spec.template.index.codec: Unsupported value"),
    ({"spec": {"template": {**TEMPLATE, "target": {"elasticsearchRef": {"name": "x"}}}}},
     "set either spec.elasticsearch (a cluster of the Experiment's own) or spec.target"),
])
def test_the_api_server_rejects_a_malformed_sweep(apis, namespace, change, message):
    body = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "ok"},
            "spec": {"template": copy.deepcopy(TEMPLATE), "matrix": CODECS}}
    for section, values in change.items():
        body[section].update(values)
    with pytest.raises(ApiException) as rejected:
        apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, body)
    assert rejected.value.status == 422 and message in rejected.value.body


def test_every_example_sweep_is_accepted_and_every_cell_is_a_valid_experiment(apis, namespace, repo_root):
    examples = sorted((repo_root / "examples" / "sweeps").glob("*.yaml"))
    examples += [path for study in sorted((repo_root / "examples" / "studies").glob("*"))
                 for path in studies.sweeps(study)]
    assert {p.name for p in examples} >= {"indexing-knobs.yaml", "codec-search.yaml", "range-queries-versions.yaml",
                                          "source-filtering-pagination.yaml", "curve-clients.yaml", "sweep-shards.yaml",
                                          "build.yaml", "sweep-map.yaml"}
    for path in examples:
        document = yaml.safe_load(path.read_text())
        stored = apis.custom.create_namespaced_custom_object(
            models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, document, dry_run="All")
        plan = grid.plan(models.SweepSpec.model_validate(stored["spec"]), stored["metadata"]["name"], namespace)
        # A question: cells to compare, or (one cell) contrasts between the tasks of each run.
        asks = len(plan.cells) >= 2 or models.ExperimentSpec.model_validate(stored["spec"]["template"]).workload.contrasts
        assert asks and plan.baseline in plan.cells, path.name


def test_rounds_go_on_for_a_contender_until_its_primary_question_is_settled_or_max_repetitions(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    """The operator adds a round for each contender whose primary question is still unsettled,
    with the baseline, and says why each cell stopped."""
    refresh = [{"field": "index.refreshInterval", "values": ["1s", "2s", "3s"]}]
    create_sweep(apis, namespace, "adaptive", matrix=refresh, repetitions=2, maxRepetitions=4,
                 statistics={"primary": [{"task": "index-append", "metric": "throughput.median"}],
                             "targetWidthPercent": 10})
    driver = Driver(apis, eck, standin_kubelet, namespace, race_json, "adaptive")
    # c1 is clearly 20 % slower after two runs; c2 stays noisy to the end.
    throughput = {"c0": [1000.0, 1001.0, 999.0, 1000.5], "c1": [800.0, 800.4], "c2": [1000.0, 700.0, 1300.0, 650.0]}
    for _ in range(10):
        child = driver.next_benchmarking()
        labels = child["metadata"]["labels"]
        driver.finish(child, throughput[labels["esbench.io/cell"]][int(labels["esbench.io/repetition"]) - 1])
    done = driver.wait_done()
    assert phase(done) == "Succeeded", done["status"]
    ran = [tuple(name.rsplit("-", 2)[1:]) for name in driver.started]
    assert ran[6:] == [("c0", "r3"), ("c2", "r3"), ("c0", "r4"), ("c2", "r4")], ran
    stopped = {cell["id"]: cell.get("stopped", "") for cell in done["status"]["cells"]}
    assert "settled after 2 runs" in stopped["c1"], stopped
    assert "maxRepetitions 4 reached" in stopped["c2"], stopped
