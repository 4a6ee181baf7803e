"""`esbench run SWEEP.yaml`'s pure parts (cli/localsweep.py): which run comes next, the folder it
writes and resumes from, the status and the exit status. tests/cli/test_run_sweep.py runs one
for real."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime
from typing import Any

import pytest

from esbench.api import models, validation
from esbench.cli import local, localsweep, sources
from esbench.history import records
from esbench.planning import grid, manifests, sweepstate

SWEEP = {
    "apiVersion": models.API_VERSION, "kind": models.SWEEP_KIND, "metadata": {"name": "codec"},
    "spec": {
        "template": {"elasticsearch": {"version": "8.19.21"}, "workload": {"track": "smoke"}},
        "matrix": [{"field": "index.codec", "values": ["default", "best_compression"]}],
        "repetitions": 2, "warmupRuns": 1, "maxRetries": 1,
        "gates": [{"task": "index-append", "metric": "throughput.median", "maxRegressionPercent": 5}],
    },
}
THROUGHPUT = {"w0": 500.0, "c0": 1000.0, "c1": 700.0}


def admitted(document: dict[str, Any] = SWEEP) -> tuple[dict[str, Any], models.SweepSpec, grid.Plan]:
    stored = validation.admit(copy.deepcopy(document), kind=models.SWEEP_KIND)
    spec = models.SweepSpec.model_validate(stored["spec"])
    return stored, spec, grid.plan(spec, "codec", localsweep.NAMESPACE)


def decision(plan: grid.Plan, spec: models.SweepSpec, runs: list[dict[str, Any]]) -> sweepstate.Decision:
    return sweepstate.decide(plan, manifests.Sweep("codec", localsweep.NAMESPACE, "uid", spec), runs, parallelism=1)


def pending(plan: grid.Plan, spec: models.SweepSpec, runs: list[dict[str, Any]]) -> sweepstate.Start | None:
    """The run `esbench run` makes next."""
    starts = decision(plan, spec, runs).starts
    return starts[0] if starts else None


def made(step: sweepstate.Start, spec: models.SweepSpec, succeeded: bool = True, jitter: float = 0) -> dict[str, Any]:
    """The run's document as local.run leaves it (local.experiment_document), with Rally's figure."""
    sweep = manifests.Sweep("codec", localsweep.NAMESPACE, "uid", spec)
    child = validation.admit(manifests.sweep_run_manifest(
        sweep, step.run.cell.id, step.run.cell.label, step.run.cell.spec, step.run.repetition, step.attempt, None))
    results = models.Results(tasks=[models.TaskResult(task="index-append", throughput=models.Throughput(
        median=THROUGHPUT[step.run.cell.id] + jitter, unit="docs/s"))]) if succeeded else None
    now = datetime(2026, 11, 26, tzinfo=UTC)
    return local.experiment_document(child, succeeded=succeeded, reason="RaceSucceeded" if succeeded else "RaceFailed",
                                     message="", race_id=f"race-{len(child['metadata']['name'])}", start_time=now,
                                     completion_time=now, results=results)


def test_runs_come_in_the_operators_plan_order_and_a_failed_one_is_retried_first():
    _, spec, plan = admitted()
    runs: list[dict[str, Any]] = []
    order = []
    while (step := pending(plan, spec, runs)) is not None:
        order.append((step.run.cell.id, step.run.repetition, step.attempt))
        first_try_of_c1_r1 = (step.run.cell.id, step.run.repetition, step.attempt) == ("c1", 1, 1)
        runs.append(made(step, spec, succeeded=not first_try_of_c1_r1))
        assert step.cluster, "one elasticsearch spec and one track: one node for every run"
    # Counterbalanced (the default): the seed gives c1 the first place in round 1, c0 in round 2.
    assert order == [("w0", 1, 1), ("c1", 1, 1), ("c1", 1, 2), ("c0", 1, 1), ("c0", 2, 1), ("c1", 2, 1)]


def test_an_interrupted_sweep_resumes_without_losing_or_repeating_a_run(tmp_path):
    stored, spec, plan = admitted()
    folder = localsweep.Folder(tmp_path / "codec")
    made_runs = itertools.count()  # every run made gets other figures: a run made twice would show

    def go(stop_after: int | None) -> None:
        previous, runs = folder.read(stored)
        for _ in range(stop_after or 100):
            document, _ = localsweep.sweep_document(stored, "uid", decision(plan, spec, runs), spec, previous,
                                                    "2026-11-26T10:00:00Z")
            folder.write_sweep(document)
            previous = document
            step = pending(plan, spec, runs)
            if step is None:
                return
            run = made(step, spec, jitter=next(made_runs))
            folder.write_run(run)
            runs.append(run)

    go(stop_after=3)  # then "interrupted": the fourth run never wrote its file
    before = {p.name: p.read_bytes() for p in folder.runs.iterdir()}
    assert sorted(before) == ["codec-c0-r1.json", "codec-c1-r1.json", "codec-w0-r1.json"]
    go(stop_after=None)
    after = {p.name: p.read_bytes() for p in folder.runs.iterdir()}
    assert sorted(after) == sorted([*before, "codec-c0-r2.json", "codec-c1-r2.json"])
    assert all(after[name] == content for name, content in before.items()), "a run already made is not made again"
    previous, runs = folder.read(stored)
    assert previous["status"]["phase"] == "Succeeded" and previous["status"]["progress"]["summary"] == "5/5"
    assert not list(folder.path.rglob("*.partial"))
    assert next(made_runs) == 5, "five runs planned, five made"


def test_a_folder_of_another_spec_is_refused(tmp_path):
    stored, spec, plan = admitted()
    folder = localsweep.Folder(tmp_path)
    document, _ = localsweep.sweep_document(stored, "uid", decision(plan, spec, []), spec, None,
                                            "2026-11-26T10:00:00Z")
    folder.write_sweep(document)
    other = copy.deepcopy(SWEEP)
    other["spec"]["repetitions"] = 3
    with pytest.raises(localsweep.FolderInUse, match="another spec"):
        folder.read(admitted(other)[0])
    assert folder.read(stored) == (document, [])


def test_the_status_is_the_operators_and_the_exit_status_follows_gates_then_failures():
    stored, spec, plan = admitted()
    runs: list[dict[str, Any]] = []
    while (step := pending(plan, spec, runs)) is not None:
        runs.append(made(step, spec, jitter=step.run.repetition))
    document, report = localsweep.sweep_document(stored, "uid", decision(plan, spec, runs), spec, None,
                                                    "2026-11-26T10:00:00Z")
    state = models.SweepStatus.model_validate(document["status"])
    assert state.phase == models.SweepPhase.SUCCEEDED and state.baseline == "c0"
    # Two rounds leave no run to test the order effect with: no OrderEffect condition yet.
    assert {c["type"]: c["status"] for c in document["status"]["conditions"]} == {"Complete": "True",
                                                                                 "GatesPassed": "False"}
    assert localsweep.exit_code(report) == localsweep.EXIT_GATE_FAILED  # c1 is 30 % slower
    passing = copy.deepcopy(SWEEP)
    passing["spec"]["gates"][0]["maxRegressionPercent"] = 50
    stored, spec, plan = admitted(passing)
    _, report = localsweep.sweep_document(stored, "uid", decision(plan, spec, runs), spec, None,
                                                    "2026-11-26T10:00:00Z")
    assert localsweep.exit_code(report) == 0
    failing = [made(sweepstate.Start(run, attempt, "", "codec-g0", {}), spec, succeeded=False)
               for run in plan.runs for attempt in (1, 2) if run.cell.id == "c1" and run.repetition == 2]
    _, report = localsweep.sweep_document(stored, "uid", decision(
        plan, spec, [r for r in runs if "c1-r2" not in r["metadata"]["name"]] + failing), spec, None,
                                          "now")
    assert report.fields["phase"] == "Failed" and localsweep.exit_code(report) == localsweep.EXIT_RUNS_FAILED


def test_eta_is_the_mean_run_times_the_runs_left():
    assert localsweep.eta([], 4) == "ETA after the first run"
    assert localsweep.eta([60, 120], 4) == "about 6 min 00 s left (mean run 90 s)"


def test_a_runs_document_keeps_its_cell_and_configuration_whatever_its_rounds_values():
    document = copy.deepcopy(SWEEP)
    document["spec"]["perRound"] = [{"field": "workload.trackParams.query_seed", "values": [1, 2]}]
    _, spec, plan = admitted(document)
    runs = [made(sweepstate.Start(run, 1, "g0", "codec-g0", {}), spec) for run in plan.runs if run.cell.id == "c1"]
    assert [r["spec"]["workload"]["trackParams"]["query_seed"] for r in runs] == [1, 2]
    annotations = [r["metadata"]["annotations"] for r in runs]
    assert annotations[0] == annotations[1] and annotations[0][models.CELL_LABEL] == 'index.codec="best_compression"'
    assert len({records.record(r).configuration for r in runs}) == 1  # one series in the history


def test_a_folders_runs_come_by_cell_round_and_attempt_as_numbers(tmp_path):
    runs = tmp_path / localsweep.RUNS
    runs.mkdir()
    names = ["s-c0-r2-a1", "s-c0-r10-a1", "s-c0-r1-a2", "s-c0-r1-a1", "s-c10-r1-a1", "s-c2-r1-a1"]
    for name in names:
        (runs / f"{name}.json").write_text("{}")
    assert [p.stem for p in sources.sweep_runs(tmp_path)] == [
        "s-c0-r1-a1", "s-c0-r1-a2", "s-c0-r2-a1", "s-c0-r10-a1", "s-c2-r1-a1", "s-c10-r1-a1"]
    assert sources.sweep_runs(tmp_path / "elsewhere") is None
