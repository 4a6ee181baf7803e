"""The sweep reconciler's cache of comparisons lives no longer than its sweep."""

from __future__ import annotations

from typing import Any

from esbench.api import models
from esbench.controller import handlers
from esbench.controller.sweeps import SweepReconciler

TEMPLATE = {"elasticsearch": {"version": "8.15.3"}, "workload": {"track": "smoke"}}


class OneSweep:
    """A Kubernetes API that holds one sweep and takes whatever the reconciler makes."""

    def __init__(self, body: dict[str, Any]):
        self.body: dict[str, Any] | None = body
        self.made: list[dict[str, Any]] = []

    def get_sweep(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.body

    def list_experiments(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        return []

    def create_elasticsearch(self, manifest: dict[str, Any]) -> None:
        self.made.append(manifest)

    def create_experiment(self, manifest: dict[str, Any]) -> None:
        self.made.append(manifest)

    def patch_sweep_status(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        assert self.body is not None
        self.body = {**self.body, "status": {**(self.body.get("status") or {}), **patch}}


def test_a_sweep_deleted_mid_run_leaves_no_cached_comparison(monkeypatch):
    body = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND,
            "metadata": {"name": "codec", "namespace": "perf", "uid": "sweep-uid"},
            "spec": {"template": TEMPLATE, "order": "Interleaved", "warmupRuns": 0,
                     "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}]}}
    kube = OneSweep(body)
    reconciler = SweepReconciler(kube, lambda *event: None)  # type: ignore[arg-type]
    reconciler.reconcile("perf", "codec")
    assert kube.made and reconciler._comparisons  # its first run started, its comparison cached

    kube.body = None  # deleted while its runs are under way
    monkeypatch.setattr(handlers, "_sweep_reconciler", reconciler)
    handlers.sweep_event(type="DELETED", body=body, namespace="perf", name="codec")
    assert reconciler._comparisons == {}
