"""A schedule's watch for regressions (pure, but for Otava's process): after each of its runs is
recorded, the change points of every watched series of its configuration in the results store,
and what follows from them.

A regression at the end of a series is suspected until CONFIRMING_RUNS runs stand after the change
(one bad run looks like one): the schedule then makes one more run of the same spec at once, and
reports the regression only once that run confirms it, once per change (a Warning Event, the
Regression condition, the metrics endpoint). A confirming run that is itself suspect makes no
other: the next tick's run confirms it or not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from esbench.analysis import changepoints, compare
from esbench.api.models import RegressionCheck, RegressionState, SeriesRegression
from esbench.api.reasons import Reason
from esbench.controller import names
from esbench.history.records import SeriesPoint

REGRESSION = "Regression"  # the schedule's condition


def check(run: str, scheduled_at: str, configuration: str, series: dict[tuple[str, str], list[SeriesPoint]],
          python: Path, before: dict[str, Any] | None) -> dict[str, Any]:
    """The status.regressionCheck for the newest RUN (SCHEDULED_AT its tick): the newest change point of each
    series of the CONFIGURATION, where it is a regression. BEFORE: the previous check."""
    watched = sorted(series)
    found = changepoints.find_each([[point.value for point in series[key]] for key in watched], python)
    regressions = []
    for (task, metric), changes in zip(watched, found, strict=True):
        points = series[task, metric]
        regression = changepoints.newest_regression(changes, len(points), compare.metric_named(metric))
        if regression is not None:
            first = points[regression.point.index]
            regressions.append(SeriesRegression(
                task=task, metric=metric,
                state=RegressionState.CONFIRMED if regression.confirmed else RegressionState.SUSPECTED,
                change_percent=regression.point.change_percent, pvalue=regression.point.pvalue,
                first_run=first.experiment, first_race_id=first.race_id))
    races = {point.race_id for points in series.values() for point in points}
    return RegressionCheck(
        run=run, scheduled_at=scheduled_at, configuration=configuration, races=len(races), series=len(watched),
        regressions=regressions or None, confirming_run=(before or {}).get("confirmingRun"),
    ).model_dump(mode="json", by_alias=True, exclude_none=True)


def _key(regression: dict[str, Any]) -> tuple[str, str, str]:
    return regression["task"], regression["metric"], regression["firstRaceId"]


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
    return (f"{regression['task']} {regression['metric']} {changepoints.format_change(regression.get('changePercent'))} "
            f"from run {regression['firstRun']} "
            f"(p {regression['pvalue']:.2g})")


def condition(check: dict[str, Any]) -> tuple[str, bool, str, str]:
    confirmed, suspected = _of(check, RegressionState.CONFIRMED), _of(check, RegressionState.SUSPECTED)
    if confirmed:
        return REGRESSION, True, Reason.REGRESSION_CONFIRMED, "; ".join(map(describe, confirmed))
    if suspected:
        confirming = check.get("confirmingRun")
        then = f"run {confirming} confirms it or not" if confirming else "the next run confirms it or not"
        return REGRESSION, False, Reason.REGRESSION_SUSPECTED, f"{'; '.join(map(describe, suspected))}: {then}"
    return REGRESSION, False, Reason.NO_REGRESSION, (
        f"no series of configuration {check['configuration']} ends in a regression ({check['series']} series "
        f"over {check['races']} races, through run {check['run']})")
