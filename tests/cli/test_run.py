"""`esbench run`: the Experiment file, the real runner, real esrally, real Elasticsearch.

Bad input is refused before anything starts, with the API server's message and exit status 10
(InvalidSpec). A run against an existing cluster (--es-url, the runner tests' node) races the
quickstart example as it is; a run without --es-url starts Elasticsearch itself from the cached
integ-test-zip (HTTPS with a generated user, as spec.elasticsearch.tls asks) and stops it after.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from esbench.analysis import compare
from esbench.api import models, validation
from esbench.cli import local
from esbench.history.localstore import LocalStore
from esbench.localnode import cpus, localcluster
from esbench.planning import status
from esbench.runner import esrallyprocess, nodestats
from tests.support.elasticsearch import LATEST
from tests.support.waiting import wait_for

EXPERIMENT = {
    "apiVersion": models.API_VERSION,
    "kind": models.KIND,
    "metadata": {"name": "local-smoke"},
    "spec": {
        "elasticsearch": {"version": LATEST, "heap": "512m"},
        "index": {"codec": "best_compression", "shards": 1, "replicas": 0},
        "workload": {"track": "smoke", "testMode": True, "trackParams": {"doc_count": 500}},
    },
}


def _write(tmp_path, document, name="experiment.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def _with(path: str, value) -> dict:
    document = json.loads(json.dumps(EXPERIMENT))
    node = document
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return document


BAD_INPUT = [
    ("unknown field", _with("spec.index.codecs", "zstd"), 10, 'unknown field "spec.index.codecs"'),
    ("invalid value", _with("spec.elasticsearch.version", "8.15"),
     10, 'Experiment.esbench.io "local-smoke" is invalid: spec.elasticsearch.version: Invalid value: "string": '
         "elasticsearch.version must look like MAJOR.MINOR.PATCH"),
    ("unsupported value", _with("spec.index.codec", "zstd"), 10, 'Unsupported value: "zstd"'),
    ("track params repeat index settings", _with("spec.workload.trackParams", {"number_of_shards": 2}),
     10, "workload.trackParams.number_of_shards conflicts with index.shards"),
    ("not yaml", "spec: [unclosed", 10, "not valid YAML"),
    ("not an experiment", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, 10, "not an Experiment"),
]


@pytest.mark.parametrize("case, document, code, message", BAD_INPUT, ids=[c for c, *_ in BAD_INPUT])
def test_bad_input_is_refused_before_anything_starts(esbench, tmp_path, case, document, code, message):
    run = esbench("run", str(_write(tmp_path, document)), "--output", "out.json")
    assert run.exit_code == code, run.stdout + run.stderr
    assert message in run.stderr
    assert "Elasticsearch" not in run.stdout and not (tmp_path / "out.json").exists()


def test_a_missing_file_is_a_usage_error(esbench, tmp_path):
    run = esbench("run", "absent.yaml")
    assert run.exit_code == 2 and 'the path "absent.yaml" does not exist' in run.stderr


def test_an_unreachable_cluster_fails_as_target_unreachable(esbench, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run = esbench("run", str(_write(tmp_path, EXPERIMENT)), "--es-url", f"http://127.0.0.1:{port}",
                  "--target-timeout", "2", "--output", "out.json", "--work-dir", "work")
    assert run.exit_code == 11, run.stdout + run.stderr
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["status"]["phase"] == "Failed" and document["status"]["reason"] == "TargetUnreachable"
    assert "Failed (TargetUnreachable)" in run.stdout


@pytest.mark.parametrize("workload, code, reason, named", [
    # An unknown track parameter: Rally refuses the track.
    ({"track": "smoke", "trackParams": {"doc_count": 100, "no_such_param": 1}}, 12, "TrackError", "no_such_param"),
    # A search Elasticsearch refuses (more hits than index.max_result_window), with onError continue.
    ({"track": "codec-search", "trackParams": {"doc_count": 200, "fetch_size": 20000}, "onError": "continue"},
     14, "RaceErrors", "fetch-500-newest"),
], ids=["track error", "race errors"])
def test_a_failed_race_exits_with_its_own_status_and_writes_the_failed_document(
        esbench, esrally, clusters, tmp_path, workload, code, reason, named):
    """The runner's failures through `esbench run` (race.EXIT_CODES maps the others the same way)."""
    document = {**EXPERIMENT, "spec": {**EXPERIMENT["spec"], "workload": {"testMode": True, **workload}}}
    # A failed run keeps its work dir (Rally's logs): in tmp_path here, not in /tmp.
    run = esbench("run", str(_write(tmp_path, document)), "--es-url", clusters.get(LATEST).url,
                  "--output", "out.json", "--work-dir", "work", env={"ESBENCH_ESRALLY": esrally})
    assert run.exit_code == code, run.stdout + run.stderr
    state = json.loads((tmp_path / "out.json").read_text())["status"]
    assert (state["phase"], state["reason"]) == ("Failed", reason) and named in state["message"]
    assert f"Failed ({reason})" in run.stdout
    assert LocalStore(tmp_path / "history.sqlite").configurations() == [], "a failed race has no figures to keep"


def test_esrally_that_cannot_start_fails_as_race_failed(esbench, clusters, tmp_path):
    run = esbench("run", str(_write(tmp_path, EXPERIMENT)), "--es-url", clusters.get(LATEST).url,
                  "--output", "out.json", "--work-dir", "work",
                  env={"ESBENCH_ESRALLY": str(tmp_path / "no-esrally")})
    assert run.exit_code == 13, run.stdout + run.stderr
    state = json.loads((tmp_path / "out.json").read_text())["status"]
    assert (state["phase"], state["reason"]) == ("Failed", "RaceFailed") and "cannot start esrally" in state["message"]


# An index whose shard no node may hold stays red, and the smoke track waits for its health
# until it is stopped: a race that ends only when told to.
ENDLESS = _with("spec.index.settings", {"index.routing.allocation.require._name": "no-such-node"})


def test_a_race_past_its_timeout_is_stopped_and_exits_as_race_timeout(esbench, esrally, clusters, tmp_path):
    document = {**ENDLESS, "spec": {**ENDLESS["spec"], "lifecycle": {"raceTimeoutSeconds": 30}}}
    run = esbench("run", str(_write(tmp_path, document)), "--es-url", clusters.get(LATEST).url,
                  "--output", "out.json", "--work-dir", "work", env={"ESBENCH_ESRALLY": esrally})
    assert run.exit_code == 16, run.stdout + run.stderr
    state = json.loads((tmp_path / "out.json").read_text())["status"]
    assert (state["phase"], state["reason"]) == ("Failed", "RaceTimeout"), state
    assert "lifecycle.raceTimeoutSeconds (30s): esrally was stopped after 22s" in state["message"]
    assert esrallyprocess.rally_processes() == [], "the race stopped at its timeout left Rally processes behind"


def test_a_race_interrupted_exits_130_and_leaves_no_rally_behind(esrally, clusters, tmp_path):
    _write(tmp_path, ENDLESS)
    command = [sys.executable, "-m", "esbench.cli", "run", "experiment.yaml", "--es-url", clusters.get(LATEST).url,
               "--work-dir", "work", "--output", "out.json"]
    environment = {**os.environ, "ESBENCH_ESRALLY": esrally, "ESBENCH_HISTORY": str(tmp_path / "history.sqlite")}
    with subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as running:
        try:
            wait_for(lambda: running.poll() is not None or list(tmp_path.glob("work/**/rally.log")), 120,
                     "esrally to begin")
            running.send_signal(signal.SIGINT)
            out, err = running.communicate(timeout=120)
        finally:
            if running.poll() is None:
                running.kill()
    assert running.returncode == 130, out + err
    assert "interrupted: race abandoned" in err
    assert esrallyprocess.rally_processes() == [], "the interrupted race left Rally processes behind"
    assert not (tmp_path / "out.json").exists()
    assert LocalStore(tmp_path / "history.sqlite").configurations() == []


def _assert_operator_document(document: dict, stored: dict, version: str) -> models.Results:
    assert document["apiVersion"] == models.API_VERSION and document["kind"] == models.KIND
    assert document["metadata"]["name"] == stored["metadata"]["name"]
    assert document["spec"] == stored["spec"]  # as the API server would have stored it (defaults applied)
    state = document["status"]
    assert state["phase"] == "Succeeded" and state["reason"] == "RaceSucceeded"
    assert state["clusterVersion"] == version
    for key in ("raceId", "startTime", "completionTime", "message"):
        assert state[key]
    results = models.Results.model_validate(state["results"])
    assert results.race_id == state["raceId"]
    assert state["headline"] == status.headline(results)
    return results


def test_quickstart_races_an_existing_cluster_and_writes_what_the_operator_writes(
        esbench, esrally, clusters, repo_root, tmp_path):
    cluster = clusters.get(LATEST)
    quickstart = repo_root / "examples" / "quickstart.yaml"
    run = esbench("run", str(quickstart), "--es-url", cluster.url, "--output", "quickstart.json",
                  env={"ESBENCH_ESRALLY": esrally})
    assert run.exit_code == 0, run.stdout + run.stderr

    stored = validation.admit(yaml.safe_load(quickstart.read_text()))
    document = json.loads((tmp_path / "quickstart.json").read_text())
    results = _assert_operator_document(document, stored, LATEST)
    assert [t.task for t in results.tasks] == ["index-append", "match-all", "term-category"]
    assert all(t.error_rate == 0 for t in results.tasks)
    # The suite's one full (not test-mode) smoke race: Rally's percentiles from enough samples.
    tasks = {t.task: t for t in results.tasks}
    assert tasks["index-append"].throughput.unit == "docs/s" and tasks["index-append"].throughput.median > 0
    for name in ("match-all", "term-category"):
        latency = tasks[name].latency
        assert latency.unit == "ms" and 0 < latency.p50 <= latency.p90 <= latency.p100
        assert tasks[name].service_time.p50 > 0 and tasks[name].duration > 0
    assert results.track_params["doc_count"] == stored["spec"]["workload"]["trackParams"]["doc_count"]
    assert cluster.client.get("smoke/_count")["count"] == results.track_params["doc_count"]
    (node,) = results.nodes
    assert node.process_cpu_percent.mean is not None

    # The results table, and the result file is an input for compare like any Experiment.
    assert "index-append" in run.stdout and "Succeeded (RaceSucceeded)" in run.stdout
    assert document["status"]["headline"] in run.stdout
    entry = compare.entry_from_document(document)
    rows = compare.compare([entry, entry]).rows
    assert any(r.metric.key == "process_cpu.mean" for r in rows)

    # Recorded in the history (the test's own, tests/support/fixtures.py), every figure a point.
    history = LocalStore(tmp_path / "history.sqlite")
    ((configuration),) = history.configurations()
    assert configuration.races == 1 and "recorded in the history: configuration" in run.stdout
    ((point),) = history.series(configuration.id, "match-all", "service_time.p50")
    assert (point.race_id, point.value) == (results.race_id, tasks["match-all"].service_time.p50)


def test_without_es_url_elasticsearch_is_downloaded_started_over_https_and_stopped(esbench, esrally, tmp_path):
    # As root (these machines), limits.memory and limits.cpu become the node's memory and CPU
    # cgroups, as a pod's limits (1.5 CPUs: no bound on a node given one CPU, but the node reads it).
    experiment = {**EXPERIMENT, "spec": {**EXPERIMENT["spec"], "elasticsearch": {
        **EXPERIMENT["spec"]["elasticsearch"], "resources": {"limits": {"memory": "1536Mi", "cpu": "1500m"}}}}}
    path = _write(tmp_path, experiment)
    run = esbench("run", str(path), "--output", "local.json", "--work-dir", "work", env={"ESBENCH_ESRALLY": esrally})
    assert run.exit_code == 0, run.stdout + run.stderr

    # It says which distribution it uses, and what that distribution lacks.
    assert "integ-test-zip" in run.stdout and "no painless" in run.stdout and "no ingest" in run.stdout
    document = json.loads((tmp_path / "local.json").read_text())
    results = _assert_operator_document(document, validation.admit(experiment), LATEST)
    assert "integ-test-zip" in document["metadata"]["annotations"]["esbench.io/elasticsearch"]
    assert document["metadata"]["annotations"]["esbench.io/disk-watermarks"].startswith("off")
    assert results.track_params["index_settings"] == {"index.codec": "best_compression"}
    # The node as the operator's clusters have it: mmap off (models.DEFAULT_NODE_CONFIG), and the limit.
    (node,) = results.environment.nodes
    assert node.mmap is False and node.cgroup_memory_limit_bytes == 1536 * 2**20 and node.cgroup_cpu_limit == 1.5
    # The node and Rally on different CPUs (these machines have two: one each), as the JVM saw it.
    split = cpus.split(os.sched_getaffinity(0))
    assert document["metadata"]["annotations"]["esbench.io/cpus"] == split.describe()
    assert results.environment.load_driver.cpus == list(split.rally)
    assert node.available_processors == len(split.elasticsearch)
    # What Elasticsearch does not report, from the node's memory cgroup, in every _nodes/stats
    # sample: its page cache (the index it wrote stays cached) and major page faults (counted,
    # none or more). Per task: faults are a counter, read at the window's ends; the page cache is
    # a gauge, averaged over the samples inside the window, which test mode's second-long tasks
    # may not hold.
    samples = json.loads((tmp_path / "work" / "node-stats.json").read_text())
    probed = [node[nodestats.PROBED] for sample in samples for node in sample["nodes"].values()]
    assert probed and all(p["page_cache_bytes"] > 0 and p["major_page_faults"] >= 0 for p in probed), probed
    with_resources = [t.resources for t in results.tasks if t.resources]
    assert with_resources and all(r.major_page_faults >= 0 for r in with_resources), with_resources
    # What the node wrote besides indexing (merges, flushes), which tells its own writes from others'.
    assert all(r.merged_bytes >= 0 and r.flushes >= 0 for r in with_resources), with_resources
    assert all(r.page_cache_bytes > 0 for r in with_resources if r.page_cache_bytes is not None), with_resources
    # What of the node's index files the page cache holds, by Lucene extension (fincore): once the
    # index has segments, their stored fields (.fdt, or in a small segment's compound .cfs) are
    # there; the files' cached pages are charged to the node's cgroup, which wrote them, so they
    # are within its page cache (read a moment apart: 1 MiB). Per task they are a gauge like the
    # page cache, which test mode's second-long tasks may hold no sample of (a slow CI host's did
    # not): their means are tests/unit/test_nodestats.py's.
    indexed = [p for p in probed if {"fdt", "cfs"} & set(p.get("index_files", {}))]
    assert indexed and all(0 < sum(f["cached"] for f in p["index_files"].values()) <= p["page_cache_bytes"] + 2**20
                           for p in indexed), indexed
    # From the kernel's figures per thread: the CPU time of the JVM's JIT compiler and GC threads,
    # counters that never go down; per task, within the node's own (read a moment apart: 0.2 s).
    jit = [p["jit_cpu_ms"] for p in probed]
    assert jit == sorted(jit) and jit[-1] > 0 and all(p["gc_cpu_ms"] >= 0 for p in probed), probed
    timed = [r for r in with_resources if r.process_cpu_ms is not None]
    assert timed and all(0 <= r.jit_cpu_ms <= r.process_cpu_ms + 200 for r in timed), timed

    # HTTPS as ECK serves it (spec.elasticsearch.tls defaults to true), and it is gone afterwards.
    (port,) = re.findall(r"https://localhost:(\d+)", run.stdout)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("localhost", int(port)), timeout=5).close()
    log = (tmp_path / "work" / "esbench-run.log").read_text()
    assert "--target-hosts=localhost:" in log and "esrally exited with 0" in log


# --- pieces of local mode that need no cluster -------------------------------------------------


def test_what_local_mode_cannot_apply_is_said_up_front():
    spec = validation.parse_spec(validation.admit(_with("spec.elasticsearch", {
        "version": LATEST, "nodeCount": 3, "resources": {"requests": {"cpu": "1"},
                                                        "limits": {"memory": "4Gi", "cpu": "500m"}}})))
    notes = " ".join(local.local_notes(spec, local.Options()))
    assert "runs one node; the spec asks for 3" in notes
    assert ("not applied locally: spec.elasticsearch.resources (but limits.memory and limits.cpu)" in notes
            and "storage" in notes)
    assert "resources.limits.memory bounds the local node's own memory cgroup" in notes
    assert "resources.limits.cpu bounds the local node's own CPU cgroup (a CFS quota)" in notes
    assert (local.memory_limit(spec.elasticsearch), local.cpu_limit(spec.elasticsearch)) == (4 * 2**30, 0.5)
    remote = " ".join(local.local_notes(spec, local.Options(es_url="https://es.example:9200")))
    assert "used as it is" in remote


def test_rallys_progress_lines_become_the_race_steps_detail():
    assert local.progress_detail("Running index-append                          [ 40% done]") == "index-append 40%"
    assert local.progress_detail("esbench: generated 500 documents") == "generated 500 documents"
    assert local.progress_detail("esbench: /x/esrally race --pipeline=benchmark-only --race-id=r") == "esrally race started"
    assert local.progress_detail("[INFO] Race id is [r]") == "[INFO] Race id is [r]"
    assert local.progress_detail("    ____        ____") is None


# --- --es-home and spec.elasticsearch.config ---

def test_es_home_is_the_distribution_started_and_spec_config_reaches_it(esbench, tmp_path):
    """A setting Elasticsearch does not know makes it refuse to start: proof that the spec's
    config reached the node started from --es-home (exit 15, ClusterNotReady, as the operator
    reports a cluster that never became ready)."""
    # Not tmp_path (0700 root): the Elasticsearch user must read it. TMPDIR puts the node's own
    # folder (which localcluster keeps after a failed start, for its log) in here too.
    folder = Path(tempfile.mkdtemp(prefix="esbench-home-test-"))
    try:
        folder.chmod(0o755)
        home = localcluster.unpack(localcluster.distribution_zip(LATEST), folder)  # keeps the executable bits
        document = _with("spec.elasticsearch.config", {"esbench.no.such.setting": "x"})
        run = esbench("run", str(_write(tmp_path, document)), "--es-home", str(home), "--output", "out.json",
                      env={"TMPDIR": str(folder)})
        assert run.exit_code == 15, run.stdout + run.stderr
        result = json.loads((tmp_path / "out.json").read_text())
        assert result["status"]["phase"] == "Failed" and result["status"]["reason"] == "ClusterNotReady"
        assert "esbench.no.such.setting" in result["status"]["message"]
        assert f"--es-home {home}" in result["metadata"]["annotations"]["esbench.io/elasticsearch"]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_failed_start_is_summed_up_by_the_first_error_elasticsearch_or_the_jvm_logged():
    # Log tails as localcluster reports them (taken from real failed starts).
    jvm = ("Elasticsearch 8.7.1 exited with 1:\n"
           'Exception in thread "main" java.lang.RuntimeException: starting java failed with [1]\noutput:\n'
           "[0.000s][error][logging] Error opening log file 'logs/gc.log': Permission denied\n"
           "[0.000s][error][logging] Initialization of output 'file=logs/gc.log' using options "
           "'filecount=32,filesize=64m' failed.\nerror:\nInvalid -Xlog option")
    node = ("Elasticsearch 8.7.1 exited with 1:\n[2026-11-21T08:57:04,534][INFO ][o.e.n.Node] [vm] starting\n"
            "[2026-11-21T08:57:04,534][ERROR][o.e.b.Elasticsearch] [vm] fatal exception while booting Elasticsearch "
            "java.lang.IllegalArgumentException: unknown setting [esbench.no.such.setting]\n"
            "\tat org.elasticsearch.server@8.7.1/org.elasticsearch.common.settings.AbstractScopedSettings.validate\n"
            "ERROR: Elasticsearch exited unexpectedly")
    assert local.start_failure(LATEST, jvm).endswith("Error opening log file 'logs/gc.log': Permission denied")
    assert local.start_failure(LATEST, node).endswith("unknown setting [esbench.no.such.setting]")
