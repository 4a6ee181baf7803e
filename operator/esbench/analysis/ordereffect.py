"""Does a run's position in its round explain its figure beyond its cell? The first question a
reviewer asks of a sweep whose runs share one node.

A node that still warms up (JIT, caches, a filling disk) makes each run of a round a little faster
or slower than the one before. Counterbalancing spreads that over the cells; this test says how
large it was. For each primary question, a linear model of the figure's logarithm with a level
per cell, a level per round (what a round shares, as the paired comparison cancels it) and one
slope for the position: the slope is the change from one position to the next, in %, with its t
interval and p-value, the p-values of all questions corrected together by Holm. Where the cells
always race in the same positions (Interleaved, or Sequential), position and cell cannot be told
apart: the test says so instead of giving a figure.

Pure: the runs' figures, rounds and positions in, OrderEffects out, and their wire form.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from esbench.analysis import compare, stats
from esbench.api import models


class OrderState(str, Enum):
    DETECTED = "Detected"  # the position explains the figure beyond the cell (adjusted p < alpha)
    NOT_DETECTED = "NotDetected"
    CONFOUNDED = "Confounded"  # every cell raced in one position: no way to tell the two apart
    INSUFFICIENT_DATA = "InsufficientData"  # too few runs beyond what the cells and rounds explain


@dataclass(frozen=True)
class OrderEffect:
    task: str
    metric: str
    state: OrderState
    runs: int
    per_position_percent: float | None = None
    low_percent: float | None = None
    high_percent: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None


@dataclass(frozen=True)
class Run:
    """One measured run: its cell, round, position in that round (0 first) and results."""

    cell: str
    round: int
    position: int
    results: models.Results


def _figures(runs: Sequence[Run], task: str, metric: str) -> list[tuple[Run, float]]:
    found = []
    for run in runs:
        for m in compare.measurements(run.results):
            if m.subject == task and m.metric.key == metric and m.value is not None and m.value > 0 \
                    and math.isfinite(m.value):
                found.append((run, math.log(m.value)))
    return found


def _slope(figures: list[tuple[Run, float]]) -> tuple[OrderState, float | None, float | None, float | None]:
    """The position's coefficient, its standard error and residual degrees of freedom."""
    import numpy as np  # with scipy, late (stats._scipy_stats)

    cells = sorted({run.cell for run, _ in figures})
    rounds = sorted({run.round for run, _ in figures})
    columns = [[1.0] * len(figures)]
    columns += [[float(run.cell == cell) for run, _ in figures] for cell in cells[1:]]
    columns += [[float(run.round == round_) for run, _ in figures] for round_ in rounds[1:]]
    nuisance = np.array(columns).T
    design = np.column_stack([nuisance, [float(run.position) for run, _ in figures]])
    rank_without, rank_with = np.linalg.matrix_rank(nuisance), np.linalg.matrix_rank(design)
    if rank_with == rank_without:
        return OrderState.CONFOUNDED, None, None, None
    df = len(figures) - rank_with
    if df < 1:
        return OrderState.INSUFFICIENT_DATA, None, None, None
    y = np.array([value for _, value in figures])
    coefficients, _, _, _ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coefficients
    variance = float(residuals @ residuals) / df
    # The slope's variance: residual variance times the last diagonal element of (X'X)^-1.
    covariance = np.linalg.pinv(design.T @ design) * variance
    return OrderState.NOT_DETECTED, float(coefficients[-1]), math.sqrt(max(float(covariance[-1, -1]), 0.0)), df


def order_effects(runs: Sequence[Run], questions: Iterable[tuple[str, str]],
                  statistics_: models.Statistics | None = None) -> list[OrderEffect]:
    """Per question (task, metric), the position's effect on the figure, Holm-corrected together."""
    statistics_ = statistics_ or models.Statistics()
    alpha = stats.alpha_of(statistics_)
    found: list[OrderEffect] = []
    tested: list[tuple[int, float, float, float]] = []  # index, slope, standard error, df
    for task, metric in questions:
        figures = _figures(runs, task, metric)
        if len({run.position for run, _ in figures}) < 2 or len({run.cell for run, _ in figures}) < 2:
            continue  # one run a round on its cluster, or one cell: no order to speak of
        state, slope, se, df = _slope(figures)
        found.append(OrderEffect(task, metric, state, len(figures)))
        if slope is not None:
            tested.append((len(found) - 1, slope, se, df))
    shifts = [stats.t_shift(slope, se, df, 0.0) for _, slope, se, df in tested]
    adjusted = stats.adjust([shift.p_value for shift in shifts], stats.Family.PRIMARY)
    for (index, slope, _, _), shift, p_adjusted in zip(tested, shifts, adjusted, strict=True):
        low, high = shift.interval(alpha)
        effect = found[index]
        found[index] = OrderEffect(
            effect.task, effect.metric, OrderState.DETECTED if p_adjusted < alpha else OrderState.NOT_DETECTED,
            effect.runs, math.expm1(slope) * 100, math.expm1(low) * 100, math.expm1(high) * 100,
            shift.p_value, p_adjusted)
    return found


# Without primary questions, what says how a task went: its throughput and service time medians.
DEFAULT_METRICS = ("throughput.median", "service_time.p50")


def default_questions(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """Without primary questions: each task's DEFAULT_METRICS."""
    tasks = dict.fromkeys(task.task for run in runs for task in run.results.tasks)
    return [(task, metric) for task in tasks for metric in DEFAULT_METRICS]


def warning(effect: OrderEffect) -> str | None:
    """What a reader must know of this question's order, or None."""
    if effect.state == OrderState.DETECTED:
        return (f"order effect on {effect.task} {effect.metric}: {effect.per_position_percent:+.1f} % per position in "
                f"a round [{effect.low_percent:+.1f}, {effect.high_percent:+.1f}] (adjusted p {effect.p_adjusted:.3g}, "
                f"{effect.runs} runs): the node drifted within rounds")
    if effect.state == OrderState.CONFOUNDED:
        return (f"order confounded on {effect.task} {effect.metric}: every cell raced in the same position of every "
                "round, so drift within a round cannot be told from an effect (order Counterbalanced separates them)")
    return None


def to_wire(effects: Sequence[OrderEffect]) -> list[dict[str, Any]]:
    def rounded(value: float | None, digits: int = 4) -> float | None:
        return None if value is None else float(f"{value:.{digits}g}")

    return [{key: value for key, value in {
        "task": e.task, "metric": e.metric, "state": e.state.value, "runs": e.runs,
        "perPositionPercent": rounded(e.per_position_percent), "lowPercent": rounded(e.low_percent),
        "highPercent": rounded(e.high_percent), "pValue": rounded(e.p_value), "pAdjusted": rounded(e.p_adjusted),
    }.items() if value is not None} for e in effects]
