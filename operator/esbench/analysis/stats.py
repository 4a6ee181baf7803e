"""Statistics over repeated runs: is a difference between two cells of a sweep real?

One race per configuration tells you little: run-to-run variation on shared hardware is
often as large as the effect being looked for. An ExperimentSweep therefore runs each cell
(one configuration) n times, and this module turns the runs into figures a performance
engineer can defend: per metric and cell the spread (sample standard deviation, coefficient
of variation, the t confidence interval of the mean), the change against the baseline cell,
and a two-sided significance test, from which a verdict follows.

Two tests, because benchmark figures come in two kinds:
- Welch's t-test compares means without assuming equal variances (a configuration change
  often changes the spread too). Suited to throughput and sizes, whose runs scatter roughly
  symmetrically.
- Mann-Whitney U compares distributions by ranks, so one slow outlier run does not decide the
  outcome; suited to latency percentiles. Its change is reported on medians to match.

A verdict is only Better or Worse when the test says the difference is significant; with fewer
than two runs on either side there is no test and the verdict says so. A cell whose
coefficient of variation exceeds the noise threshold is flagged: its verdict stands, but it
deserves more runs or a quieter machine.

Pure: models.Results in (via compare.measurements, so the metrics and their directions are the
same as in `esbench compare`), Rows out, and their wire form for a Kubernetes status.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from esbench.analysis import compare
from esbench.analysis.compare import Direction, Metric, Section
from esbench.api import models

# The sweep's choice (models.Statistics.test): Welch compares means, Mann-Whitney distributions.
Test = models.SignificanceTest



def _scipy_stats():
    # scipy (with numpy) adds some 80 MiB to the operator: loaded by the first sweep, not at start.
    from scipy import stats

    return stats

class Verdict(str, Enum):
    BETTER = "Better"
    WORSE = "Worse"
    NO_SIGNIFICANT_CHANGE = "NoSignificantChange"
    INSUFFICIENT_DATA = "InsufficientData"
    BASELINE = "Baseline"


# --- one cell ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    std_dev: float | None  # sample standard deviation (n - 1); None when n < 2
    cv_percent: float | None  # std_dev / |mean| * 100; None when n < 2 or mean == 0
    ci_low: float | None  # confidence interval of the mean (t distribution); None when n < 2
    ci_high: float | None


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), not {confidence}")


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary:
    """n, median, mean, spread and confidence interval of one cell's values (n >= 1)."""
    _check_confidence(confidence)
    if not values:
        raise ValueError("nothing to summarize: no values")
    n = len(values)
    median = float(statistics.median(values))
    mean = statistics.fmean(values)
    if n < 2:
        return Summary(n, median, mean, None, None, None, None)
    # statistics.stdev is exact for constant samples (0.0, where a naive formula can give a
    # tiny non-zero value), which keeps the zero-variance checks below reliable.
    std_dev = statistics.stdev(values)
    cv_percent = std_dev / abs(mean) * 100 if mean else None
    half_width = float(_scipy_stats().t.ppf((1 + confidence) / 2, n - 1)) * std_dev / math.sqrt(n)
    return Summary(n, median, mean, std_dev, cv_percent, mean - half_width, mean + half_width)


# --- two cells -----------------------------------------------------------------------------


def p_value(baseline: Sequence[float], contender: Sequence[float], test: Test) -> float | None:
    """Two-sided p-value of `test`; None (never nan) when either side has fewer than two
    values or the test is undefined for the data."""
    if len(baseline) < 2 or len(contender) < 2:
        return None
    if test == Test.WELCH_T:
        a, b = summarize(baseline), summarize(contender)
        if a.std_dev == 0 and b.std_dev == 0:
            # No variance estimate at all: t is 0/0 or ±inf and Welch's degrees of freedom are
            # undefined, so a p-value (scipy says nan or 0) would claim what the data cannot.
            return None
        # From the exact stdlib summaries: the same test as ttest_ind(equal_var=False), without
        # scipy's precision-loss warning for (nearly) constant samples.
        result = _scipy_stats().ttest_ind_from_stats(
            a.mean, a.std_dev, a.n, b.mean, b.std_dev, b.n, equal_var=False
        )
    elif test == Test.MANN_WHITNEY_U:
        # method "auto": exact for small samples without ties, normal approximation otherwise.
        result = _scipy_stats().mannwhitneyu(baseline, contender, alternative="two-sided")
    else:
        raise ValueError(f"unknown test {test!r}")
    p = float(result.pvalue)
    return p if math.isfinite(p) else None


# --- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CellStats:
    cell: str
    summary: Summary
    change_percent: float | None  # vs the baseline's mean (WelchT) or median (MannWhitneyU)
    p_value: float | None
    significant: bool
    noisy: bool
    verdict: Verdict


@dataclass(frozen=True)
class Row:
    section: Section
    subject: str  # the task name, "cluster" or "nodes"
    metric: Metric
    unit: str | None
    cells: list[CellStats]  # in the order of the samples; a cell without values is left out


def _statistic(summary: Summary, test: Test) -> float:
    return summary.median if test == Test.MANN_WHITNEY_U else summary.mean


def _verdict(direction: Direction, difference: float) -> Verdict:
    if difference == 0:
        return Verdict.NO_SIGNIFICANT_CHANGE
    if (difference > 0) == (direction == Direction.HIGHER_IS_BETTER):
        return Verdict.BETTER
    return Verdict.WORSE


def _is_noisy(summary: Summary | None, threshold: float) -> bool:
    return summary is not None and summary.cv_percent is not None and summary.cv_percent > threshold


def _contender(
    cell: str, values: list[float], baseline_values: list[float] | None, baseline: Summary | None,
    metric: Metric, test: Test, confidence: float, noise_threshold_percent: float,
) -> CellStats:
    summary = summarize(values, confidence)
    change = p = None
    verdict = Verdict.INSUFFICIENT_DATA
    significant = False
    if baseline is not None and baseline_values is not None:
        reference = _statistic(baseline, test)
        difference = _statistic(summary, test) - reference
        change = difference / abs(reference) * 100 if reference else None
        p = p_value(baseline_values, values, test)
        if p is not None:
            significant = p < round(1 - confidence, 12)  # round: 1 - 0.95 is 0.050000000000000044
            if not significant:
                verdict = Verdict.NO_SIGNIFICANT_CHANGE
            else:
                # Mann-Whitney can find a shift with equal medians; the means then say which way.
                verdict = _verdict(metric.direction, difference or summary.mean - baseline.mean)
    noisy = _is_noisy(summary, noise_threshold_percent) or _is_noisy(baseline, noise_threshold_percent)
    return CellStats(cell, summary, change, p, significant, noisy, verdict)


def compare_cells(
    samples: Mapping[str, Sequence[models.Results]],
    baseline: str,
    test: Test = Test.WELCH_T,
    confidence: float = 0.95,
    noise_threshold_percent: float = 5.0,
) -> list[Row]:
    """One Row per (section, subject, metric) that has a value in any cell, in the order of
    compare.measurements (tasks, then cluster, then nodes).

    `samples` maps each cell (baseline included, in cell order) to the Results of its
    successful runs. Cells still without values for a metric are left out of its row, so
    partial results of a running sweep show what is there.
    """
    _check_confidence(confidence)
    if baseline not in samples:
        raise ValueError(f"baseline cell {baseline!r} is not among the cells {sorted(samples)}")

    Key = tuple[Section, str, str]
    values: dict[Key, dict[str, list[float]]] = {}
    first: dict[Key, compare.Measurement] = {}  # metric and subject of the row
    units: dict[Key, str] = {}
    for cell, runs in samples.items():
        for results in runs:
            for m in compare.measurements(results):
                key = (m.section, m.subject, m.metric.key)
                first.setdefault(key, m)
                # A missing or non-finite figure is no sample: nan would poison every statistic.
                if m.value is None or not math.isfinite(m.value):
                    continue
                values.setdefault(key, {}).setdefault(cell, []).append(float(m.value))
                if m.unit:
                    units.setdefault(key, m.unit)
    section_rank = {s: i for i, s in enumerate(Section)}
    order = sorted((k for k in first if k in values), key=lambda k: section_rank[k[0]])  # stable

    rows = []
    for key in order:
        by_cell = values[key]
        metric = first[key].metric
        baseline_values = by_cell.get(baseline)
        baseline_summary = summarize(baseline_values, confidence) if baseline_values else None
        cells = []
        for cell in samples:
            if cell not in by_cell:
                continue
            if cell == baseline:
                cells.append(CellStats(
                    cell, baseline_summary, None, None, False,
                    _is_noisy(baseline_summary, noise_threshold_percent), Verdict.BASELINE,
                ))
            else:
                cells.append(_contender(
                    cell, by_cell[cell], baseline_values, baseline_summary,
                    metric, test, confidence, noise_threshold_percent,
                ))
        rows.append(Row(key[0], key[1], metric, units.get(key), cells))
    return rows


# --- wire form -----------------------------------------------------------------------------


def _round(value: float | None, digits: int = 6) -> float | None:
    # Six significant digits are beyond any benchmark's precision and keep the status small
    # (it is stored in etcd); p-values need fewer.
    return None if value is None else float(f"{value:.{digits}g}")


def _compact(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def to_wire(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """camelCase, JSON-ready dicts for a Kubernetes status; None fields are left out."""
    return [
        _compact({
            "section": row.section.value,
            "subject": row.subject,
            "metric": row.metric.key,
            "unit": row.unit,
            "higherIsBetter": row.metric.direction == Direction.HIGHER_IS_BETTER,
            "cells": [
                _compact({
                    "cell": c.cell,
                    "n": c.summary.n,
                    "median": _round(c.summary.median),
                    "mean": _round(c.summary.mean),
                    "stdDev": _round(c.summary.std_dev),
                    "cvPercent": _round(c.summary.cv_percent, 4),
                    "ciLow": _round(c.summary.ci_low),
                    "ciHigh": _round(c.summary.ci_high),
                    "changePercent": _round(c.change_percent, 4),
                    "pValue": _round(c.p_value, 4),
                    "significant": c.significant,
                    "noisy": c.noisy,
                    "verdict": c.verdict.value,
                })
                for c in row.cells
            ],
        })
        for row in rows
    ]
