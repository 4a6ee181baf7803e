"""What a sweep's runs say, pure: where each run stands (its attempts, recorded or live), which
runs start next, and the statistics, gates, conditions and status they make. sweeps.py reads
the runs and writes what this returns; tests/unit/test_sweep_scheduling.py tests it without a
cluster.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from esbench.analysis import compare, contrasts, ordereffect, stats
from esbench.api.models import (
    ATTEMPT_LABEL,
    CELL_LABEL,
    REPETITION_LABEL,
    WARMUP_CELL_PREFIX,
    Gate,
    Phase,
    Results,
    StorageType,
    SweepPhase,
    SweepSpec,
    Workload,
)
from esbench.api.reasons import ConditionType, Reason
from esbench.planning import grid, manifests, names, status

# Failures a retry cannot mend: the same spec fails the same way.
NOT_RETRIED = {Reason.INVALID_SPEC, Reason.CLUSTER_NAME_CONFLICT, Reason.JOB_NAME_CONFLICT}


RUN_DELETED = Reason.RUN_DELETED


MAX_LISTED_FAILURES = 20

TIMES = ("startTime", "completionTime")  # of a succeeded run, kept with its record for its overhead


class RunState(StrEnum):
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
    def state(self) -> RunState:
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
    for kept in ("results", *TIMES):
        if record.get(kept):
            child_status[kept] = record[kept]
    labels = {CELL_LABEL: record["cell"], REPETITION_LABEL: str(record["repetition"]),
              ATTEMPT_LABEL: str(record["attempt"])}
    return {"metadata": {"name": record["name"], "labels": labels}, "status": child_status}


def run_records(states: list[Progress], placed: dict[tuple[str, int], int] | None = None) -> list[dict[str, Any]]:
    """What status.runs keeps of every attempt: enough to go on without the run itself, and the
    place of a compared run in its round (`placed`: positions())."""
    records = []
    for state in states:
        for child in state.attempts:
            child_status = child.get("status") or {}
            record = {"name": child["metadata"]["name"], "cell": state.run.cell.id, "repetition": state.run.repetition,
                      "attempt": int(child["metadata"]["labels"][ATTEMPT_LABEL]),
                      "phase": child_status.get("phase") or Phase.PENDING.value}
            if placed and state.run.key in placed:
                record["position"] = placed[state.run.key]
            if child_status.get("reason"):
                record["reason"] = child_status["reason"]
            if child_status.get("phase") == Phase.FAILED:
                record["message"] = (child_status.get("message") or "")[:300]
            if child_status.get("phase") == Phase.SUCCEEDED and child_status.get("results"):
                record["results"] = child_status["results"]
                record.update({key: child_status[key] for key in TIMES if child_status.get(key)})
            records.append(record)
    return records


def progress(plan: grid.Plan, runs: list[dict[str, Any]], max_retries: int,
             records: list[dict[str, Any]] = ()) -> list[Progress]:
    """Each planned run with its attempts so far, in plan order: the runs that exist, and the
    recorded ones (status.runs) that no longer do."""
    by_key: dict[tuple[str, int], Progress] = {r.key: Progress(r, max_retries=max_retries) for r in plan.runs}
    present = {child["metadata"]["name"] for child in runs}
    runs = [*runs, *(recorded_run(r) for r in records if r["name"] not in present)]
    attempt = lambda child: int(child["metadata"]["labels"][ATTEMPT_LABEL])  # noqa: E731
    for child in sorted(runs, key=attempt):
        labels = child["metadata"]["labels"]
        key = (labels.get(CELL_LABEL), int(labels.get(REPETITION_LABEL, 0)))
        if key in by_key:  # runs of cells the spec no longer has are not ours to follow
            by_key[key].attempts.append(child)
    return list(by_key.values())


@dataclass
class Rounds:
    plan: grid.Plan  # with the further rounds (and warm-up runs) so far
    stopped: dict[str, str]  # cell id: why it gets no further round
    looks: dict[str, stats.Look] = field(default_factory=dict)  # each contender's look, for its comparison
    warmups: list[dict[str, Any]] = field(default_factory=list)  # warmupUntilStable: what each warm-up cell did


def with_warmups(plan: grid.Plan, spec: SweepSpec, runs: list[dict[str, Any]],
                 records: list[dict[str, Any]] = ()) -> tuple[grid.Plan, list[dict[str, Any]]]:
    """The plan with further warm-up runs where spec.warmupUntilStable calls for them: once a warm-up
    cell's runs have ended, another one while its last two succeeded runs differ by more than the
    stated share on any primary figure, up to maxRuns. Each goes right after its cell's last, so
    that no measured run of its cluster starts before the node has settled or the cap is reached."""
    until = spec.warmup_until_stable
    if until is None or not spec.warmup_runs:
        return plan, []
    notes = []
    warm = {r.cell.id: r.cell for r in plan.runs if r.cell.id.startswith(WARMUP_CELL_PREFIX)}
    for cell in warm.values():
        while True:
            mine = [s for s in progress(plan, runs, spec.max_retries, records) if s.run.cell.id == cell.id]
            figures = [_settling_figures(Results.model_validate(s.latest["status"]["results"]), spec)
                       for s in mine if s.state == RunState.SUCCEEDED and s.latest["status"].get("results")]
            change = _largest_change(figures[-2], figures[-1]) if len(figures) >= 2 else None
            note = {"cell": cell.id, "runs": len(mine), "stable": change is not None and change <= until.change_percent}
            if change is not None:
                note["changePercent"] = round(change, 2)
            if not all(s.final for s in mine) or note["stable"] or len(mine) >= max(until.max_runs, spec.warmup_runs):
                break
            after = max(i for i, r in enumerate(plan.runs) if r.cell.id == cell.id)
            plan = dataclasses.replace(plan, runs=[*plan.runs[:after + 1], grid.Run(cell, len(mine) + 1),
                                                   *plan.runs[after + 1:]])
        notes.append(note)
    return plan, notes


def _settling_figures(results: Results, spec: SweepSpec) -> dict[tuple[str, str], float]:
    """What a warm-up run says of the node: the primary figures, or each task's medians."""
    questions = spec.primary_questions() or [(task.task, metric) for task in results.tasks
                                              for metric in ordereffect.DEFAULT_METRICS]
    wanted = set(questions)
    return {(m.subject, m.metric.key): m.value for m in compare.measurements(results, {k for _, k in questions})
            if (m.subject, m.metric.key) in wanted and m.value}


def _largest_change(before: dict[tuple[str, str], float], after: dict[tuple[str, str], float]) -> float | None:
    changes = [abs(after[key] / before[key] - 1) * 100 for key in before.keys() & after.keys()]
    return max(changes) if changes else None


def with_rounds(plan: grid.Plan, spec: SweepSpec, runs: list[dict[str, Any]],
                records: list[dict[str, Any]] = ()) -> Rounds:
    """The plan with the further rounds that spec.maxRepetitions and the results so far call for.

    Once every run of the last round has ended, the sweep looks at each contender's primary
    comparisons at that look's level (stats.look: the alpha spent since the previous look). A
    contender stops when they are settled (Better, Worse or Equivalent), when their intervals are
    no wider than the target (at alpha / the family's size, on the log scale: a width that follows
    neither the effect nor its p-value), or at maxRepetitions; the others get another round with
    their baselines, in the sweep's order. Deterministic in the runs, so every reconcile (and a
    resumed local sweep) finds the same plan.
    """
    plan, warmups = with_warmups(plan, spec, runs, records)
    if not spec.max_repetitions:
        return Rounds(plan, {}, warmups=warmups)
    alpha = stats.alpha_of(spec.statistics)
    compared = {cell.id for cell in plan.cells}
    contenders = [cell for cell in plan.cells if not plan.is_baseline(cell.id)]
    still = [cell.id for cell in contenders]
    stopped: dict[str, str] = {}
    looks: dict[str, stats.Look] = {}
    target = spec.target_width_percent
    last = spec.repetitions
    while True:
        current = {cell: stats.look(alpha, last, spec.repetitions, spec.max_repetitions) for cell in still}
        states = progress(plan, runs, spec.max_retries, records)
        if not all(s.final for s in states if s.run.cell.id in compared and s.run.repetition == last):
            return Rounds(plan, stopped, {**looks, **current}, warmups)
        answers = primary_answers(plan, states, spec, {**looks, **current})
        for cell in list(still):
            settled, width = answers.get(cell, (False, None))
            if settled:
                stopped[cell] = f"primary questions settled after {last} runs (level {current[cell].alpha:.3g})"
            elif width is not None and width <= target:
                stopped[cell] = (f"primary intervals at most {width:.1f} % wide (log scale) after {last} runs, "
                                 f"within the target {target:g} %")
            elif last >= spec.max_repetitions:
                stopped[cell] = (f"maxRepetitions {spec.max_repetitions} reached with primary questions unsettled, "
                                 f"intervals {'unbounded' if width is None else f'{width:.1f} %'} wide "
                                 f"(target {target:g} %)")
            else:
                continue
            still.remove(cell)
            looks[cell] = current[cell]
        if not still:
            return Rounds(plan, stopped, looks, warmups)
        last += 1
        wanted = {plan.baselines[cell] for cell in still}
        cells = [*(cell for cell in plan.cells if cell.id in wanted), *(cell for cell in contenders if cell.id in still)]
        further = grid.round_order(cells, last, spec.order, spec.seed)
        plan = dataclasses.replace(plan, runs=[*plan.runs, *(grid.Run(cell, last) for cell in further)])


SETTLED = (stats.Verdict.BETTER, stats.Verdict.WORSE, stats.Verdict.EQUIVALENT)


def primary_answers(plan: grid.Plan, states: list[Progress], spec: SweepSpec,
                    looks: dict[str, stats.Look]) -> dict[str, tuple[bool, float | None]]:
    """Each contender's primary questions at its look: all settled, and their widest interval
    (None: not bounded yet)."""
    primary = spec.primary_questions()
    tasks = {task for task, _ in primary}
    by_cell = {cell: [r.model_copy(update={"tasks": [t for t in r.tasks if t.task in tasks]}) for r in runs]
               for cell, runs in samples(plan, states).items()}
    if not any(by_cell[baseline] for baseline in set(plan.baselines.values())):
        return {}
    answers: dict[str, tuple[bool, float | None]] = {}
    for row in stats.compare_cells(by_cell, plan.baselines, spec.statistics, primary, rounds(plan, states),
                                   metrics={metric for _, metric in primary}, looks=looks):
        if row.family != stats.Family.PRIMARY:
            continue
        for cell in row.cells:
            if cell.verdict == stats.Verdict.BASELINE:
                continue
            settled, known = answers.get(cell.cell, (True, 0.0))
            width = None if known is None or cell.width_percent is None else max(known, cell.width_percent)
            answers[cell.cell] = (settled and cell.verdict in SETTLED, width)
    return answers


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


def shared_clusters(plan: grid.Plan, run_groups: dict[str, list[grid.Run]], reuse: bool, sweep: str) -> dict[str, str]:
    """The sweep's own cluster name for every group that shares one (numbered in cell order)."""
    if not reuse:
        return {}
    shared = [key for key in dict.fromkeys(grid.cluster_key(cell.spec) for cell in plan.cells)
              if key in run_groups and "elasticsearch" in run_groups[key][0].cell.spec]
    return {key: names.sweep_cluster_name(sweep, number) for number, key in enumerate(shared)}


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


def gate_results(gates: list[Gate], rows: list[stats.Row], complete: bool) -> list[dict[str, Any]]:
    """Each gate, a non-inferiority test: Passed when every contender's interval (at its adjusted
    level) stays within the regression allowed; Failed when a contender is significantly worse
    beyond it; Undecided when the sweep has ended and an interval still reaches beyond it, so that
    a regression measured with a wide interval never passes; Pending until then."""
    results = []
    for gate in gates:
        row = next((r for r in rows if r.subject == gate.task and r.metric.key == gate.metric), None)
        verdict = {"task": gate.task, "metric": gate.metric, "maxRegressionPercent": gate.max_regression_percent}
        cells = {c.cell: c for c in row.cells} if row else {}
        higher_is_better = row is not None and row.metric.direction == compare.Direction.HIGHER_IS_BETTER
        contenders = gate.cells or [cell for cell, found in cells.items() if found.verdict != stats.Verdict.BASELINE]
        regressions, missing, undecided = [], [], []
        for cell in contenders:
            found = cells.get(cell)
            if found is None or found.change_percent is None:
                missing.append(cell)
                continue
            # The interval's worse end: the least the contender may have lost.
            worse_end = found.low_percent if higher_is_better else found.high_percent
            regression = None if worse_end is None else (-worse_end if higher_is_better else worse_end)
            if found.verdict == stats.Verdict.WORSE and abs(found.change_percent) > gate.max_regression_percent:
                regressions.append(f"{cell} {found.change_percent:+.1f}% ({_interval(found)}, "
                                   f"adjusted p={found.p_adjusted:.3g})")
            elif found.p_value is None or regression is None or regression > gate.max_regression_percent:
                undecided.append(f"{cell} {found.change_percent:+.1f}% ({_interval(found)})")
        if regressions:
            verdict.update(result="Failed", message="significant regression beyond "
                           f"{gate.max_regression_percent}%: {', '.join(regressions)}")
        elif not complete:
            verdict.update(result="Pending", message="waiting for the sweep to finish")
        elif missing or not contenders:
            verdict.update(result="Failed", message=f"no comparison for {', '.join(missing) or 'any cell'}")
        elif undecided:
            verdict.update(result="Undecided", message=f"an interval reaches beyond the allowed "
                           f"{gate.max_regression_percent}% regression: {', '.join(undecided)} (more runs would "
                           "settle it)")
        else:
            verdict.update(result="Passed", message=f"every interval within the allowed {gate.max_regression_percent}%"
                                                    " regression")
        results.append(verdict)
    return results


def timing(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where a succeeded run's time goes, as medians over the runs: the whole run (created to
    done), Rally's task windows, and the rest (cluster, Rally's start, index creation, ...)."""
    runs, tasks = [], []
    for record in records:
        if not all(record.get(key) for key in TIMES) or not record.get("results"):
            continue
        start, end = (datetime.fromisoformat(record[key]) for key in TIMES)
        windows = [t.resources.seconds for t in Results.model_validate(record["results"]).tasks if t.resources]
        if windows:
            runs.append((end - start).total_seconds())
            tasks.append(sum(windows))
    if not runs:
        return None
    overheads = [run - task for run, task in zip(runs, tasks, strict=True)]
    return {"runs": len(runs), "runSeconds": round(statistics.median(runs), 1),
            "taskSeconds": round(statistics.median(tasks), 1),
            "overheadSeconds": round(statistics.median(overheads), 1)}


def _interval(found: stats.CellStats) -> str:
    def bound(value: float | None, unbounded: str) -> str:
        return unbounded if value is None else f"{value:+.1f}%"
    return f"interval {bound(found.low_percent, '-inf')} to {bound(found.high_percent, '+inf')}"


def samples(plan: grid.Plan, states: list[Progress]) -> dict[str, list[Results]]:
    """Each cell's results from its succeeded runs (warm-up runs left out)."""
    return {cell: [Results.model_validate(state.latest["status"]["results"]) for state in found]
            for cell, found in _succeeded(plan, states).items()}


def rounds(plan: grid.Plan, states: list[Progress]) -> dict[str, list[int]]:
    """The round (repetition) of each of samples()' results, in the same order."""
    return {cell: [state.run.repetition for state in found] for cell, found in _succeeded(plan, states).items()}


def positions(plan: grid.Plan, reuse: bool) -> dict[tuple[str, int], int]:
    """Each compared run's place in its round on its cluster (0: raced first), warm-up runs left out."""
    compared = {cell.id for cell in plan.cells}
    found: dict[tuple[str, int], int] = {}
    for runs in groups(plan, reuse).values():
        taken: dict[int, int] = defaultdict(int)
        for run in runs:
            if run.cell.id in compared:
                found[run.key] = taken[run.repetition]
                taken[run.repetition] += 1
    return found


def order_effects(plan: grid.Plan, states: list[Progress], spec: SweepSpec) -> list[ordereffect.OrderEffect]:
    """Whether the runs' positions in their rounds explain the primary figures beyond the cells."""
    placed = positions(plan, spec.cluster_reuse)
    runs = [ordereffect.Run(cell, state.run.repetition, placed[state.run.key],
                            Results.model_validate(state.latest["status"]["results"]))
            for cell, found in _succeeded(plan, states).items() for state in found]
    questions = spec.primary_questions() or ordereffect.default_questions(runs)
    return ordereffect.order_effects(runs, questions, spec.statistics) if runs else []


def _succeeded(plan: grid.Plan, states: list[Progress]) -> dict[str, list[Progress]]:
    """Each compared cell's succeeded runs that have results, in plan order."""
    found: dict[str, list[Progress]] = {cell.id: [] for cell in plan.cells}
    for state in states:
        if (state.state == RunState.SUCCEEDED and state.run.cell.id in found
                and (state.latest.get("status") or {}).get("results")):
            found[state.run.cell.id].append(state)
    return found


def comparison(plan: grid.Plan, states: list[Progress], spec: SweepSpec,
               looks: dict[str, stats.Look] | None = None) -> list[stats.Row]:
    """The cells compared, each contender at its look where the rounds are sequential (Rounds.looks)."""
    by_cell = samples(plan, states)
    if not any(by_cell.values()):
        return []
    return stats.compare_cells(by_cell, plan.baselines, spec.statistics, spec.primary_questions(),
                               rounds(plan, states), looks=looks)


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
    conditions: list[status.ConditionUpdate]
    complete: bool


def status_report(plan: grid.Plan, states: list[Progress], run_groups: dict[str, list[grid.Run]],
                  clusters: dict[str, str], spec: SweepSpec, rows: list[stats.Row],
                  contrast_rows: list[dict[str, Any]] | None = None, stopped: dict[str, str] | None = None,
                  warmups: list[dict[str, Any]] | None = None) -> StatusReport:
    counts = _counts(states)
    finished = counts["succeeded"] + counts["failed"]
    complete = finished == len(states)
    fields: dict[str, Any] = {
        "baseline": plan.baseline.id,
        "progress": {**counts, "runs": len(states), "cells": len(plan.cells), "summary": f"{finished}/{len(states)}"},
        "cells": _cells(plan, states, run_groups, clusters, stopped or {}),
        "clusters": sorted(set(clusters.values())),
        "failures": _failures(states),
        "comparison": stats.to_wire(rows),
        "corrections": stats.corrections(rows),
        "runs": run_records(states, positions(plan, spec.cluster_reuse)),
    }
    spent = timing(fields["runs"])
    if spent:
        fields["timing"] = spent
    if contrast_rows:
        fields["contrasts"] = contrast_rows
    if warmups:
        fields["warmups"] = warmups
    conditions: list[status.ConditionUpdate] = []
    effects = order_effects(plan, states, spec)
    if effects:
        fields["orderEffects"] = ordereffect.to_wire(effects)
    order_condition = _order_condition(effects)
    if order_condition:
        conditions.append(order_condition)
    gates = gate_results(spec.gates or [], rows, complete)
    if gates:
        fields["gates"] = gates
        failed_gates = [g for g in gates if g["result"] == "Failed"]
        undecided_gates = [g for g in gates if g["result"] == "Undecided"]
        if failed_gates:
            conditions.append((ConditionType.GATES_PASSED, False, Reason.GATE_FAILED,
                               "; ".join(f"{g['task']} {g['metric']}: {g['message']}" for g in failed_gates)))
        elif undecided_gates:
            conditions.append((ConditionType.GATES_PASSED, False, Reason.GATE_UNDECIDED,
                               "; ".join(f"{g['task']} {g['metric']}: {g['message']}" for g in undecided_gates)))
        elif complete:
            conditions.append((ConditionType.GATES_PASSED, True, Reason.GATES_PASSED, f"{len(gates)} gate(s) passed"))
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
    conditions.append((ConditionType.COMPLETE, complete, reason, message))
    return StatusReport(fields, conditions, complete)


def _order_condition(effects: list[ordereffect.OrderEffect]) -> status.ConditionUpdate | None:
    """OrderEffect: True when the runs' positions explain a primary figure, or cannot be told from
    the cells; its message says which and how much. None while no figure could be tested."""
    detected = [w for e in effects if e.state == ordereffect.OrderState.DETECTED and (w := ordereffect.warning(e))]
    if detected:
        return ConditionType.ORDER_EFFECT, True, Reason.ORDER_EFFECT_DETECTED, "; ".join(detected)
    confounded = [w for e in effects if e.state == ordereffect.OrderState.CONFOUNDED and (w := ordereffect.warning(e))]
    if confounded:
        return ConditionType.ORDER_EFFECT, True, Reason.ORDER_CONFOUNDED, confounded[0]
    tested = sum(1 for e in effects if e.state == ordereffect.OrderState.NOT_DETECTED)
    if not tested:
        return None
    return ConditionType.ORDER_EFFECT, False, Reason.NO_ORDER_EFFECT, f"no order effect on {tested} primary figure(s)"


@dataclass(frozen=True)
class Start:
    """A run to start now, as its attempt-th Experiment; on its group's shared cluster, if any
    (created with the group's first run). A shared cluster created before `stale_before` lost its
    data to a disruption: it is made anew before the run starts."""

    run: grid.Run
    attempt: int
    group: str
    cluster: str | None
    manifest: dict[str, Any]
    stale_before: str | None = None


@dataclass(frozen=True)
class Comparison:
    """The statistics of the runs that had succeeded (by name): the expensive part of a reconcile,
    kept until another run succeeds."""

    succeeded: tuple[str, ...]
    rows: list[stats.Row]
    contrasts: list[dict[str, Any]]


@dataclass
class Decision:
    """What one look at a sweep's runs calls for: runs to start, shared clusters to release, and
    the statistics; `report` then gives the status once the starts are made."""

    starts: list[Start]
    releases: list[tuple[str, bool]]  # a shared cluster whose group's runs all ended, and whether one failed
    comparison: Comparison
    rounds: Rounds
    states: list[Progress]
    run_groups: dict[str, list[grid.Run]]
    clusters: dict[str, str]


def decide(plan: grid.Plan, sweep: manifests.Sweep, runs: list[dict[str, Any]], records: list[dict[str, Any]] = (),
           parallelism: int | None = None, previous: Comparison | None = None) -> Decision:
    """The sweep's next step from its runs (child Experiments) and status.runs (`records`), at most
    `parallelism` groups at work (the spec's by default); `previous` is reused while the same runs
    have succeeded."""
    spec = sweep.spec
    rounds = with_rounds(plan, spec, runs, records)
    plan = rounds.plan
    states = progress(plan, runs, spec.max_retries, records)
    by_key = {s.run.key: s for s in states}
    run_groups = groups(plan, spec.cluster_reuse)
    clusters = shared_clusters(plan, run_groups, spec.cluster_reuse, sweep.name)
    starts = []
    for run in runs_to_start(plan, by_key, run_groups, parallelism or spec.parallelism):
        group = group_of(run, run_groups)
        attempt = len(by_key[run.key].attempts) + 1
        manifest = manifests.sweep_run_manifest(sweep, run.cell.id, run.cell.label, run.cell.spec, run.repetition,
                                                attempt, clusters.get(group))
        starts.append(Start(run, attempt, group, clusters.get(group), manifest,
                            disrupted_at(run_groups[group], by_key) if group in clusters else None))
    releases = [(clusters[key], any(by_key[r.key].state == RunState.FAILED for r in group_runs))
                for key, group_runs in run_groups.items()
                if key in clusters and all(by_key[r.key].final for r in group_runs)]
    succeeded = tuple(sorted(s.latest["metadata"]["name"] for s in states if s.state == RunState.SUCCEEDED))
    if previous is None or previous.succeeded != succeeded:
        previous = Comparison(succeeded, comparison(plan, states, spec, rounds.looks),
                              cell_contrasts(plan, states, spec))
    return Decision(starts, releases, previous, rounds, states, run_groups, clusters)


def report(decision: Decision, spec: SweepSpec, started: list[Start] = ()) -> StatusReport:
    """The sweep's status once `started` (of decision.starts) are made: they are in status.runs,
    so a run deleted before the next look counts as a deleted attempt, not one never started."""
    made = {start.run.key: start.manifest for start in started}
    states = [dataclasses.replace(s, attempts=[*s.attempts, made[s.run.key]]) if s.run.key in made else s
              for s in decision.states]
    rounds = decision.rounds
    return status_report(rounds.plan, states, decision.run_groups, decision.clusters, spec,
                         decision.comparison.rows, decision.comparison.contrasts, rounds.stopped, rounds.warmups)


def disrupted_at(group_runs: list[grid.Run], by_key: dict[tuple[str, int], Progress]) -> str | None:
    """When the group's shared cluster last lost its data: the end of its latest ClusterDisrupted
    attempt, on an emptyDir (ECK makes a replaced pod anew, empty, and an empty node of a formed
    cluster never joins it: each later run would wait out clusterReadyTimeoutSeconds). A
    persistent volume outlives its pod. None: the cluster keeps its data. (A restarted container
    keeps its emptyDir, but the reason does not say which: a cluster made anew costs its start.)"""
    storage = (group_runs[0].cell.spec.get("elasticsearch") or {}).get("storage") or {}
    if storage.get("type") != StorageType.EMPTY_DIR:
        return None
    return max((child["status"]["completionTime"] for run in group_runs for child in by_key[run.key].attempts
                if (child.get("status") or {}).get("reason") == Reason.CLUSTER_DISRUPTED
                and child["status"].get("completionTime")), default=None)


def group_of(run: grid.Run, run_groups: dict[str, list[grid.Run]]) -> str:
    return next(key for key, runs in run_groups.items() if run in runs)


def _counts(states: list[Progress]) -> dict[str, int]:
    counts = {"succeeded": 0, "failed": 0, "running": 0, "pending": 0}
    for state in states:
        counts[state.state.lower()] += 1
    counts["retries"] = sum(max(0, len(s.attempts) - 1) for s in states)
    return counts


def _cells(plan: grid.Plan, states: list[Progress], run_groups: dict[str, list[grid.Run]],
           clusters: dict[str, str], stopped: dict[str, str]) -> list[dict[str, Any]]:
    cluster_of = {run.cell.id: clusters[key] for key, runs in run_groups.items() if key in clusters for run in runs}
    result = []
    for cell in plan.cells:
        mine = [s for s in states if s.run.cell.id == cell.id]
        entry = {"id": cell.id, "label": cell.label, "values": cell.values, **{
            k: v for k, v in _counts(mine).items() if k != "retries"}}
        if plan.is_baseline(cell.id):
            entry["baseline"] = True
        if cell.id in cluster_of:
            entry["cluster"] = cluster_of[cell.id]
        if cell.id in stopped:
            entry["stopped"] = stopped[cell.id]
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
