"""An ExperimentSweep's lifecycle: start its runs in plan order, follow them, compare the cells
(what the runs say, and the status it makes, is sweepstate.py's).

Level-triggered like lifecycle.Reconciler: each call reads the sweep and its runs (child
Experiments, found by label) afresh, starts whatever may start now, and writes one status
patch. Run names are deterministic, so a repeated call never starts a run twice, and the
comparison is recomputed from the runs' own statuses, so nothing is lost across restarts.

Every run the sweep has seen is also recorded in its status (status.runs: outcome, and Rally's
figures of a run that succeeded), so a run that vanishes (deleted by hand, or by a TTL from the
template) keeps its results, and one deleted before it finished counts as a failed attempt
(RunDeleted) instead of being started again for ever.

Cluster reuse: runs whose cells share a cluster key (grid.cluster_key) form a group. With
reuse, the sweep owns one cluster per group and the group's runs use it one after another
(spec.target.elasticsearchRef); `parallelism` bounds the groups at work at once. Without
reuse, each run creates its own cluster and `parallelism` bounds the runs at once.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import ValidationError

from esbench.api.models import (
    SWEEP_LABEL,
    SWEEP_TERMINAL_PHASES,
    CleanupPolicy,
    Elasticsearch,
    Profile,
    SweepPhase,
    SweepSpec,
    SweepStatus,
    lifecycle_setting,
)
from esbench.api.reasons import ConditionType, Reason
from esbench.controller.config import Settings
from esbench.controller.kube import KindNotServed, Kube, Rejected
from esbench.controller.reconciling import EventSink, KeyedLocks, delete_cluster
from esbench.controller.storewriter import record_in_store
from esbench.history.esstore import ElasticsearchStore
from esbench.planning import grid, manifests, status, sweepstate
from esbench.planning.readiness import ECK_NOT_INSTALLED
from esbench.planning.status import recorded


class SweepReconciler:
    def __init__(self, kube: Kube, emit: EventSink, store: ElasticsearchStore | None = None,
                 settings: Settings | None = None):
        self.kube = kube
        self.settings = settings or Settings.from_env({})
        self.emit = emit
        self.store = store
        self.locks = KeyedLocks()
        self._comparisons: dict[str, sweepstate.Comparison] = {}

    def reconcile(self, namespace: str, name: str) -> None:
        with self.locks((namespace, name)):
            body = self.kube.get_sweep(namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return
            current = body.get("status") or {}
            if current.get("phase") in SWEEP_TERMINAL_PHASES:
                self._record(body)  # again after a restart, or while the store is down
                return
            try:
                sweep = manifests.Sweep.from_body(body)
                plan = _plan(sweep.uid, sweep.spec.model_dump_json(), name, namespace)
            except (ValidationError, grid.InvalidSweep) as error:
                message = _message(error)
                self._patch(body, {"phase": SweepPhase.FAILED.value, "reason": Reason.INVALID_SPEC, "message": message,
                                   "completionTime": status.now()},
                            (ConditionType.COMPLETE, True, Reason.INVALID_SPEC, message))
                self.emit(body, "Warning", Reason.INVALID_SPEC, message)
                return
            self._step(body, sweep, plan)

    def forget(self, namespace: str, name: str, uid: str) -> None:
        """The sweep is deleted: its cached comparison goes too (else it stays for the operator's
        life, kept only for a sweep that completes). Under its lock, so that a reconcile still under
        way cannot put it back."""
        with self.locks((namespace, name)):
            self._comparisons.pop(uid, None)

    def _step(self, body: dict[str, Any], sweep: manifests.Sweep, plan: grid.Plan) -> None:
        """Decide (sweepstate.decide), then apply: start runs, release clusters, patch the status."""
        children = [child for child in self.kube.list_experiments(
            sweep.namespace, f"{SWEEP_LABEL}={sweep.name}") if _owned_by(child, sweep)]
        records = (body.get("status") or {}).get("runs") or []
        decision = sweepstate.decide(plan, sweep, children, records, previous=self._comparisons.get(sweep.uid))
        self._comparisons[sweep.uid] = decision.comparison
        started: list[sweepstate.Start] = []
        not_started = None
        try:
            for start in decision.starts:
                if self._start(body, sweep, start):
                    started.append(start)
        except KindNotServed:
            not_started = (Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
        except Rejected as rejected:  # e.g. a quota: said in the status until it is lifted
            not_started = (Reason.REJECTED, str(rejected))
        for cluster, any_failed in decision.releases:
            self._release(body, sweep, cluster, any_failed)

        report = sweepstate.report(decision, sweep.spec, started)
        report.fields["startTime"] = (body.get("status") or {}).get("startTime") or status.now()
        if not_started and not report.complete:  # e.g. no ECK: say so rather than "0/4 runs finished"
            # Like an Experiment's cluster, what the sweep waits for may take clusterReadyTimeoutSeconds.
            give_up = status.waited(body, max(lifecycle_setting(cell.spec, "clusterReadyTimeoutSeconds")
                                              for cell in plan.cells))
            report.fields.update(reason=not_started[0], message=not_started[1])
            if give_up:
                report.fields.update(phase=SweepPhase.FAILED.value, completionTime=status.now())
                report.complete = True
            report.conditions[-1] = (ConditionType.COMPLETE, give_up, *not_started)
        patched = self._patch(body, report.fields, *report.conditions)
        if report.complete:
            self._comparisons.pop(sweep.uid)
            self.emit(body, "Warning" if report.fields["phase"] == SweepPhase.FAILED else "Normal",
                      report.fields["reason"], report.fields["message"])
            self._record(patched)

    def _record(self, body: dict[str, Any]) -> None:
        """The finished sweep (its comparison, gates and runs) in the results store, once; raises
        StoreUnavailable."""
        if self.store is not None and not recorded(body):
            store = self.store
            record_in_store(body, lambda: store.add_sweep(manifests.as_recorded(body)),
                            f"as sweep {body['metadata']['uid']}", self.emit,
                            lambda condition: self._patch(body, {}, condition))

    # --- steps ---

    def _start(self, body: dict[str, Any], sweep: manifests.Sweep, start: sweepstate.Start) -> bool:
        """Whether the run started; not while its shared cluster is being made anew."""
        run = start.run
        if start.cluster and start.stale_before and not self._renewed(body, sweep, start.cluster, start.stale_before):
            return False
        if start.cluster:
            es = Elasticsearch.model_validate(run.cell.spec["elasticsearch"])
            profile = run.cell.spec.get("profile")
            # Its runs share it: an index one of them builds, the others may restore.
            snapshots = bool((run.cell.spec.get("workload") or {}).get("reuseIndex"))
            self.kube.create_elasticsearch(manifests.cluster_manifest(
                sweep, start.cluster, es, self.settings.sidecar_image, None if profile is None else Profile.model_validate(profile), snapshots))
        self.kube.create_experiment(start.manifest)
        retry = f" (attempt {start.attempt})" if start.attempt > 1 else ""
        self.emit(body, "Normal", Reason.RUN_STARTED, f"{start.manifest['metadata']['name']}: cell {run.cell.id} "
                  f"({run.cell.label}), repetition {run.repetition}{retry}")
        return True

    def _renewed(self, body: dict[str, Any], sweep: manifests.Sweep, cluster: str, stale_before: str) -> bool:
        """Whether the shared cluster is gone or was made after `stale_before`; else it is deleted
        (once), to be made anew at a later look, when it is gone."""
        es = self.kube.get_elasticsearch(sweep.namespace, cluster)
        if es is None or status.parse(es["metadata"]["creationTimestamp"]) > status.parse(stale_before):
            return True
        if (not es["metadata"].get("deletionTimestamp") and _owned_by(es, sweep)
                and delete_cluster(self.kube, self.emit, body, cluster, es["metadata"]["uid"])):
            self.emit(body, "Normal", Reason.CLUSTER_RENEWED, f"{cluster}: a disruption at {stale_before} took its "
                      "data (emptyDir): deleted, to be made anew before the next run")
        return False

    def _release(self, body: dict[str, Any], sweep: manifests.Sweep, cluster: str, any_failed: bool) -> None:
        """Before the status that ends the sweep, so that a crash cannot leave the cluster behind: a
        sweep whose release is refused ends once it is not."""
        policy = CleanupPolicy(lifecycle_setting(sweep.spec.template, "cleanup", CleanupPolicy.DELETE))
        if policy == CleanupPolicy.KEEP or (policy == CleanupPolicy.KEEP_ON_FAILURE and any_failed):
            return
        es = self.kube.get_elasticsearch(sweep.namespace, cluster)
        if es is not None and _owned_by(es, sweep):
            delete_cluster(self.kube, self.emit, body, cluster, es["metadata"]["uid"])

    def _patch(self, body: dict[str, Any], fields: dict[str, Any],
               *conditions: status.ConditionUpdate) -> dict[str, Any]:
        """Returns the sweep as patched."""
        patch = status.patch_of(SweepStatus, body, fields, *conditions)
        if patch is None:
            return body
        self.kube.patch_sweep_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)
        return {**body, "status": {**(body.get("status") or {}), **patch}}


@functools.lru_cache(maxsize=64)
def _plan(uid: str, spec_json: str, name: str, namespace: str) -> grid.Plan:
    # A sweep's spec is immutable, and checking every cell against the CRD takes a while.
    return grid.plan(SweepSpec.model_validate_json(spec_json), name, namespace)


def _owned_by(child: dict[str, Any], sweep: manifests.Sweep) -> bool:
    return any(ref.get("uid") == sweep.uid for ref in child["metadata"].get("ownerReferences") or [])


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
    return str(error)
