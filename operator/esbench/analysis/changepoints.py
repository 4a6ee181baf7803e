"""Change points in a series of results: Apache Otava's E-divisive means with a t-test on each
candidate (Fleming et al., "Hunter", ICPE 2023), the method MongoDB's and Otava's users run over
their nightly series.

Otava pins older numpy and scipy than ours, so it runs in a virtualenv of its own
(scripts/otava-env.sh) and is called once per series with JSON in and out (otava_series.py).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from esbench.analysis import compare

PROGRAM = Path(__file__).with_name("otava_series.py")
# Otava's own defaults: a window longer than any series here analyses it whole.
MAX_PVALUE = 0.001
WINDOW = 50
# Otava flags a lone bad run at the end of a series as a change; with one more run back to
# normal the change is gone. So a change is suspected until this many runs stand after it.
CONFIRMING_RUNS = 2
# The figures watched for a regression in each task's series: how long a request takes, how many
# are served.
WATCHED_METRICS = ("service_time.p50", "throughput.median")
# The Prometheus gauge of a series' newest change point, as the operator's metrics endpoint and
# `esbench history check --format prometheus` both write it: one alert rule serves both.
REGRESSION_GAUGE = "esbench_regression_state"
REGRESSION_GAUGE_VALUES = {"steady": 0, "suspected": 1, "confirmed": 2}


class OtavaMissing(RuntimeError):
    """No Otava virtualenv where one was looked for."""


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point after the change
    mean_before: float  # over the stretch since the previous change point
    mean_after: float  # up to the next one
    pvalue: float  # of the t-test between those two stretches

    @property
    def change_percent(self) -> float | None:
        return (self.mean_after - self.mean_before) / self.mean_before * 100 if self.mean_before else None

    def kind(self, metric: compare.Metric | None) -> str:
        """"regression" or "improvement" by the metric's direction; "change" for a metric esbench
        does not know."""
        if metric is None:
            return "change"
        worse = (self.mean_after > self.mean_before) == (metric.direction is compare.Direction.LOWER_IS_BETTER)
        return "regression" if worse else "improvement"


def format_change(percent: float | None) -> str:
    """A change of a series' mean as every report says it ("from 0" when the mean before was 0)."""
    return "from 0" if percent is None else f"{percent:+.1f} %"


@dataclass(frozen=True)
class Regression:
    point: ChangePoint
    confirmed: bool  # CONFIRMING_RUNS runs or more after it; else one run more may undo it


def newest_regression(found: list[ChangePoint], length: int, metric: compare.Metric | None) -> Regression | None:
    """The series' last change point (of `length` runs), if it is a regression."""
    if not found or found[-1].kind(metric) != "regression":
        return None
    return Regression(found[-1], confirmed=length - found[-1].index >= CONFIRMING_RUNS)


def otava_python(venv: str | None = None) -> Path:
    """The interpreter of Otava's virtualenv: VENV, else $ESBENCH_OTAVA, else the repository's
    .venv-otava."""
    root = Path(venv or os.environ.get("ESBENCH_OTAVA") or Path(__file__).resolve().parents[3] / ".venv-otava")
    python = root / "bin" / "python"
    if not python.exists():
        raise OtavaMissing(f"change-point detection needs Apache Otava in a virtualenv of its own, and {root} "
                           "has none: run scripts/otava-env.sh, or set ESBENCH_OTAVA to such a virtualenv")
    return python


def find_each(series: Sequence[Sequence[float]], python: Path, *, max_pvalue: float = MAX_PVALUE,
              min_magnitude: float = 0.0, window: int = WINDOW) -> list[list[ChangePoint]]:
    """The change points of each series, with one start of Otava's interpreter for them all."""
    # A change needs at least one point on each side and a t-test on one.
    long_enough = [list(values) for values in series if len(values) >= 3]
    found: list[list[ChangePoint]] = []
    if long_enough:
        request = {"series": long_enough, "max_pvalue": max_pvalue, "min_magnitude": min_magnitude, "window": window}
        answer = subprocess.run([str(python), str(PROGRAM)], input=json.dumps(request), capture_output=True,
                                text=True, timeout=300, check=False)
        if answer.returncode != 0:
            raise RuntimeError(f"Otava failed (exit {answer.returncode}): {answer.stderr.strip()[-2000:]}")
        found = [[ChangePoint(**point) for point in points] for points in json.loads(answer.stdout)]
    answers = iter(found)
    return [next(answers) if len(values) >= 3 else [] for values in series]
