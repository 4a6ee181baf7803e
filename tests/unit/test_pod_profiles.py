"""esbench's sidecar in the pods of the clusters it makes, and spec.profile on Kubernetes, without a
cluster: the pods (manifests), the sidecar that serves each node's probe and recordings (a real
server on a folder), the runner that reads the probes and fetches the recordings that overlap the
race, and the report that carries the per-task stacks within a ConfigMap's size."""

from __future__ import annotations

import base64
import gzip
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

import pytest
from rich.console import Console

from esbench.analysis import profiles
from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.cli import rendering
from esbench.planning import grid, manifests
from esbench.runner import race, sidecars
from esbench.runner.podprofiles import PodProfiles
from esbench.sidecar import nodeserver as sidecar
from tests.support.waiting import wait_for

RESTRICTED = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}}


def experiment(tls=True, profile=True, **es):
    spec = {"elasticsearch": {"version": "8.7.1", "tls": tls, **es}, "workload": {"track": "smoke"}}
    if profile:
        spec["profile"] = {"event": "cpu"}
    return manifests.Experiment("prof", "perf", "uid-1", models.ExperimentSpec.model_validate(spec))


def pod_spec(manifest, node_set=0):
    return manifest["spec"]["nodeSets"][node_set]["podTemplate"]["spec"]


IMAGE = manifests.SidecarImage("esbench:dev", "Never")


def test_a_profiled_cluster_starts_the_profiler_with_its_jvm_and_serves_the_recordings_over_its_own_tls(tmp_path):
    pod = pod_spec(manifests.elasticsearch_manifest(experiment(), IMAGE))
    [init] = [c for c in pod["initContainers"] if c["name"] == manifests.PROFILER_INIT_CONTAINER]
    [es, server] = pod["containers"]
    assert init["image"] == server["image"] == "esbench:dev" and server["imagePullPolicy"] == "Never"
    # The init container's own command, run here on folders of ours: the library copied, one JVM option written.
    library = tmp_path / "image" / "libasyncProfiler.so"
    library.parent.mkdir()
    library.write_bytes(b"ELF")
    (tmp_path / "profiler").mkdir()
    options_file = tmp_path / "esbench-profiler.options"
    command = init["command"][:4] + [str(library), str(tmp_path / "profiler"), init["command"][6], str(options_file)]
    subprocess.run(command, check=True)
    assert (tmp_path / "profiler" / "libasyncProfiler.so").read_bytes() == b"ELF"
    assert options_file.read_text() == (
        "-agentpath:/esbench/profiler/libasyncProfiler.so="
        "start,event=ctimer,jfr,interval=10ms,loop=30s,file=/esbench/recordings/recording-%p-%t.jfr\n")
    assert init["command"][4] == "/opt/async-profiler/libasyncProfiler.so"
    # Elasticsearch reads the option from jvm.options.d (its server JVM only) and writes the recordings.
    mounts = {m["mountPath"]: m for m in es["volumeMounts"]}
    assert mounts[manifests.ES_JVM_OPTIONS_DIR]["name"] == "esbench-jvm-options"
    assert mounts["/esbench/recordings"]["readOnly"] is False and mounts["/esbench/profiler"]["readOnly"] is True
    # The sidecar: read-only, the elastic user's password as a file, ECK's HTTP certificate; the node's
    # processes (one process namespace for the pod) and its data volume.
    assert "--certificate=/esbench/http-certs/tls.crt" in server["args"]
    assert {"--recordings=/esbench/recordings", "--data=/esbench/data"} <= set(server["args"])
    assert all(m["readOnly"] for m in server["volumeMounts"])
    assert {m["mountPath"]: m["name"] for m in server["volumeMounts"]}["/esbench/data"] == manifests.ES_DATA_VOLUME
    assert pod["shareProcessNamespace"] is True
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["esbench-elastic-password"]["secret"]["secretName"] == "prof-es-elastic-user"
    assert manifests.ES_HTTP_CERTS_VOLUME in {m["name"] for m in server["volumeMounts"]}
    assert manifests.ES_HTTP_CERTS_VOLUME not in volumes  # ECK's own volume, which ECK adds to the pod
    for container in (init, server):
        assert RESTRICTED.items() <= container["securityContext"].items(), container["name"]
    assert server["resources"]["limits"] == server["resources"]["requests"]  # a Guaranteed pod stays Guaranteed


def test_without_tls_the_sidecar_serves_plain_http_and_without_a_profile_it_serves_the_probe_alone():
    pod = pod_spec(manifests.elasticsearch_manifest(experiment(tls=False), IMAGE))
    [_, server] = pod["containers"]
    assert not any(a.startswith("--certificate") for a in server["args"])
    assert {m["name"] for m in server["volumeMounts"]} == {"esbench-recordings", "esbench-elastic-password",
                                                           manifests.ES_DATA_VOLUME}
    plain = pod_spec(manifests.elasticsearch_manifest(experiment(profile=False), IMAGE))
    [es, server] = plain["containers"]
    assert "volumeMounts" not in es and not any(a.startswith("--recordings") for a in server["args"])
    assert [c["name"] for c in plain["initContainers"]] == list(manifests.ECK_INIT_CONTAINERS)
    # The data volume the sidecar mounts: the claim's (the StatefulSet names the pod's volume after it), or an emptyDir.
    claimed = manifests.elasticsearch_manifest(experiment(profile=False), IMAGE)
    assert claimed["spec"]["nodeSets"][0]["volumeClaimTemplates"][0]["metadata"]["name"] == manifests.ES_DATA_VOLUME
    assert {v["name"] for v in plain["volumes"]} == {"esbench-elastic-password"}
    scratch = pod_spec(manifests.elasticsearch_manifest(experiment(profile=False, storage={"type": "EmptyDir"}), IMAGE))
    assert {v["name"] for v in scratch["volumes"]} == {"esbench-elastic-password", manifests.ES_DATA_VOLUME}
    # Without the esbench image (a resource rendered for reading): nothing of esbench's in the pods.
    bare = pod_spec(manifests.elasticsearch_manifest(experiment(profile=False)))
    assert len(bare["containers"]) == 1 and "shareProcessNamespace" not in bare


def test_the_job_reads_every_pod_of_every_node_set_by_the_names_ecks_certificate_holds():
    exp = experiment(nodeSets=[{"name": "hot", "count": 2}, {"name": "cold", "count": 1}])
    resource = manifests.elasticsearch_manifest(exp, IMAGE)
    sources = manifests.node_sidecars("prof", "perf", resource)
    assert sources == ["https://prof-es-hot-0.prof-es-hot.perf.svc:9443", "https://prof-es-hot-1.prof-es-hot.perf.svc:9443",
                       "https://prof-es-cold-0.prof-es-cold.perf.svc:9443"]
    assert manifests.records_profile(resource)
    job = manifests.rally_job_manifest(exp, manifests.connection(exp, resource), "esbench:dev", "Never", node_sidecars=sources)
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--node-sidecar=")] == [f"--node-sidecar={s}" for s in sources]
    # Pods without a profiler still have the sidecar; pods of a cluster made without esbench's image have none.
    assert not manifests.records_profile(manifests.elasticsearch_manifest(experiment(profile=False), IMAGE))
    assert manifests.node_sidecars("prof", "perf", manifests.elasticsearch_manifest(experiment(profile=False))) is None


def test_the_operator_refuses_a_profile_of_an_external_cluster_only():
    external = models.ExperimentSpec.model_validate({"target": {"external": {"url": "https://es:9200"}},
                                                     "workload": {"track": "smoke"}, "profile": {}})
    assert "external" in manifests.not_on_kubernetes(external)
    assert manifests.not_on_kubernetes(experiment().spec) is None
    assert manifests.not_on_kubernetes(external.model_copy(update={"profile": None})) is None


def test_a_sweep_never_runs_a_cell_without_a_profile_on_nodes_that_record_one():
    cell = {"elasticsearch": {"version": "8.7.1"}, "workload": {"track": "smoke"}}
    assert grid.cluster_key(cell) != grid.cluster_key({**cell, "profile": {"event": "cpu"}})


def test_the_report_carries_every_tasks_stacks_trimmed_to_the_most_sampled_within_the_budget(tmp_path):
    # Many distinct stacks of one sample each and one hot stack: incompressible enough to need trimming.
    text = "".join(f"java.lang.Thread.run;Frame{i:06d};{os.urandom(8).hex()} 1\n" for i in range(20000))
    text += "java.lang.Thread.run;Hot.method 5000\n"
    tasks = []
    for name in ("a", "b"):
        (tmp_path / f"{name}.collapsed.gz").write_bytes(gzip.compress(text.encode()))
        tasks.append(models.TaskResult(task=name, profile=models.TaskProfile(samples=25000, stacks=f"{name}.collapsed.gz")))
    recording = models.ProfileRecording(profiler="async-profiler 4.6", event="cpu", folder="profiles")
    report = RaceReport(succeeded=True, results=models.Results(race_id="r", tasks=tasks, profile=recording))
    race.attach_profiles(report, tmp_path, budget=100_000)
    assert set(report.profiles) == {"a.collapsed.gz", "b.collapsed.gz"}
    sizes = [len(base64.b64decode(v)) for v in report.profiles.values()]
    assert all(size <= 50_000 for size in sizes), sizes
    kept = profiles.parse(gzip.decompress(base64.b64decode(report.profiles["a.collapsed.gz"])).decode())
    assert kept.counts[("java.lang.Thread.run", "Hot.method")] == 5000  # the most sampled stays
    assert report.results.tasks[0].profile.samples_left_out == 25000 - kept.samples > 0
    assert report.results.profile.folder is None  # the report holds them now


@pytest.fixture
def served(tmp_path):
    """The sidecar's server on a folder of recordings, on a free port, as the pod runs it (plain HTTP);
    its probe counts the calls."""
    folder, password = tmp_path / "recordings", tmp_path / "password"
    folder.mkdir()
    password.write_text("s3cret\n")
    listings = []  # each listing it answered: evidence of a client's polling
    probes = []

    def probe():
        probes.append(time.time())
        return {"jit_cpu_ms": 10.0 * len(probes)}

    class Handler(sidecar.make_handler(password, probe, "prof-es-default-0", folder)):
        def do_GET(self):
            super().do_GET()
            if self.path == "/recordings":
                listings.append(time.time())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}", listings
    server.shutdown()


def test_the_sidecar_serves_the_nodes_probe_to_the_elastic_user_and_the_runner_reads_it_by_node(served):
    _, url, _ = served
    assert json.loads(get(url + "/probe")) == {"node": "prof-es-default-0", "counters": {"jit_cpu_ms": 10.0}}
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(url + "/probe", "wrong")
    assert refused.value.code == 401
    # The runner asks every pod's sidecar beside each sample; one that does not answer leaves its node out.
    probe = sidecars.probe([url, "http://127.0.0.1:9"], "s3cret", None, timeout=2.0)
    assert probe() == {"prof-es-default-0": {"jit_cpu_ms": 20.0}}


def test_a_sidecar_without_recordings_serves_none(tmp_path):
    password = tmp_path / "password"
    password.write_text("s3cret")
    server = ThreadingHTTPServer(("127.0.0.1", 0), sidecar.make_handler(password, dict, "n"))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert json.loads(get(url + "/probe")) == {"node": "n", "counters": {}}
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(url + "/recordings")
        assert refused.value.code == 404
    finally:
        server.shutdown()


def jfr(start, end, finished=True, body=b""):
    """A JFR chunk as async-profiler writes it: a header (its size, the offsets it writes last, its
    start and duration), then BODY. Unfinished: the offsets still 0."""
    size = 68 + len(body)
    offsets = (size - 1, 68) if finished else (0, 0)
    return struct.pack(">IIqqqqqqqI", 0x464C5200, 0x20000, size, *offsets, int(start * 1e9), int((end - start) * 1e9),
                       0, 0, 0) + body


def recording(folder, name, start, end, finished=True):
    (folder / name).write_bytes(jfr(start, end, finished, name.encode()))


def get(url, password="s3cret"):
    request = urllib.request.Request(url)
    if password is not None:
        request.add_header("Authorization", "Basic " + base64.b64encode(f"elastic:{password}".encode()).decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def test_the_sidecar_serves_the_finished_recordings_only_and_only_to_the_elastic_user(served):
    folder, url, _ = served
    now = time.time()
    recording(folder, "recording-2.jfr", now - 30, now)
    recording(folder, "recording-1.jfr", now - 60, now - 30)
    recording(folder, "recording-3.jfr", now, now + 30, finished=False)  # the one the profiler is writing
    (folder / "recording-4.jfr").write_bytes(jfr(now, now + 30, body=bytes(200))[:100])  # cut short
    (folder / "notes.txt").write_text("not a recording")
    listed = json.loads(get(url + "/recordings"))
    assert [r["name"] for r in listed] == ["recording-1.jfr", "recording-2.jfr"]  # by their own start
    assert listed[0]["start"] == pytest.approx(now - 60) and listed[0]["end"] == pytest.approx(now - 30)
    assert listed[0]["size"] == 68 + len(b"recording-1.jfr")
    assert get(url + "/recordings/recording-2.jfr") == jfr(now - 30, now, body=b"recording-2.jfr")
    for path in ("/recordings/recording-3.jfr", "/recordings/recording-4.jfr", "/recordings/notes.txt",
                 "/recordings/../password", "/"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(url + path)
        assert refused.value.code == 404, path
    for password in (None, "wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(url + "/recordings", password)
        assert refused.value.code == 401


def test_the_runner_waits_for_a_recording_that_ends_past_the_race_and_joins_those_that_overlap_it(served, tmp_path):
    folder, url, listings = served
    profiler = PodProfiles(models.Profile(), [url], tmp_path / "fetched", java=tmp_path / "java",
                           converter=tmp_path / "jar", password="s3cret", wait_seconds=20)
    now = time.time()
    recording(folder, "recording-a.jfr", now - 90, now - 60)  # before the race: left out
    profiler.start()
    turn = time.time()
    recording(folder, "recording-b.jfr", now - 60, turn)  # over the race's start
    profiler.stop()
    recording(folder, "recording-c.jfr", turn, turn + 60, finished=False)  # over its end, still written
    fetching = threading.Thread(target=profiler.fetch)
    fetching.start()
    wait_for(lambda: listings, what="the runner to list the recordings")
    assert fetching.is_alive(), "it must wait: nothing that ends past the race is finished yet"
    assert not (tmp_path / "fetched" / "node-0.jfr").exists()
    recording(folder, "recording-c.jfr", turn, turn + 60)
    recording(folder, "recording-d.jfr", turn + 60, turn + 90)  # after the race: left out
    fetching.join(timeout=30)
    assert not fetching.is_alive()
    assert len(listings) >= 2  # it listed again after the wait
    expected = jfr(now - 60, turn, body=b"recording-b.jfr") + jfr(turn, turn + 60, body=b"recording-c.jfr")
    assert (tmp_path / "fetched" / "node-0.jfr").read_bytes() == expected  # in order: JFR reads chunk after chunk


def test_show_names_the_configmap_of_a_kubernetes_run_and_says_why_a_profile_is_incomplete():
    recording = models.ProfileRecording(profiler="async-profiler 4.6", event="cpu", interval="10ms",
                                        config_map="prof-profiles", problem="no window in Rally's log for search")
    task = models.TaskResult(task="index", profile=models.TaskProfile(samples=120, top=[
        models.Frame(frame="org.elasticsearch.index.engine.InternalEngine.index", percent=40.0)]))
    console = Console(width=200, record=True)
    for table in rendering.results_tables(models.Results(race_id="r", tasks=[task], profile=recording)):
        console.print(table)
    text = console.export_text()
    assert "stacks in ConfigMap prof-profiles" in text and "incomplete: no window in Rally's log for search" in text
    assert "40.0 %  org.elasticsearch.index.engine.InternalEngine.index" in text


def test_the_sidecars_command_serves_the_probe_under_the_pods_host_name(tmp_path):
    """The sidecar as the pod runs it (its command and arguments from the manifest, folders of ours)."""
    password = tmp_path / "password"
    password.write_text("s3cret")
    (tmp_path / "data").mkdir()
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    [_, server] = pod_spec(manifests.elasticsearch_manifest(experiment(tls=False, profile=False), IMAGE))["containers"]
    args = [a.replace(manifests.SIDECAR_DATA_DIR, str(tmp_path / "data")).replace(f"={manifests.SIDECAR_PORT}", f"={port}")
            .replace("/esbench/elastic/password", str(password)) for a in server["args"]]
    assert server["command"] == ["python", "-m", "esbench.sidecar"]  # the image's PATH has its venv's python first
    served = subprocess.Popen([sys.executable, *server["command"][1:], *args])
    try:
        answer = wait_for(lambda: _answer(f"http://127.0.0.1:{port}/probe"), 30, what="the sidecar to answer")
        assert answer["node"] == socket.gethostname() and isinstance(answer["counters"], dict)
    finally:
        served.terminate()
        assert served.wait(timeout=30) == 0  # SIGTERM: it exits at once, as a pod's deletion needs


def _answer(url):
    try:
        return json.loads(get(url))
    except OSError:
        return None
