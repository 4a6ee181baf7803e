"""Helpers for tests that drive ExperimentSweeps through a real API server, playing ECK and the
kubelet for their runs."""

from __future__ import annotations

from esbench.api import models
from esbench.api.race_report import RaceReport
from esbench.runner.results import summarize
from tests.support.experiments import runner_log
from tests.support.waiting import wait_for

TEMPLATE = {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}
CODECS = [{"field": "index.codec", "values": ["default", "best_compression"]}]


def create_sweep(apis, namespace: str, name: str, **spec) -> dict:
    # The tests follow runs by name in the cells' order; the default order and warm-up run have
    # their own test (test_sweeps.py's first).
    spec.setdefault("order", "Interleaved")
    spec.setdefault("warmupRuns", 0)
    body = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": name},
            "spec": {"template": TEMPLATE, **spec}}
    return apis.custom.create_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, body)


def get_sweep(apis, namespace: str, name: str) -> dict:
    return apis.custom.get_namespaced_custom_object(models.GROUP, models.VERSION, namespace, models.SWEEP_PLURAL, name)


def runs(apis, namespace: str, sweep: str) -> list[dict]:
    return apis.custom.list_namespaced_custom_object(
        models.GROUP, models.VERSION, namespace, models.PLURAL, label_selector=f"esbench.io/sweep={sweep}")["items"]


def phase(resource: dict) -> str | None:
    return (resource.get("status") or {}).get("phase")


class Driver:
    """Plays ECK and the kubelet for a sweep's runs, one finished race at a time."""

    def __init__(self, apis, eck, kubelet, namespace: str, race_json: dict, sweep: str):
        self.apis, self.eck, self.kubelet, self.namespace = apis, eck, kubelet, namespace
        self.race_json, self.sweep = race_json, sweep
        self.started: list[str] = []  # run names, in the order they reached Benchmarking
        self.most_at_once = 0

    def results(self, throughput: float):
        results = summarize(self.race_json)
        results.tasks[0].throughput.median = throughput  # index-append, docs/s
        return results

    def next_benchmarking(self, timeout: float = 60) -> dict:
        def find():
            for es in self.eck.list(self.namespace):  # ECK would make every cluster ready
                if not (es.get("status") or {}).get("phase") == "Ready":
                    self.eck.make_ready(self.namespace, es["metadata"]["name"])
            children = runs(self.apis, self.namespace, self.sweep)
            active = [c for c in children if phase(c) not in ("Succeeded", "Failed")]
            self.most_at_once = max(self.most_at_once, len(active))
            return next((c for c in children if phase(c) == "Benchmarking"
                         and c["metadata"]["name"] not in self.started), None)
        child = wait_for(find, timeout, "a run of the sweep to start its race",
                         diagnose=lambda: f"sweep status: {get_sweep(self.apis, self.namespace, self.sweep).get('status')}")
        self.started.append(child["metadata"]["name"])
        return child

    def finish(self, child: dict, throughput: float | None, exit_code: int = 0) -> None:
        name = child["metadata"]["name"]
        if throughput is None:  # a crash without a report
            self.kubelet.finish_job_pod(self.namespace, f"{name}-rally", "Traceback: boom\n", exit_code=1)
            return
        report = RaceReport(succeeded=True, results=self.results(throughput), race_json=self.race_json)
        self.kubelet.finish_job_pod(self.namespace, f"{name}-rally", runner_log(report), exit_code=exit_code)

    def wait_done(self, timeout: float = 60) -> dict:
        return wait_for(lambda: (s := get_sweep(self.apis, self.namespace, self.sweep))
                        and phase(s) in ("Succeeded", "Failed") and s, timeout, f"sweep {self.sweep} to finish",
                        diagnose=lambda: str(get_sweep(self.apis, self.namespace, self.sweep).get("status")))
