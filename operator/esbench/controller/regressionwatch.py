"""A schedule's watch for regressions (pure, but for Otava's process): after each of its runs is
recorded, the change points of every watched series of its configuration in the results store,
and what follows from them.

A regression at the end of a series is suspected until CONFIRMING_RUNS runs stand after the change
(one bad run looks like one): the schedule then makes one more run of the same spec at once, and
reports the regression only once that run confirms it, once per change (a Warning Event, the
Regression condition, the metrics endpoint). A confirming run that is itself suspect makes no
other: the next tick's run confirms it or not.

A sweep's run is one point of each cell's series, the median of the cell's repetitions: they share
a cluster and a night, so a bad night moves them all, and counting them as runs would confirm it
by itself.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from esbench.analysis import changepoints, compare
from esbench.api.models import RegressionCheck, RegressionState, SeriesRegression
from esbench.api.reasons import ConditionType, Reason
from esbench.history.records import SeriesPoint
from esbench.planning import names
from esbench.planning.status import ConditionUpdate


def per_run(points: list[SeriesPoint]) -> list[SeriesPoint]:
    """The series with one point per run of the schedule: a sweep's races (of one cell) as one, their
    median, named after the sweep; an Experiment's race as it is."""
    runs: dict[str, list[SeriesPoint]] = {}
    for point in points:
        runs.setdefault(point.sweep or point.race_id, []).append(point)

    def one_point(together: list[SeriesPoint]) -> SeriesPoint:
        first = together[0]
        if first.sweep is None:
            return first
        return replace(first, value=statistics.median(p.value for p in together),
                       experiment=first.sweep.rsplit("/", 1)[1])

    return [one_point(together) for together in runs.values()]


def check(run: str, scheduled_at: str, watched: dict[str, str | None],
          series: dict[tuple[str, str, str], list[SeriesPoint]], python: Path,
          before: dict[str, Any] | None) -> dict[str, Any]:
    """The status.regressionCheck for the newest RUN (SCHEDULED_AT its tick): the newest change point of
    each series (by configuration, task and metric), where it is a regression. WATCHED: the
    configurations, each with its sweep cell (None for an Experiment's). BEFORE: the previous check."""
    keys = sorted(series)
    by_run = {key: per_run(series[key]) for key in keys}
    found = changepoints.find_each([[point.value for point in by_run[key]] for key in keys], python)
    regressions = []
    for (configuration, task, metric), changes in zip(keys, found, strict=True):
        points = by_run[configuration, task, metric]
        regression = changepoints.newest_regression(changes, len(points), compare.metric_named(metric))
        if regression is not None:
            first = points[regression.point.index]
            regressions.append(SeriesRegression(
                configuration=configuration, cell=watched.get(configuration), task=task, metric=metric,
                state=RegressionState.CONFIRMED if regression.confirmed else RegressionState.SUSPECTED,
                change_percent=regression.point.change_percent, pvalue=regression.point.pvalue,
                first_run=first.experiment, first_race_id=first.race_id))
    races = {point.race_id for points in series.values() for point in points}
    return RegressionCheck(
        run=run, scheduled_at=scheduled_at, configurations=list(watched), races=len(races), series=len(keys),
        regressions=regressions or None, confirming_run=(before or {}).get("confirmingRun"),
    ).model_dump(mode="json", by_alias=True, exclude_none=True)


def _key(regression: dict[str, Any]) -> tuple[str, str, str, str]:
    return regression["configuration"], regression["task"], regression["metric"], regression["firstRaceId"]


def _of(check: dict[str, Any] | None, state: RegressionState) -> list[dict[str, Any]]:
    return [r for r in (check or {}).get("regressions") or [] if r["state"] == state]


def newly_confirmed(check: dict[str, Any], before: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The regressions CHECK confirms that the check BEFORE it had not: each is reported once."""
    known = {_key(r) for r in _of(before, RegressionState.CONFIRMED)}
    return [r for r in _of(check, RegressionState.CONFIRMED) if _key(r) not in known]


def to_confirm(check: dict[str, Any]) -> str | None:
    """The run whose suspected regression a confirming run is still to be made for."""
    run = check["run"]
    if (not _of(check, RegressionState.SUSPECTED) or names.is_confirming_run(run)
            or check.get("confirmingRun") == names.confirming_run_name(run)):
        return None
    return run


def describe(regression: dict[str, Any]) -> str:
    cell = f"cell {regression['cell']}: " if regression.get("cell") else ""
    return (f"{cell}{regression['task']} {regression['metric']} "
            f"{changepoints.format_change(regression.get('changePercent'))} "
            f"from run {regression['firstRun']} "
            f"(p {regression['pvalue']:.2g})")


def condition(check: dict[str, Any]) -> ConditionUpdate:
    confirmed, suspected = _of(check, RegressionState.CONFIRMED), _of(check, RegressionState.SUSPECTED)
    if confirmed:
        return ConditionType.REGRESSION, True, Reason.REGRESSION_CONFIRMED, "; ".join(map(describe, confirmed))
    if suspected:
        confirming = check.get("confirmingRun")
        then = f"run {confirming} confirms it or not" if confirming else "the next run confirms it or not"
        return ConditionType.REGRESSION, False, Reason.REGRESSION_SUSPECTED, f"{'; '.join(map(describe, suspected))}: {then}"
    configurations = check["configurations"]
    of = f"configuration {configurations[0]}" if len(configurations) == 1 else f"the {len(configurations)} cells"
    return ConditionType.REGRESSION, False, Reason.NO_REGRESSION, (
        f"no series of {of} ends in a regression ({check['series']} series over {check['races']} races, "
        f"through run {check['run']})")
