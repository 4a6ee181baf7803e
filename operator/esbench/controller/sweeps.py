"""An ExperimentSweep's lifecycle: start its runs in plan order, follow them, compare the cells.

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
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from esbench.analysis import contrasts, stats
from esbench.api.models import (
    SWEEP_TERMINAL_PHASES,
    CleanupPolicy,
    Elasticsearch,
    Gate,
    Phase,
    Results,
    SweepPhase,
    SweepSpec,
    Workload,
)
from esbench.api.reasons import Reason
from esbench.controller import grid, manifests, names, status
from esbench.controller.kube import KindNotServed, Kube, Rejected
from esbench.controller.lifecycle import ECK_NOT_INSTALLED, EventSink, KeyedLocks, delete_cluster

COMPLETE = "Complete"
GATES_PASSED = "GatesPassed"
# Failures a retry cannot mend: the same spec fails the same way.
NOT_RETRIED = {Reason.INVALID_SPEC, Reason.CLUSTER_NAME_CONFLICT, Reason.JOB_NAME_CONFLICT}
RUN_DELETED = Reason.RUN_DELETED
MAX_LISTED_FAILURES = 20


# --- pure: where each run stands -----------------------------------------------------------


class RunState:
    PENDING = "Pending"  # not started, or failed with a retry left
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"  # failed for good


@dataclass
class Progress:
    run: grid.Run
    attempts: list[dict[str, Any]] = field(default_factory=list)  # child Experiments, by attempt
    max_retries: int = 0

    @property
    def latest(self) -> dict[str, Any] | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def state(self) -> str:
        if self.latest is None:
            return RunState.PENDING
        latest_status = self.latest.get("status") or {}
        phase = latest_status.get("phase")
        if phase == Phase.SUCCEEDED:
            return RunState.SUCCEEDED
        if phase != Phase.FAILED:
            return RunState.RUNNING
        if latest_status.get("reason") in NOT_RETRIED or len(self.attempts) > self.max_retries:
            return RunState.FAILED
        return RunState.PENDING

    @property
    def final(self) -> bool:
        return self.state in (RunState.SUCCEEDED, RunState.FAILED)


def recorded_run(record: dict[str, Any]) -> dict[str, Any]:
    """A run that is gone, as its record in the sweep's status says it ended. One that had not
    ended when it was last seen was deleted under the sweep: a failed attempt."""
    phase, reason = record.get("phase"), record.get("reason")
    if phase not in (Phase.SUCCEEDED, Phase.FAILED):
        phase, reason = Phase.FAILED.value, RUN_DELETED
    child_status = {"phase": phase, "reason": reason,
                    "message": record.get("message") or ("deleted before it finished" if reason == RUN_DELETED else "")}
    if record.get("results"):
        child_status["results"] = record["results"]
    labels = {manifests.CELL_LABEL: record["cell"], manifests.REPETITION_LABEL: str(record["repetition"]),
              manifests.ATTEMPT_LABEL: str(record["attempt"])}
    return {"metadata": {"name": record["name"], "labels": labels}, "status": child_status}


def run_records(states: list[Progress]) -> list[dict[str, Any]]:
    """What status.runs keeps of every attempt: enough to go on without the run itself."""
    records = []
    for state in states:
        for child in state.attempts:
            child_status = child.get("status") or {}
            record = {"name": child["metadata"]["name"], "cell": state.run.cell.id, "repetition": state.run.repetition,
                      "attempt": int(child["metadata"]["labels"][manifests.ATTEMPT_LABEL]),
                      "phase": child_status.get("phase") or Phase.PENDING.value}
            if child_status.get("reason"):
                record["reason"] = child_status["reason"]
            if child_status.get("phase") == Phase.FAILED:
                record["message"] = (child_status.get("message") or "")[:300]
            if child_status.get("phase") == Phase.SUCCEEDED and child_status.get("results"):
                record["results"] = child_status["results"]
            records.append(record)
    return records


def progress(plan: grid.Plan, runs: list[dict[str, Any]], max_retries: int,
             records: list[dict[str, Any]] = ()) -> list[Progress]:
    """Each planned run with its attempts so far, in plan order: the runs that exist, and the
    recorded ones (status.runs) that no longer do."""
    by_key: dict[tuple[str, int], Progress] = {r.key: Progress(r, max_retries=max_retries) for r in plan.runs}
    present = {child["metadata"]["name"] for child in runs}
    runs = [*runs, *(recorded_run(r) for r in records if r["name"] not in present)]
    attempt = lambda child: int(child["metadata"]["labels"][manifests.ATTEMPT_LABEL])  # noqa: E731
    for child in sorted(runs, key=attempt):
        labels = child["metadata"]["labels"]
        key = (labels.get(manifests.CELL_LABEL), int(labels.get(manifests.REPETITION_LABEL, 0)))
        if key in by_key:  # runs of cells the spec no longer has are not ours to follow
            by_key[key].attempts.append(child)
    return list(by_key.values())


def groups(plan: grid.Plan, reuse: bool) -> dict[str, list[grid.Run]]:
    """Runs that must go one after another on one cluster, keyed, in plan order.

    Runs against an existing cluster (spec.target) always share it: two races at once on
    one cluster would measure each other.
    """
    result: dict[str, list[grid.Run]] = defaultdict(list)
    for run in plan.runs:
        shares = reuse or "target" in run.cell.spec
        key = grid.cluster_key(run.cell.spec) if shares else f"{run.cell.id}/{run.repetition}"
        result[key].append(run)
    return dict(result)


def runs_to_start(plan: grid.Plan, states: dict[tuple[str, int], Progress], run_groups: dict[str, list[grid.Run]],
                  parallelism: int) -> list[grid.Run]:
    """The next run of every group that may work now: groups at work stay, new ones fill free slots."""
    at_work = [key for key, runs in run_groups.items()
               if any(states[r.key].attempts for r in runs) and not all(states[r.key].final for r in runs)]
    free = parallelism - len(at_work)
    starting = []
    for key, runs in run_groups.items():
        if any(states[r.key].state == RunState.RUNNING for r in runs):
            continue
        pending = [r for r in runs if states[r.key].state == RunState.PENDING]
        if not pending:
            continue
        if key not in at_work:
            if free <= 0:
                continue
            free -= 1
        starting.append(pending[0])
    return starting


def gate_results(gates: list[Gate], rows: list[stats.Row], baseline: str, complete: bool) -> list[dict[str, Any]]:
    """Each gate: Failed when a contender is significantly worse than allowed; Pending until complete."""
    results = []
    for gate in gates:
        row = next((r for r in rows if r.subject == gate.task and r.metric.key == gate.metric), None)
        verdict = {"task": gate.task, "metric": gate.metric, "maxRegressionPercent": gate.max_regression_percent}
        cells = {c.cell: c for c in row.cells} if row else {}
        contenders = gate.cells or [cell for cell in cells if cell != baseline]
        regressions, missing = [], []
        for cell in contenders:
            found = cells.get(cell)
            if found is None or found.change_percent is None:
                missing.append(cell)
            elif found.verdict == stats.Verdict.WORSE and abs(found.change_percent) > gate.max_regression_percent:
                regressions.append(f"{cell} {found.change_percent:+.1f}% (p={found.p_value:.3g})")
        if regressions:
            verdict.update(result="Failed", message="significant regression beyond "
                           f"{gate.max_regression_percent}%: {', '.join(regressions)}")
        elif not complete:
            verdict.update(result="Pending", message="waiting for the sweep to finish")
        elif missing or not contenders:
            verdict.update(result="Failed", message=f"no comparison for {', '.join(missing) or 'any cell'}")
        else:
            verdict.update(result="Passed", message=f"no significant regression beyond {gate.max_regression_percent}%")
        results.append(verdict)
    return results


def samples(plan: grid.Plan, states: list[Progress]) -> dict[str, list[Results]]:
    """Each cell's results from its succeeded runs (warm-up runs left out)."""
    found: dict[str, list[Results]] = {cell.id: [] for cell in plan.cells}
    for state in states:
        if state.state == RunState.SUCCEEDED and state.run.cell.id in found:
            results = (state.latest.get("status") or {}).get("results")
            if results:
                found[state.run.cell.id].append(Results.model_validate(results))
    return found


def comparison(plan: grid.Plan, states: list[Progress], spec: SweepSpec) -> list[stats.Row]:
    by_cell = samples(plan, states)
    if not any(by_cell.values()):
        return []
    return stats.compare_cells(by_cell, plan.baseline.id, spec.statistics.test, spec.statistics.confidence,
                               spec.statistics.noise_threshold_percent)


def cell_contrasts(plan: grid.Plan, states: list[Progress], spec: SweepSpec) -> list[dict[str, Any]]:
    """Each cell's within-race contrasts over its repetitions."""
    by_cell = samples(plan, states)
    found = []
    for cell in plan.cells:
        workload = Workload.model_validate(cell.spec["workload"])
        if by_cell[cell.id] and workload.contrasts:
            found += [{"cell": cell.id, **c} for c in contrasts.to_wire(by_cell[cell.id], workload, spec.statistics)]
    return found


@dataclass
class StatusReport:
    """The sweep's status fields and conditions as its runs stand."""

    fields: dict[str, Any]
    conditions: list[tuple[str, bool, str, str]]
    complete: bool


def status_report(plan: grid.Plan, states: list[Progress], run_groups: dict[str, list[grid.Run]],
                  clusters: dict[str, str], spec: SweepSpec, rows: list[stats.Row],
                  contrast_rows: list[dict[str, Any]] | None = None) -> StatusReport:
    counts = _counts(states)
    finished = counts["succeeded"] + counts["failed"]
    complete = finished == len(states)
    fields: dict[str, Any] = {
        "baseline": plan.baseline.id,
        "progress": {**counts, "runs": len(states), "cells": len(plan.cells), "summary": f"{finished}/{len(states)}"},
        "cells": _cells(plan, states, run_groups, clusters),
        "clusters": sorted(set(clusters.values())),
        "failures": _failures(states),
        "comparison": stats.to_wire(rows),
        "runs": run_records(states),
    }
    if contrast_rows:
        fields["contrasts"] = contrast_rows
    conditions = []
    gates = gate_results(spec.gates or [], rows, plan.baseline.id, complete)
    if gates:
        fields["gates"] = gates
        failed_gates = [g for g in gates if g["result"] == "Failed"]
        if failed_gates:
            conditions.append((GATES_PASSED, False, Reason.GATE_FAILED,
                               "; ".join(f"{g['task']} {g['metric']}: {g['message']}" for g in failed_gates)))
        elif complete:
            conditions.append((GATES_PASSED, True, Reason.GATES_PASSED, f"{len(gates)} gate(s) passed"))
    if complete and counts["failed"]:
        phase, reason = SweepPhase.FAILED, Reason.RUNS_FAILED
        message = f"{counts['failed']} of {len(states)} runs failed after retries; the comparison uses the others"
    elif complete:
        phase, reason, message = SweepPhase.SUCCEEDED, Reason.COMPLETED, f"All {len(states)} runs succeeded"
    else:
        phase, reason = SweepPhase.RUNNING, Reason.RUNNING
        message = f"{finished}/{len(states)} runs finished, {counts['running']} running"
    fields.update(phase=phase.value, reason=reason, message=message)
    if complete:
        fields["completionTime"] = status.now()
    conditions.append((COMPLETE, complete, reason, message))
    return StatusReport(fields, conditions, complete)


# --- the reconciler ------------------------------------------------------------------------


class SweepReconciler:
    def __init__(self, kube: Kube, emit: EventSink):
        self.kube = kube
        self.emit = emit
        self.locks = KeyedLocks()
        self._comparisons: dict[str, tuple[tuple[str, ...], list[stats.Row], list[dict[str, Any]]]] = {}

    def reconcile(self, namespace: str, name: str) -> None:
        with self.locks((namespace, name)):
            body = self.kube.get_sweep(namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return
            current = body.get("status") or {}
            if current.get("phase") in SWEEP_TERMINAL_PHASES:
                return
            try:
                sweep = manifests.Sweep.from_body(body)
                plan = _plan(sweep.uid, sweep.spec.model_dump_json(), name, namespace)
            except (ValidationError, grid.InvalidSweep) as error:
                message = _message(error)
                self._patch(body, {"phase": SweepPhase.FAILED.value, "reason": Reason.INVALID_SPEC, "message": message,
                                   "completionTime": status.now()},
                            (COMPLETE, True, Reason.INVALID_SPEC, message))
                self.emit(body, "Warning", Reason.INVALID_SPEC, message)
                return
            self._step(body, sweep, plan)

    def _step(self, body: dict[str, Any], sweep: manifests.Sweep, plan: grid.Plan) -> None:
        spec = sweep.spec
        children = [child for child in self.kube.list_experiments(
            sweep.namespace, f"{manifests.SWEEP_LABEL}={sweep.name}") if _owned_by(child, sweep)]
        states = progress(plan, children, spec.max_retries, (body.get("status") or {}).get("runs") or [])
        by_key = {s.run.key: s for s in states}
        run_groups = groups(plan, spec.cluster_reuse)
        clusters = self._shared_clusters(plan, run_groups, spec.cluster_reuse, sweep)

        not_started = None
        try:
            for run in runs_to_start(plan, by_key, run_groups, spec.parallelism):
                self._start(body, sweep, run, by_key[run.key], clusters.get(_group_of(run, run_groups)))
        except KindNotServed:
            not_started = (Reason.ECK_NOT_INSTALLED, ECK_NOT_INSTALLED)
        except Rejected as rejected:  # e.g. a quota: said in the status until it is lifted
            not_started = (Reason.REJECTED, str(rejected))
        for key, runs in run_groups.items():
            if key in clusters and all(by_key[r.key].final for r in runs):
                self._release(body, sweep, clusters[key], any(by_key[r.key].state == RunState.FAILED for r in runs))

        # Recomputed only when another run has succeeded: every run's end triggers several
        # reconciles (its status patches), and the statistics are the expensive part.
        succeeded = tuple(sorted(s.latest["metadata"]["name"] for s in states if s.state == RunState.SUCCEEDED))
        cached = self._comparisons.get(sweep.uid)
        if cached and cached[0] == succeeded:
            rows, contrast_rows = cached[1], cached[2]
        else:
            rows, contrast_rows = comparison(plan, states, spec), cell_contrasts(plan, states, spec)
        self._comparisons[sweep.uid] = (succeeded, rows, contrast_rows)
        report = status_report(plan, states, run_groups, clusters, spec, rows, contrast_rows)
        started = (body.get("status") or {}).get("startTime") or status.now()
        report.fields["startTime"] = started
        if not_started and not report.complete:  # e.g. no ECK: say so rather than "0/4 runs finished"
            # Like an Experiment's cluster, what the sweep waits for may take clusterReadyTimeoutSeconds.
            give_up = status.waited(body, max(cell.spec["rally"]["clusterReadyTimeoutSeconds"] for cell in plan.cells))
            report.fields.update(reason=not_started[0], message=not_started[1])
            if give_up:
                report.fields.update(phase=SweepPhase.FAILED.value, completionTime=status.now())
                report.complete = True
            report.conditions[-1] = (COMPLETE, give_up, *not_started)
        self._patch(body, report.fields, *report.conditions)
        if report.complete:
            self._comparisons.pop(sweep.uid)
            self.emit(body, "Warning" if report.fields["phase"] == SweepPhase.FAILED else "Normal",
                      report.fields["reason"], report.fields["message"])

    # --- steps ---

    def _shared_clusters(self, plan: grid.Plan, run_groups: dict[str, list[grid.Run]], reuse: bool,
                         sweep: manifests.Sweep) -> dict[str, str]:
        """The sweep's own cluster name for every group that shares one (numbered in cell order)."""
        if not reuse:
            return {}
        shared = [key for key in dict.fromkeys(grid.cluster_key(cell.spec) for cell in plan.cells)
                  if key in run_groups and "elasticsearch" in run_groups[key][0].cell.spec]
        return {key: names.sweep_cluster_name(sweep.name, number) for number, key in enumerate(shared)}

    def _start(self, body: dict[str, Any], sweep: manifests.Sweep, run: grid.Run, state: Progress,
               cluster: str | None) -> None:
        if cluster:
            es = Elasticsearch.model_validate(run.cell.spec["elasticsearch"])
            self.kube.create_elasticsearch(manifests.cluster_manifest(sweep, cluster, es))
        attempt = len(state.attempts) + 1
        manifest = manifests.sweep_run_manifest(
            sweep, run.cell.id, run.cell.label, run.cell.spec, run.repetition, attempt, cluster)
        self.kube.create_experiment(manifest)
        # Recorded in this reconcile's status patch: a run deleted before the next reconcile
        # lists it is then a deleted attempt, not a run never started (and started again).
        state.attempts.append(manifest)
        retry = f" (attempt {attempt})" if attempt > 1 else ""
        self.emit(body, "Normal", Reason.RUN_STARTED, f"{manifest['metadata']['name']}: cell {run.cell.id} "
                  f"({run.cell.label}), repetition {run.repetition}{retry}")

    def _release(self, body: dict[str, Any], sweep: manifests.Sweep, cluster: str, any_failed: bool) -> None:
        """Before the status that ends the sweep, so that a crash cannot leave the cluster behind: a
        sweep whose release is refused ends once it is not."""
        policy = CleanupPolicy(sweep.spec.template.get("rally", {}).get("cleanup", CleanupPolicy.DELETE))
        if policy == CleanupPolicy.KEEP or (policy == CleanupPolicy.KEEP_ON_FAILURE and any_failed):
            return
        es = self.kube.get_elasticsearch(sweep.namespace, cluster)
        if es is not None and _owned_by(es, sweep):
            delete_cluster(self.kube, self.emit, body, cluster, es["metadata"]["uid"])

    def _patch(self, body: dict[str, Any], fields: dict[str, Any], *conditions: tuple[str, bool, str, str]) -> None:
        current = body.get("status") or {}
        generation = body["metadata"].get("generation")
        merged = current.get("conditions")
        now = status.now()
        for type_, ok, reason, message in conditions:
            merged = status.with_condition(merged, type_, ok, reason, message, now, generation)
        patch = {**fields, "observedGeneration": generation, "conditions": merged}
        if all(current.get(k) == v for k, v in patch.items()):
            return  # nothing new: no write, no event storm from our own updates
        self.kube.patch_sweep_status(body["metadata"]["namespace"], body["metadata"]["name"], patch)


@functools.lru_cache(maxsize=64)
def _plan(uid: str, spec_json: str, name: str, namespace: str) -> grid.Plan:
    # A sweep's spec is immutable, and checking every cell against the CRD takes a while.
    return grid.plan(SweepSpec.model_validate_json(spec_json), name, namespace)


def _group_of(run: grid.Run, run_groups: dict[str, list[grid.Run]]) -> str:
    return next(key for key, runs in run_groups.items() if run in runs)


def _owned_by(child: dict[str, Any], sweep: manifests.Sweep) -> bool:
    return any(ref.get("uid") == sweep.uid for ref in child["metadata"].get("ownerReferences") or [])


def _message(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())
    return str(error)


def _counts(states: list[Progress]) -> dict[str, int]:
    counts = {"succeeded": 0, "failed": 0, "running": 0, "pending": 0}
    for state in states:
        counts[state.state.lower()] += 1
    counts["retries"] = sum(max(0, len(s.attempts) - 1) for s in states)
    return counts


def _cells(plan: grid.Plan, states: list[Progress], run_groups: dict[str, list[grid.Run]],
           clusters: dict[str, str]) -> list[dict[str, Any]]:
    cluster_of = {run.cell.id: clusters[key] for key, runs in run_groups.items() if key in clusters for run in runs}
    result = []
    for cell in plan.cells:
        mine = [s for s in states if s.run.cell.id == cell.id]
        entry = {"id": cell.id, "label": cell.label, "values": cell.values, **{
            k: v for k, v in _counts(mine).items() if k != "retries"}}
        if cell.id == plan.baseline.id:
            entry["baseline"] = True
        if cell.id in cluster_of:
            entry["cluster"] = cluster_of[cell.id]
        result.append(entry)
    return result


def _failures(states: list[Progress]) -> list[dict[str, Any]]:
    failures = []
    for state in states:
        for child in state.attempts:
            child_status = child.get("status") or {}
            if child_status.get("phase") == Phase.FAILED:
                failures.append({"run": child["metadata"]["name"], "cell": state.run.cell.id,
                                 "reason": child_status.get("reason"),
                                 "message": (child_status.get("message") or "")[:300]})
    return failures[-MAX_LISTED_FAILURES:]
