"""The operator killed again and again, at points chosen by a seeded random schedule, while
Experiments and a sweep run: nothing is stuck, nothing is made twice, nothing is lost.

Real: kube-apiserver, controller-manager (Job controller, garbage collector), the CRDs and the
operator process, SIGKILLed as by the OOM killer. Stood in for: ECK's controller (every cluster
is made ready as soon as it appears) and the kubelet (every Rally pod ends with the runner's
report of a real race.json as soon as its Job has one).
"""

from __future__ import annotations

import random
import threading

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.runner.results import summarize
from tests.support.experiments import as_the_runner_reported, create_experiment, runner_log
from tests.support.waiting import wait_for

EXPERIMENTS = [f"chaos-{i}" for i in range(8)]
KILLS = 6


def _experiments(apis, namespace: str) -> list[dict]:
    return apis.custom.list_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.PLURAL)["items"]


def _kubelet_loop(apis, kubelet, namespace: str, log: str, stop: threading.Event, finished: set[str]) -> None:
    """End every Rally pod once, as soon as its Job exists."""
    while not stop.is_set():
        for job in apis.batch.list_namespaced_job(namespace).items:
            if job.metadata.name not in finished:
                try:
                    kubelet.finish_job_pod(namespace, job.metadata.name, log, exit_code=0, timeout=10)
                except Exception as error:  # e.g. its pod not made yet: the next round tries again
                    print(f"stand-in kubelet: {job.metadata.name}: {error}")
                    continue
                finished.add(job.metadata.name)
        stop.wait(0.2)


def test_the_operator_killed_at_random_points_leaves_everything_terminal_once_and_cleaned_up(
        apis, eck, standin_kubelet, namespace, operator, race_json):
    chaos = random.Random(20261122)
    served = eck.serve(namespace)
    log = runner_log(RaceReport(succeeded=True, results=summarize(race_json), race_json=race_json))
    stop, finished = threading.Event(), set()
    kubelet = threading.Thread(target=_kubelet_loop, args=(apis, standin_kubelet, namespace, log, stop, finished),
                               daemon=True)
    kubelet.start()
    try:
        for name in EXPERIMENTS:
            create_experiment(apis, namespace, name)
        apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, {
            "apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "chaos"},
            "spec": {"template": {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}},
                     "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}],
                     "repetitions": 2, "warmupRuns": 0}})
        for _ in range(KILLS):
            stop.wait(chaos.uniform(0.3, 3.0))
            operator.kill()
            stop.wait(chaos.uniform(0.0, 1.0))
            operator.start()

        def all_terminal() -> bool:
            sweep = apis.custom.get_namespaced_custom_object(
                models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, "chaos")
            return (sweep.get("status") or {}).get("phase") in ("Succeeded", "Failed") and all(
                (e.get("status") or {}).get("phase") in ("Succeeded", "Failed") for e in _experiments(apis, namespace))
        wait_for(all_terminal, 180, "every Experiment and the sweep to end",
                 diagnose=lambda: str([(e["metadata"]["name"], e.get("status", {}).get("phase"))
                                       for e in _experiments(apis, namespace)]))
        wait_for(lambda: eck.list(namespace) == [], 60, "every cluster (policy Delete) to be deleted",
                 diagnose=lambda: str([es["metadata"]["name"] for es in eck.list(namespace)]))
    finally:
        stop.set()
        eck.stop()
        kubelet.join(timeout=30)
        served.join(timeout=10)

    experiments = _experiments(apis, namespace)
    sweep = apis.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL,
                                                     "chaos")
    runs = [e for e in experiments if e["metadata"]["name"].startswith("chaos-c")]
    assert sorted(e["metadata"]["name"] for e in experiments if e not in runs) == EXPERIMENTS
    assert sorted(e["metadata"]["name"] for e in runs) == ["chaos-c0-r1", "chaos-c0-r2", "chaos-c1-r1", "chaos-c1-r2"]
    assert all(e["status"]["phase"] == "Succeeded" for e in experiments), "a kill is no reason to fail"
    assert sweep["status"]["phase"] == "Succeeded" and sweep["status"]["progress"]["summary"] == "4/4"
    # Every child exactly once: one Job and one race.json ConfigMap per Experiment.
    jobs = [j.metadata.labels["esbench.io/experiment"] for j in apis.batch.list_namespaced_job(namespace).items]
    assert sorted(jobs) == sorted(e["metadata"]["name"] for e in experiments)
    configmaps = [c.metadata.name for c in apis.core.list_namespaced_config_map(namespace).items
                  if c.metadata.name.endswith("-race")]
    assert sorted(configmaps) == sorted(f"{e['metadata']['name']}-race" for e in experiments)
    # Every result present, as Rally reported it.
    expected = summarize(race_json).to_wire()
    assert all(as_the_runner_reported(e["status"]["results"]) == expected for e in experiments)
    assert all(as_the_runner_reported(r["results"]) == expected for r in sweep["status"]["runs"])
