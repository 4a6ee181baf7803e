"""The order of a sweep's runs must not pose as an effect: counterbalanced rounds on a node that
drifts within rounds, and the test that says whether the position explained a figure."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from esbench.analysis import ordereffect, stats
from esbench.api import models
from esbench.api.reasons import ConditionType
from esbench.planning import grid, sweepstate

TEMPLATE = {"elasticsearch": {"version": "8.15.0"}, "workload": {"track": "smoke"}}
PRIMARY = [("t0", "throughput.median")]


def sweep_spec(cells: int, repetitions: int, **fields: Any) -> models.SweepSpec:
    return models.SweepSpec.model_validate({
        "template": TEMPLATE, "repetitions": repetitions,
        "matrix": [{"field": "index.refreshInterval", "values": [f"{i + 1}s" for i in range(cells)]}],
        "statistics": {"paired": True, "primary": [{"task": "t0", "metric": "throughput.median"}]}, **fields})


def result(throughput: float) -> models.Results:
    return models.Results(tasks=[models.TaskResult(task="t0", throughput=models.Throughput(
        median=throughput, unit="docs/s"))])


def drifting_runs(plan: grid.Plan, drift: float, cv: float, generator: random.Random,
                  effects: dict[str, float] | None = None) -> list[tuple[grid.Run, float]]:
    """Every run of the plan, warm-up runs included, on one node that gets `drift` faster per
    round, run by run (a JIT still compiling, caches filling): within rounds and between them."""
    sigma = math.sqrt(math.log1p(cv ** 2))
    per_run = drift / len(plan.cells)
    return [(run, 1000 * math.exp(per_run * number) * (1 + (effects or {}).get(run.cell.id, 0.0))
             * math.exp(generator.gauss(-sigma ** 2 / 2, sigma)))
            for number, run in enumerate(plan.runs)]


def false_verdict_rate(order: str, drift: float, sweeps: int, seed: int = 3) -> float:
    spec = sweep_spec(2, 5, order=order)
    plan = grid.plan(spec, "aa", "default")
    generator = random.Random(seed)
    false = 0
    for _ in range(sweeps):
        samples: dict[str, list[models.Results]] = {cell.id: [] for cell in plan.cells}
        rounds: dict[str, list[int]] = {cell.id: [] for cell in plan.cells}
        for run, value in drifting_runs(plan, drift, 0.03, generator):
            if run.cell.id in samples:
                samples[run.cell.id].append(result(value))
                rounds[run.cell.id].append(run.repetition)
        [row] = stats.compare_cells(samples, plan.baselines, spec.statistics, PRIMARY, rounds,
                                    metrics={"throughput.median"})
        false += row.cells[1].verdict in (stats.Verdict.BETTER, stats.Verdict.WORSE)
    return false / sweeps


def bound(rate: float, trials: int) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / trials)


@pytest.mark.parametrize("drift", [0.03, 0.15])
def test_paired_a_a_sweeps_in_the_default_order_on_a_node_drifting_within_rounds_keep_alpha(drift):
    """Five rounds, CV 3 %, the node 3 % or 15 % faster per round. In the cells' own order the
    baseline always races first and pairing makes the drift a precise "effect"; the default order
    turns each round's order, so the drift spreads over both cells."""
    assert models.SweepSpec(template=TEMPLATE).order == models.RunOrder.COUNTERBALANCED
    sweeps = 5000
    assert false_verdict_rate("Counterbalanced", drift, sweeps) <= bound(0.05, sweeps)


def test_the_cells_own_order_on_the_same_node_makes_drift_an_effect():
    """The safeguard removed: what the default order prevents."""
    assert false_verdict_rate("Interleaved", 0.15, 500) > 0.5
    assert false_verdict_rate("Interleaved", 0.03, 2000) > bound(0.05, 2000)


def measured_sweep(spec: models.SweepSpec, drift: float, seed: int,
                   effects: dict[str, float] | None = None) -> tuple[grid.Plan, list[sweepstate.Progress]]:
    """The plan's runs as succeeded Experiments, measuring a drifting node."""
    plan = grid.plan(spec, "order", "default")
    states = []
    for run, value in drifting_runs(plan, drift, 0.02, random.Random(seed), effects):
        child = {"metadata": {"name": f"{run.cell.id}-{run.repetition}", "labels": {models.ATTEMPT_LABEL: "1"}},
                 "status": {"phase": "Succeeded", "results": result(value).to_wire()}}
        states.append(sweepstate.Progress(run, [child]))
    return plan, states


def test_a_node_drifting_within_rounds_is_reported_with_its_figure_per_position():
    spec = sweep_spec(3, 6)
    plan, states = measured_sweep(spec, 0.30, seed=1)
    [effect] = sweepstate.order_effects(plan, states, spec)
    assert effect.state == ordereffect.OrderState.DETECTED
    # 30 % a round of three runs: about +10 % from one position to the next.
    assert effect.low_percent < 10 < effect.high_percent and 5 < effect.per_position_percent < 15
    condition = sweepstate.status_report(plan, states, {}, {}, spec, []).conditions[0]
    assert condition[:3] == (ConditionType.ORDER_EFFECT, True, "OrderEffectDetected")
    assert "per position" in condition[3]


def test_a_steady_node_shows_no_order_effect_and_positions_are_recorded():
    spec = sweep_spec(2, 6)
    plan, states = measured_sweep(spec, 0.0, seed=2)
    report = sweepstate.status_report(plan, states, {}, {}, spec, [])
    assert report.fields["orderEffects"][0]["state"] == "NotDetected"
    assert report.conditions[0][:3] == (ConditionType.ORDER_EFFECT, False, "NoOrderEffect")
    places = {(r["cell"], r["repetition"]): r["position"] for r in report.fields["runs"] if "position" in r}
    assert sorted(places[("c0", round_)] + places[("c1", round_)] for round_ in range(1, 7)) == [1] * 6
    assert not any("position" in r for r in report.fields["runs"] if r["cell"].startswith("w"))


def test_the_cells_own_order_is_reported_as_confounded_not_as_no_effect():
    spec = sweep_spec(2, 4, order="Interleaved")
    plan, states = measured_sweep(spec, 0.15, seed=3)
    [effect] = sweepstate.order_effects(plan, states, spec)
    assert effect.state == ordereffect.OrderState.CONFOUNDED
    condition = sweepstate.status_report(plan, states, {}, {}, spec, []).conditions[0]
    assert condition[:3] == (ConditionType.ORDER_EFFECT, True, "OrderConfounded")


def test_a_real_effect_is_still_found_on_a_node_drifting_within_rounds():
    spec = sweep_spec(2, 6)
    found = 0
    for seed in range(40):
        plan, states = measured_sweep(spec, 0.03, seed, effects={"c1": 0.10})
        [row] = [r for r in sweepstate.comparison(plan, states, spec) if r.family == stats.Family.PRIMARY]
        found += row.cells[1].verdict == stats.Verdict.BETTER
    assert found >= 36
