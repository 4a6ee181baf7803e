"""The sweep reconciler against a Kubernetes API of its own: its cache of comparisons lives no longer than
its sweep, and a shared cluster it deletes to make anew is said so only when it did."""

from __future__ import annotations

from typing import Any

from esbench.api import models
from esbench.controller import handlers
from esbench.controller.sweeps import SweepReconciler
from esbench.planning import manifests

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


class OneCluster(OneSweep):
    """The sweep's shared cluster, made before a disruption; `deletes` says whether a delete finds it."""

    def __init__(self, body: dict[str, Any], deletes: bool):
        super().__init__(body)
        self.deletes = deletes
        self.events: list[tuple[Any, ...]] = []
        self.cluster = {"metadata": {"name": "codec-es", "uid": "es-uid", "creationTimestamp": "2026-12-03T10:00:00Z",
                                     "ownerReferences": [{"uid": "sweep-uid"}]}}

    def get_elasticsearch(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.cluster

    def delete_elasticsearch(self, namespace: str, name: str, uid: str) -> bool:
        return self.deletes

    def emit(self, *event: Any) -> None:
        self.events.append(event)


def test_a_stale_shared_cluster_is_said_renewed_only_when_this_look_deleted_it():
    body = {"apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND,
            "metadata": {"name": "codec", "namespace": "perf", "uid": "sweep-uid"},
            "spec": {"template": TEMPLATE, "matrix": [{"field": "index.codec", "values": ["default"]}]}}
    for deletes, said in ((True, ["ClusterRenewed"]), (False, [])):
        kube = OneCluster(body, deletes)
        reconciler = SweepReconciler(kube, kube.emit)  # type: ignore[arg-type]
        assert not reconciler._renewed(body, manifests.Sweep.from_body(body), "codec-es", "2026-12-03T11:00:00Z")
        assert [event[2] for event in kube.events] == said
