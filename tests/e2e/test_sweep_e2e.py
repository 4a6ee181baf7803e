"""End to end: an ExperimentSweep whose cells differ only in index settings shares one real cluster,
and the index the first run builds, the next restores (workload.reuseIndex).

Real: the API server, scheduler, controllers, kubelet, containerd, kube-proxy, DNS, the
operator image installed by Helm, the ECK operator, the sweep's one Elasticsearch pod (HTTPS,
basic auth) and every run's Rally Job. See conftest.py for how the cluster is obtained. The namespace enforces Pod Security "restricted".
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from esbench.api import models
from esbench.runner.corpus import TEST_MODE_COUNT
from tests.e2e.test_e2e import POLL_SECONDS, RACE_TIMEOUT, Experiments, quickstart
from tests.support.waiting import wait_for

SWEEP = "codec"


class Sweeps(Experiments):
    """The namespace's Experiments plus one ExperimentSweep, and every Elasticsearch name ever seen."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.clusters_seen: set[str] = set()

    def create_sweep(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": name}, "spec": spec}
        return self.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, self.namespace, models.SWEEP_PLURAL,
                                                           body)

    def sweep(self, name: str) -> dict[str, Any]:
        return self.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, self.namespace, models.SWEEP_PLURAL, name)

    def runs(self, sweep: str) -> dict[str, dict[str, Any]]:
        items = self.custom.list_namespaced_custom_object(models.GROUP, models.VERSION, self.namespace, models.PLURAL,
                                                          label_selector=f"esbench.io/sweep={sweep}")["items"]
        return {item["metadata"]["name"]: item for item in items}

    def finished(self, name: str) -> dict[str, Any] | None:
        self.clusters_seen.update(es["metadata"]["name"] for es in self.elasticsearches())
        sweep = self.sweep(name)
        return sweep if (sweep.get("status") or {}).get("phase") in ("Succeeded", "Failed") else None

    def diagnose(self) -> str:
        sweeps = self.custom.list_namespaced_custom_object(models.GROUP, models.VERSION, self.namespace, models.SWEEP_PLURAL)
        lines = ["--- sweeps:"] + [json.dumps({"name": s["metadata"]["name"], "status": s.get("status")})[:3000]
                                   for s in sweeps["items"]]
        return "\n".join(lines + [f"--- clusters seen: {sorted(self.clusters_seen)}", super().diagnose()])


@pytest.fixture
def sweeps(cluster, operator, restricted_namespace) -> Sweeps:
    return Sweeps(cluster, restricted_namespace, operator["namespace"])


def test_sweep_runs_its_cells_one_after_another_on_one_shared_cluster_the_second_restoring_the_firsts_index(sweeps):
    """Cells that differ only in how the node reads the index (workload.reuseIndex restores it
    with that store type): the first run builds it and keeps a snapshot in the shared cluster's
    path.repo, which the runner finds there; the second restores it."""
    template = quickstart(sweeps.cluster, test_mode=True)["spec"]
    template["workload"] = {**template["workload"], "track": "codec-search", "reuseIndex": True}
    # c0 builds the index, c1 restores it: the cells' order, and no warm-up run to build it first.
    sweeps.create_sweep(SWEEP, {"template": template, "repetitions": 1, "clusterReuse": True,
                                "order": "Interleaved", "warmupRuns": 0,
                                "matrix": [{"field": "index.settings", "values": [{}, {"index.store.type": "niofs"}]}]})
    done = wait_for(lambda: sweeps.finished(SWEEP), 2 * RACE_TIMEOUT, what=f"sweep {SWEEP} to finish",
                    interval=POLL_SECONDS, diagnose=sweeps.diagnose)
    status = done["status"]
    assert status["phase"] == "Succeeded", f"{status.get('reason')}: {status.get('message')}\n{sweeps.diagnose()}"
    assert {c["type"]: c["status"] for c in status["conditions"]}["Complete"] == "True"
    assert status["progress"]["succeeded"] == 2 and status["progress"]["retries"] == 0, status["progress"]

    # One cluster, owned by the sweep, for both cells: never one per run.
    assert sweeps.clusters_seen == {f"{SWEEP}-g0"}
    assert status["clusters"] == [f"{SWEEP}-g0"]

    runs = sweeps.runs(SWEEP)
    assert sorted(runs) == [f"{SWEEP}-c0-r1", f"{SWEEP}-c1-r1"]
    for run in runs.values():
        run_status = run["status"]
        assert run_status["phase"] == "Succeeded", run_status
        assert run["spec"]["target"] == {"elasticsearchRef": {"name": f"{SWEEP}-g0"}}
        assert run_status["clusterName"] == f"{SWEEP}-g0"
        # Each run searches a fresh copy: the node holds test mode's corpus once, not twice.
        (node,) = run_status["results"]["nodes"]
        assert TEST_MODE_COUNT <= node["docsCount"] < 2 * TEST_MODE_COUNT, node
    built, restored = (runs[f"{SWEEP}-{cell}-r1"]["status"]["results"] for cell in ("c0", "c1"))
    tasks = {task["task"]: task for task in built["tasks"]}
    assert tasks["index-append"]["throughput"]["median"] > 0 and tasks["index-append"]["errorRate"] == 0, tasks
    assert built["trackParams"]["index_snapshot"]["restore"] is False, built["trackParams"]
    assert restored["trackParams"]["index_snapshot"] == {**built["trackParams"]["index_snapshot"], "restore": True,
                                                         "index_settings": {"index.store.type": "niofs"}}
    assert "index-append" not in {task["task"] for task in restored["tasks"]}
    assert [i["segments"] for i in restored["indices"]] == [i["segments"] for i in built["indices"]]
    assert runs[f"{SWEEP}-c1-r1"]["spec"]["index"]["settings"] == {"index.store.type": "niofs"}
    # One after another: the second race never overlapped the first on the shared cluster.
    first, second = runs[f"{SWEEP}-c0-r1"]["status"], runs[f"{SWEEP}-c1-r1"]["status"]
    assert second["startTime"] >= first["completionTime"], (first, second)

    row = next((r for r in status["comparison"]
                if r["subject"] == "random-hits" and r["metric"] == "throughput.median"), None)
    assert row is not None, status["comparison"]
    assert [cell["cell"] for cell in row["cells"]] == ["c0", "c1"]
    # Where a run's time goes (Rally's task windows come from the node sampler in the Rally pod).
    timing = status["timing"]
    print(f"sweep run timing: {timing}")
    assert timing["runs"] == 2 and 0 < timing["taskSeconds"] < timing["runSeconds"], timing

    sweeps.assert_no_pod_was_refused()
    # cleanup: Delete (the template's default): the sweep deletes its cluster once every run is done.
    wait_for(lambda: not sweeps.elasticsearches(), 120, what="the shared cluster to be deleted",
             interval=POLL_SECONDS, diagnose=sweeps.diagnose)
    wait_for(lambda: not [p for p in sweeps.pods() if "-es-" in p.metadata.name], 120,
             what="the Elasticsearch pod to go", interval=POLL_SECONDS, diagnose=sweeps.diagnose)
