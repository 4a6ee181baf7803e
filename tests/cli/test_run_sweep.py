"""`esbench run SWEEP.yaml`: an ExperimentSweep without Kubernetes, with real esrally on the
runner tests' Elasticsearch (--es-url), interrupted and resumed (the pure parts are in
tests/unit/test_localsweep.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import yaml

from esbench.api import models
from esbench.history.localstore import LocalStore
from esbench.runner import esrallyprocess
from tests.support.elasticsearch import LATEST
from tests.support.waiting import wait_for

SWEEP = {
    "apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "local-codec"},
    "spec": {
        "template": {
            "elasticsearch": {"version": LATEST, "heap": "512m"},
            "index": {"shards": 1, "replicas": 0},
            "workload": {"track": "smoke", "testMode": True, "trackParams": {"doc_count": 500}},
        },
        "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}],
        "repetitions": 1, "order": "Interleaved", "warmupRuns": 0,  # the resume below follows c0 then c1
        "statistics": {"primary": [{"task": "index-append", "metric": "throughput.median"}]},
    },
}


def test_a_sweep_interrupted_mid_run_resumes_where_it_stopped(esbench, esrally, clusters, tmp_path):
    url = clusters.get(LATEST).url
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(SWEEP))
    folder = tmp_path / "local-codec"
    # --work-dir: each run's own folder in it, Rally's home and log within, are the evidence waited for.
    command = [sys.executable, "-m", "esbench.cli", "run", "sweep.yaml", "--es-url", url, "--work-dir", "work"]
    history = LocalStore(tmp_path / "history.sqlite")  # the esbench fixture's, for the second command too
    environment = {**os.environ, "COLUMNS": "200", "ESBENCH_ESRALLY": esrally, "ESBENCH_HISTORY": str(history.path)}
    with open(tmp_path / "first.out", "w") as stdout, open(tmp_path / "first.err", "w") as stderr:
        first = subprocess.Popen(command, cwd=tmp_path, env=environment, stdout=stdout, stderr=stderr)
    try:
        # Interrupted once the first run has ended and the second one's esrally has begun (its log).
        rally_home = tmp_path / "work" / "local-codec-c1-r1" / "rally"
        wait_for(lambda: first.poll() is not None or (rally_home / ".rally" / "logs" / "rally.log").exists(), 300,
                 "the second run's esrally to begin")
        assert first.poll() is None, "the sweep ended before it was interrupted"
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    out, err = (tmp_path / "first.out").read_text(), (tmp_path / "first.err").read_text()
    assert first.returncode == 130, out + err
    assert esrallyprocess.rally_processes() == [], "the interrupted race left Rally processes behind"
    assert "the runs that ended are in local-codec; run the same command again to go on" in " ".join(err.split())
    assert sorted(p.name for p in (folder / "runs").iterdir()) == ["local-codec-c0-r1.json"]
    made_first = (folder / "runs" / "local-codec-c0-r1.json").read_bytes()
    interrupted = json.loads((folder / "sweep.json").read_text())["status"]
    assert interrupted["phase"] == "Running" and interrupted["progress"]["summary"] == "1/2"

    second = esbench("run", "sweep.yaml", "--es-url", url, env={"ESBENCH_ESRALLY": esrally})
    assert second.exit_code == 0, second.stdout + second.stderr
    assert "1 run(s) already in local-codec: going on from there" in second.stdout
    assert sorted(p.name for p in (folder / "runs").iterdir()) == ["local-codec-c0-r1.json", "local-codec-c1-r1.json"]
    assert (folder / "runs" / "local-codec-c0-r1.json").read_bytes() == made_first, "not made again"
    done = json.loads((folder / "sweep.json").read_text())
    assert done["status"]["phase"] == "Succeeded" and done["status"]["progress"]["summary"] == "2/2"
    assert done["status"]["startTime"] == interrupted["startTime"]
    run = json.loads((folder / "runs" / "local-codec-c1-r1.json").read_text())
    assert run["spec"]["index"]["codec"] == "best_compression" and run["status"]["phase"] == "Succeeded"
    assert run["metadata"]["labels"]["esbench.io/cell"] == "c1"
    # Each run recorded in the history as it ended, before and after the interruption: two
    # configurations (the codecs), one race each.
    assert sorted(c.races for c in history.configurations()) == [1, 1]
    assert {c.last_experiment for c in history.configurations()} == {"local-codec-c0-r1", "local-codec-c1-r1"}

    # The folder reads as a sweep does from the cluster, and its runs as Experiments.
    shown = esbench("sweep", "local-codec")
    assert shown.exit_code == 0, shown.stderr
    assert "local-codec: Succeeded" in shown.stdout and "Comparison against c0" in shown.stdout
    compared = esbench("compare", "local-codec", "--format", "csv")
    assert compared.exit_code == 0, compared.stderr
    assert {line.split(",")[5] for line in compared.stdout.splitlines()[1:]} == {"local-codec-c0-r1",
                                                                                  "local-codec-c1-r1"}
