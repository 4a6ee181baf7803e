"""Repetitions until the answer is clear keep alpha: simulated sweeps driven through the real
with_rounds (the plan, its looks and its stops), as tests/unit/test_sweep_scheduling.py's play()."""

from __future__ import annotations

import functools
import math
import random
from typing import Any

import numpy as np
import pytest

from esbench.analysis import stats
from esbench.api import models
from esbench.planning import grid, sweepstate

TEMPLATE = {"elasticsearch": {"version": "8.15.0"}, "workload": {"track": "smoke"}}


def sequential_spec(tasks: int = 1, paired: bool = False, contenders: int = 1) -> models.SweepSpec:
    return models.SweepSpec.model_validate({
        "template": TEMPLATE, "repetitions": 3, "maxRepetitions": 10, "warmupRuns": 0,
        "matrix": [{"field": "index.refreshInterval", "values": [f"{s + 1}s" for s in range(contenders + 1)]}],
        "statistics": {"paired": paired, "primary": [{"task": f"t{t}", "metric": "throughput.median"}
                                                     for t in range(tasks)]}})


@functools.cache
def planned(spec_json: str) -> grid.Plan:
    """Planned once per spec, as the operator does (sweeps._plan): admitting each cell as the API
    server would is most of a simulated sweep's time otherwise."""
    return grid.plan(models.SweepSpec.model_validate_json(spec_json), "seq", "default")


def succeeded(run: grid.Run, figures: list[float]) -> dict[str, Any]:
    labels = {models.CELL_LABEL: run.cell.id, models.REPETITION_LABEL: str(run.repetition),
              models.ATTEMPT_LABEL: "1"}
    tasks = [{"task": f"t{t}", "throughput": {"median": v, "unit": "docs/s"}} for t, v in enumerate(figures)]
    return {"metadata": {"name": f"{run.cell.id}-r{run.repetition}", "labels": labels},
            "status": {"phase": "Succeeded", "results": {"tasks": tasks}}}


def simulated(spec: models.SweepSpec, generator: random.Random, cv: float, drift: float = 0.0,
              effect: float = 0.0) -> tuple[list[stats.Row], sweepstate.Rounds, int]:
    """A sweep played to its end on a node that gets `drift` faster per round, run by run; the
    contenders truly `effect` better. Its primary rows, its rounds and its number of runs."""
    sigma = math.sqrt(math.log1p(cv ** 2))
    plan = planned(spec.model_dump_json())
    runs: list[dict[str, Any]] = []
    while True:
        rounds = sweepstate.with_rounds(plan, spec, runs)
        made = {(r["metadata"]["labels"][models.CELL_LABEL], int(r["metadata"]["labels"][models.REPETITION_LABEL]))
                for r in runs}
        waiting = [run for run in rounds.plan.runs if run.key not in made]
        if not waiting:
            break
        for run in waiting:  # the round as planned, then a look
            level = 1000 * math.exp(drift * len(runs) / len(plan.cells)) * (1 + effect * (run.cell.id != "c0"))
            runs.append(succeeded(run, [level * math.exp(generator.gauss(0, sigma))
                                        for _ in spec.primary_questions()]))
    states = sweepstate.progress(rounds.plan, runs, spec.max_retries)
    rows = [row for row in sweepstate.comparison(rounds.plan, states, spec, rounds.looks)
            if row.family == stats.Family.PRIMARY]
    return rows, rounds, len(runs)


def false_rate(sweeps: int, tasks: int, seed: int) -> float:
    """A/A sweeps over CV 2-20 %, paired and not, on a steady node and on one drifting 3 % and 15 %
    per round within rounds."""
    generator, false = random.Random(seed), 0
    for number in range(sweeps):
        cv, drift, paired = (0.02, 0.05, 0.1, 0.2)[number % 4], (0.0, 0.03, 0.15)[number % 3], number % 2 == 0
        rows, _, _ = simulated(sequential_spec(tasks, paired), generator, cv, drift)
        false += any(c.verdict in (stats.Verdict.BETTER, stats.Verdict.WORSE) for row in rows for c in row.cells)
    return false / sweeps


def within_alpha(rate: float, trials: int, alpha: float = 0.05) -> bool:
    return rate <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / trials)


def test_a_a_sweeps_that_stop_when_answered_keep_false_verdicts_at_the_stated_rate():
    """Rounds from 3 to 10 runs per cell, a look after each; a contender stops once its primary
    question is settled. Looking at full alpha every time (optional stopping) would claim a
    difference in several times 5 % of these sweeps."""
    sweeps = 800  # fewer cannot tell 5 % from the 7.6 % of looking at full alpha each time
    rate = false_rate(sweeps, 1, seed=41)
    assert within_alpha(rate, sweeps), rate


def test_a_a_sweeps_with_several_primary_questions_keep_the_family_at_the_stated_rate():
    sweeps = 120
    rate = false_rate(sweeps, 5, seed=43)
    assert within_alpha(rate, sweeps), rate


def test_contenders_truly_at_the_margin_are_rarely_called_equivalent_at_any_look():
    """Equivalent settles a contender too, so each look is also a chance to call one equivalent
    that is not: +5 % (noiseThresholdPercent), CV 2-5 %, paired and not, steady and drifting.
    Equivalent taken from either one-sided test alone (not both) would say so in most sweeps."""
    generator, sweeps, equivalent = random.Random(53), 300, 0
    for number in range(sweeps):
        cv, drift, paired = (0.02, 0.03, 0.05)[number % 3], (0.0, 0.03)[number % 2], (number // 2) % 2 == 0
        rows, _, _ = simulated(sequential_spec(paired=paired), generator, cv, drift, effect=0.05)
        equivalent += any(c.verdict == stats.Verdict.EQUIVALENT for row in rows for c in row.cells)
    assert within_alpha(equivalent / sweeps, sweeps), equivalent / sweeps


def test_an_obvious_effect_stops_at_the_first_look_and_a_real_one_is_still_found():
    """As a best_compression export +249 % slower: settled after three rounds, not run to ten."""
    generator = random.Random(47)
    rows, rounds, made = simulated(sequential_spec(paired=True), generator, 0.05, effect=-0.70)
    assert made == 6 and "settled after 3 runs" in rounds.stopped["c1"]
    assert rows[0].cells[1].verdict == stats.Verdict.WORSE
    found = sum(simulated(sequential_spec(paired=True), generator, 0.05, effect=0.10)[0][0].cells[1].verdict
                == stats.Verdict.BETTER for _ in range(60))
    assert found >= 48  # 10 % at CV 5 %: found in at least 80 % of sweeps


def test_the_nominal_levels_are_the_lan_demets_pocock_type_boundaries():
    """Five equally spaced looks at two-sided 0.05: the bounds group-sequential tables give
    (2.438, 2.427, 2.410, 2.397, 2.386 on the z scale); and on fresh simulated paths those
    levels cross at some look in 5 % of them."""
    from scipy import stats as distributions

    levels = [stats.look(0.05, runs, 1, 5).alpha for runs in range(1, 6)]
    bounds = [distributions.norm.isf(level / 2) for level in levels]
    assert bounds == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=0.01)
    assert stats.look(0.05, 3, 3, 10).alpha == pytest.approx(stats.spent(0.05, 0.3), rel=0.03)
    generator, paths = np.random.default_rng(5), 20_000
    walks = np.cumsum(generator.normal(0, 1, (paths, 10)), axis=1)[:, 2:]  # the sums after 3..10 runs
    bounds = [distributions.norm.isf(stats.look(0.05, runs, 3, 10).alpha / 2) for runs in range(3, 11)]
    crossed = (np.abs(walks) / np.sqrt(np.arange(3, 11)) > np.array(bounds)).any(axis=1).mean()
    assert crossed == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / paths))
