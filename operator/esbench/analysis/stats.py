"""Statistics over repeated runs: how large is the difference between two cells of a sweep, how
sure can one be of it, and is it a difference at all?

One race per configuration tells you little: run-to-run variation on shared hardware is often as
large as the effect being looked for. An ExperimentSweep therefore runs each cell n times, and
this module turns the runs into what a reviewer of performance claims asks for:

- **An effect with its interval.** For every (cell, task, metric): the change against the
  baseline in %, with a confidence interval. Benchmark noise is multiplicative (a slower run is
  slower by a factor), so the comparison is made on the logarithms of positive figures and the
  effect is a ratio: WelchT gives the ratio of geometric means with Welch's t interval (calibrated
  at the small n of a sweep, where a bootstrap interval is too narrow); MannWhitneyU gives the
  Hodges-Lehmann ratio with the distribution-free interval that inverts the Mann-Whitney test
  (robust to one outlying run). A figure that is zero or negative in some run (an error rate, a
  count) is compared on its own scale: the difference of the two, as % of the baseline's mean.
- **Many comparisons, corrected.** A sweep compares each contender on every task and metric:
  a hundred comparisons of identical cells would give several "differences" by chance. The
  sweep's primary questions (statistics.primary and its gates) form one family corrected by
  Holm (the chance of any false verdict stays at 1 - confidence); every other comparison is
  exploratory, corrected by Benjamini-Hochberg (the expected share of false verdicts among the
  verdicts stays at 1 - confidence). Raw and adjusted p-values are both kept. The interval shown
  is taken at the adjusted level (alpha * p / adjusted p), so that it excludes no change exactly
  when the adjusted p-value is below alpha: the interval and the verdict never disagree.
- **Three answers, not two.** Better or Worse when the interval excludes no change; Equivalent
  when two one-sided tests place the change within +-noiseThresholdPercent (evidence of no
  meaningful change), corrected over the family as the difference tests are; Inconclusive
  otherwise, with the runs per cell that would likely settle it. With fewer than two runs on a
  side there is no interval: the change is a difference between single runs (InsufficientData);
  likewise for a figure that did not vary within either cell (or whose paired differences did
  not), where an interval of one point would make two runs a certainty.
- **What the sweep could see.** Per cell the spread (CV) and the smallest effect the comparison
  could have found with 80 % power at its number of runs.

Pure: models.Results in (via compare.measurements, so the metrics and their directions are the
same as in `esbench compare`), Rows out, and their wire form for a Kubernetes status.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from esbench.analysis import compare
from esbench.analysis.compare import Direction, Metric, Section
from esbench.api import models

Test = models.SignificanceTest
POWER = 0.8  # of the smallest detectable effect, as is usual in planning experiments
MAX_RUNS_ESTIMATE = 1000  # beyond this, "more runs" is not the answer: a quieter machine is


def _scipy_stats():
    # scipy (with numpy) adds some 80 MiB to the operator: loaded by the first sweep, not at start.
    from scipy import stats

    return stats


def _scipy_special():
    from scipy import special  # late, as scipy.stats above

    return special


@functools.lru_cache(maxsize=4096)
def _t_quantile(q: float, df: float) -> float:
    """Student's t quantile: the special function `scipy.stats.t.ppf` calls, without the
    distribution object's argument handling around it (which was most of the time a sweep's
    comparison took), and cached: a sweep asks for the same few levels and degrees of freedom."""
    return float(_scipy_special().stdtrit(df, q))


def _variance(values: Sequence[float]) -> float:
    """Sample variance (n - 1) in floats (statistics.variance's exact fractions were the next
    largest share of a comparison's time); exactly 0.0 for a constant sample, where a float
    mean can leave a tiny non-zero value, which keeps the zero-variance checks below reliable."""
    if min(values) == max(values):
        return 0.0
    mean = statistics.fmean(values)
    return math.fsum((x - mean) ** 2 for x in values) / (len(values) - 1)


class Verdict(str, Enum):
    BETTER = "Better"
    WORSE = "Worse"
    EQUIVALENT = "Equivalent"  # the interval lies within the noise threshold
    INCONCLUSIVE = "Inconclusive"  # neither: more runs needed
    INSUFFICIENT_DATA = "InsufficientData"  # fewer than two runs on a side: a difference, no verdict
    BASELINE = "Baseline"


class Family(str, Enum):
    PRIMARY = "primary"
    EXPLORATORY = "exploratory"


CORRECTIONS = {Family.PRIMARY: "Holm", Family.EXPLORATORY: "Benjamini-Hochberg"}


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
    # What a change on the log scale is made of (the ratio of two of them); None where a run is <= 0.
    geometric_mean: float | None = None


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
    # (A constant sample's own value: its logarithms' mean would come back a rounding off it.)
    geometric = None if min(values) <= 0 else values[0] if min(values) == max(values) else statistics.geometric_mean(values)
    if n < 2:
        return Summary(n, median, mean, None, None, None, None, geometric)
    std_dev = math.sqrt(_variance(values))
    cv_percent = std_dev / abs(mean) * 100 if mean else None
    half_width = _t_quantile((1 + confidence) / 2, n - 1) * std_dev / math.sqrt(n)
    return Summary(n, median, mean, std_dev, cv_percent, mean - half_width, mean + half_width, geometric)


# --- two cells: a shift, its p-value and its interval at any level ---------------------------


@dataclass(frozen=True)
class Shift:
    """The contender's values minus the baseline's, on the scale they are compared on."""

    estimate: float
    p_value: float
    interval: Callable[[float], tuple[float, float]]  # alpha -> (low, high); +-inf: unbounded
    spread: float  # the values' standard deviation, pooled: for planning runs
    # (low, high) -> the p-value of two one-sided tests that the shift lies within (low, high)
    equivalence: Callable[[float, float], float]


def t_shift(estimate: float, se: float, df: float, spread: float) -> Shift:
    """A shift with its two-sided t-test and t interval; an exact one when nothing varies (a count
    that is always the same)."""
    if se == 0:
        return Shift(estimate, 0.0 if estimate else 1.0, lambda alpha: (estimate, estimate), 0.0,
                     lambda low, high: 0.0 if low < estimate < high else 1.0)
    stdtr = _scipy_special().stdtr  # the t distribution's cumulative function
    p = float(2 * stdtr(df, -abs(estimate) / se))

    def interval(alpha: float) -> tuple[float, float]:
        half = _t_quantile(1 - alpha / 2, df) * se
        return estimate - half, estimate + half

    def equivalence(low: float, high: float) -> float:
        return float(max(stdtr(df, -(estimate - low) / se), stdtr(df, -(high - estimate) / se)))

    return Shift(estimate, p, interval, spread, equivalence)


def _pooled_spread(baseline: Sequence[float], contender: Sequence[float]) -> float:
    return math.sqrt((_variance(baseline) + _variance(contender)) / 2)


def welch(baseline: Sequence[float], contender: Sequence[float]) -> Shift:
    """Difference of means, Welch's two-sided t-test and its interval (n >= 2 on each side)."""
    nb, nc = len(baseline), len(contender)
    vb, vc = _variance(baseline) / nb, _variance(contender) / nc
    estimate = statistics.fmean(contender) - statistics.fmean(baseline)
    df = (vb + vc) ** 2 / (vb ** 2 / (nb - 1) + vc ** 2 / (nc - 1)) if vb + vc else math.inf
    return t_shift(estimate, math.sqrt(vb + vc), df, _pooled_spread(baseline, contender))


def paired(differences: Sequence[float]) -> Shift:
    """Mean of per-round differences (contender minus baseline, run against run of one round),
    the paired t-test and its interval (n >= 2 pairs). Drift between rounds (a node warming up
    over a sweep) moves both runs of a round and cancels out."""
    n = len(differences)
    deviation = math.sqrt(_variance(differences))
    # spread: the per-run spread that gives this interval's width through detectable_shift(spread, n, n).
    return t_shift(statistics.fmean(differences), deviation / math.sqrt(n), n - 1, deviation / math.sqrt(2))


@functools.lru_cache(maxsize=4096)
def _rank_test_p(above: int, n_baseline: int, n_contender: int) -> float:
    """The two-sided Mann-Whitney p-value when `above` of the n_baseline * n_contender pairs have
    the contender's run above the baseline's (no ties), from scipy on runs that realise it."""
    baseline = list(range(n_baseline))
    contender, left = [], above
    for number in range(n_contender):
        below = min(n_baseline, left)  # this contender run sits above `below` baseline runs
        contender.append(below - 1 + (number + 1) / (n_contender + 1))  # between two, and no ties
        left -= below
    return float(_scipy_stats().mannwhitneyu(contender, baseline, alternative="two-sided").pvalue)


def mann_whitney(baseline: Sequence[float], contender: Sequence[float]) -> Shift:
    """Hodges-Lehmann shift (the median of all pairwise differences), the two-sided Mann-Whitney
    p-value, and the interval of shifts the test does not reject (n >= 2 on each side)."""
    differences = sorted(c - b for b in baseline for c in contender)
    pairs = len(differences)
    estimate = float(statistics.median(differences))
    p = float(_scipy_stats().mannwhitneyu(contender, baseline, alternative="two-sided").pvalue)
    spread = _pooled_spread(baseline, contender)

    def interval(alpha: float) -> tuple[float, float]:
        # A shift between the i-th and the (i+1)-th smallest difference leaves pairs - i pairs with
        # the contender above: the test accepts it when that count is not extreme. The accepted
        # shifts lie around the middle, symmetric in rank: [D(i), D(pairs + 1 - i)] (Moses).
        def accepted(i: int) -> bool:
            return _rank_test_p(pairs - i, len(baseline), len(contender)) >= alpha

        lowest = bisect.bisect_left(range(pairs // 2 + 1), True, key=accepted)
        if lowest > pairs // 2:
            return estimate, estimate
        low = -math.inf if lowest == 0 else differences[lowest - 1]
        high = math.inf if lowest == 0 else differences[pairs - lowest]
        return low, high

    def equivalence(low: float, high: float) -> float:
        mannwhitneyu = _scipy_stats().mannwhitneyu
        above = mannwhitneyu([c - low for c in contender], baseline, alternative="greater").pvalue
        below = mannwhitneyu([c - high for c in contender], baseline, alternative="less").pvalue
        return float(max(above, below))

    return Shift(estimate, p, interval, spread, equivalence)


SHIFTS = {Test.WELCH_T: welch, Test.MANN_WHITNEY_U: mann_whitney}


def tied(*samples: Sequence[float]) -> bool:
    """Whether two runs share a figure: the rank test's interval assumes they never do."""
    values = [v for sample in samples for v in sample]
    return len(set(values)) < len(values)


@dataclass(frozen=True)
class Scale:
    """Where two cells are compared: logarithms of positive figures (the shift is a log ratio), or
    the figures themselves (the shift is a difference, in % of the baseline's mean)."""

    values: Callable[[Sequence[float]], list[float]]
    percent: Callable[[float], float | None]  # a shift on this scale, in % of the baseline
    from_percent: Callable[[float], float | None]
    # An interval's width in % that does not follow the effect: on the log scale 100 * (high - low),
    # whatever the ratio (a width in percentage points grows with it).
    width: Callable[[float], float | None]


def scale(baseline: Sequence[float], contender: Sequence[float]) -> Scale:
    if all(v > 0 for v in (*baseline, *contender)):
        return Scale(lambda vs: [math.log(v) for v in vs], lambda s: math.expm1(s) * 100,
                     lambda p: math.log1p(p / 100) if p > -100 else None, lambda w: w * 100)
    reference = abs(statistics.fmean(baseline))
    if not reference:
        return Scale(list, lambda s: None, lambda p: None, lambda w: None)
    return Scale(list, lambda s: s / reference * 100, lambda p: p / 100 * reference, lambda w: w / reference * 100)


def _percent(scale_: Scale, shift: float) -> float | None:
    if math.isinf(shift):
        return None  # unbounded
    return scale_.percent(shift)


def detectable_shift(spread: float, n_baseline: int, n_contender: int, alpha: float) -> float:
    """The smallest shift a two-sided t test at alpha finds with POWER at these numbers of runs."""
    df = n_baseline + n_contender - 2
    return (_t_quantile(1 - alpha / 2, df) + _t_quantile(POWER, df)) * spread * (1 / n_baseline + 1 / n_contender) ** 0.5


def runs_needed(spread: float, estimate: float, margin: float | None, alpha: float) -> int | None:
    """Runs per cell with which the comparison would, with POWER, either exclude no change or fit
    within the margin, if the spread and the shift stay as they are now."""
    goal = max(abs(estimate), (margin - abs(estimate)) if margin is not None else 0)
    if spread == 0 or goal <= 0:
        return None
    runs = range(2, MAX_RUNS_ESTIMATE + 1)
    # The detectable shift falls as the runs grow: the first number that is enough, by bisection.
    first = bisect.bisect_left(runs, True, key=lambda n: detectable_shift(spread, n, n, alpha) <= goal)
    return runs[first] if first < len(runs) else None


def adjust(p_values: Sequence[float], family: Family) -> list[float]:
    """The family's p-values corrected for their number: Holm's step-down (primary), or
    Benjamini-Hochberg (exploratory, scipy's false_discovery_control)."""
    if not p_values:
        return []
    if family == Family.EXPLORATORY:
        return [float(p) for p in _scipy_stats().false_discovery_control(list(p_values), method="bh")]
    # Holm: the i-th smallest p times (m - i), made non-decreasing, at most 1. (statsmodels'
    # multipletests gives the same, tests/unit/test_stats.py checks it, but runs a full garbage
    # collection on every call, in every reconcile and every simulated sweep.)
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


# --- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CellStats:
    cell: str
    summary: Summary
    change_percent: float | None  # the effect against the baseline (ratio - 1, or difference / mean)
    noisy: bool
    verdict: Verdict
    low_percent: float | None = None  # the effect's interval at the adjusted level; None: unbounded
    high_percent: float | None = None
    raw_low_percent: float | None = None  # ... and at the sweep's confidence, uncorrected
    raw_high_percent: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    runs_needed: int | None = None  # per cell, to settle an Inconclusive comparison
    detectable_percent: float | None = None  # smallest effect found with POWER at this n
    # A primary comparison's interval width at alpha / (the family's size): what further rounds
    # narrow, independent of the effect (a width at the Holm level would follow the p-value).
    width_percent: float | None = None
    against: str | None = None  # a contender's baseline cell, where there are several
    pairs: int | None = None  # paired: the rounds with a run in both cells, that the comparison used
    unpaired_rounds: tuple[int, ...] = ()  # paired: rounds left out, a run missing in one of the cells
    test: Test | None = None  # where it differs from the sweep's: WelchT for tied figures under MannWhitneyU
    equivalence_p: float | None = None  # two one-sided tests against +-noiseThresholdPercent, raw ...
    equivalence_p_adjusted: float | None = None  # ... and corrected over the family


@dataclass(frozen=True)
class Row:
    section: Section
    subject: str  # the task name, "cluster" or "nodes"
    metric: Metric
    unit: str | None
    cells: list[CellStats]  # in the order of the samples; a cell without values is left out
    family: Family = Family.EXPLORATORY


@dataclass(frozen=True)
class _Pending:
    """A contender's comparison before its family's correction."""

    row: int
    position: int
    shift: Shift
    scale: Scale
    n_baseline: int
    n_contender: int
    equivalence_p: float


def _direction_verdict(direction: Direction, shift: float) -> Verdict:
    return Verdict.BETTER if (shift > 0) == (direction == Direction.HIGHER_IS_BETTER) else Verdict.WORSE


def _is_noisy(summary: Summary | None, threshold: float) -> bool:
    return summary is not None and summary.cv_percent is not None and summary.cv_percent > threshold


def _settle(cell: CellStats, pending: _Pending, p_adjusted: float, equivalence_adjusted: float,
            direction: Direction, statistics_: models.Statistics, family_size: int | None,
            alpha: float | None = None) -> CellStats:
    """The contender's interval at its adjusted level, and its verdict: Better or Worse by the
    difference test, Equivalent by two one-sided tests against the noise threshold, each at its
    family's corrected level; `alpha` is the level of the look that decides (sequential rounds),
    else 1 - confidence."""
    alpha = alpha or alpha_of(statistics_)
    # The level at which the interval excludes no change exactly when the adjusted p is below alpha.
    level = alpha * pending.shift.p_value / p_adjusted if p_adjusted > 0 else alpha
    low, high = pending.shift.interval(level)
    raw_low, raw_high = pending.shift.interval(alpha)
    margin = pending.scale.from_percent(statistics_.noise_threshold_percent)
    low_percent, high_percent = _percent(pending.scale, low), _percent(pending.scale, high)
    needed = None
    if p_adjusted < alpha:
        verdict = _direction_verdict(direction, pending.shift.estimate)
    elif equivalence_adjusted < alpha:
        verdict = Verdict.EQUIVALENT
    else:
        verdict = Verdict.INCONCLUSIVE
        needed = runs_needed(pending.shift.spread, pending.shift.estimate, margin, level)
    detectable = _percent(pending.scale, detectable_shift(pending.shift.spread, pending.n_baseline,
                                                          pending.n_contender, level))
    width = None
    if family_size:
        planned_low, planned_high = pending.shift.interval(alpha / family_size)
        width = None if math.isinf(planned_high - planned_low) else pending.scale.width(planned_high - planned_low)
    return replace(cell, verdict=verdict, low_percent=low_percent, high_percent=high_percent, width_percent=width,
                   raw_low_percent=_percent(pending.scale, raw_low), raw_high_percent=_percent(pending.scale, raw_high),
                   p_value=pending.shift.p_value, p_adjusted=p_adjusted, runs_needed=needed,
                   detectable_percent=detectable, equivalence_p=pending.equivalence_p,
                   equivalence_p_adjusted=equivalence_adjusted)


def alpha_of(statistics_: models.Statistics) -> float:
    return round(1 - statistics_.confidence, 12)  # round: 1 - 0.95 is 0.050000000000000044


# --- sequential rounds ---------------------------------------------------------------------
# With maxRepetitions a sweep looks at its primary comparisons after every round from
# `repetitions` on, and a contender stops once they are settled. Looking at full alpha each time
# would be optional stopping: the chance of a false verdict grows with every look. A group-
# sequential design spends alpha over the looks instead (Lan-DeMets, with a spending function of
# the Pocock type: early looks get more than an even share, so an obvious effect stops a sweep
# early), and each look tests at the nominal level whose boundary, for the statistic's path over
# the looks, crosses with exactly the alpha spent there. Stopping for any other reason
# (equivalence, narrow intervals, the maximum) only makes a false verdict rarer.

SPENDING_PATHS = 200_000  # simulated paths for the boundaries: a few % of each look's level


@dataclass(frozen=True)
class Look:
    round: int  # the last round a contender's comparison takes (the baseline's later runs left out)
    alpha: float  # the nominal level its primary comparisons are decided at


def spent(alpha: float, fraction: float) -> float:
    """The alpha spent by this fraction of the runs (Lan-DeMets, Pocock type)."""
    return alpha * math.log(1 + (math.e - 1) * min(fraction, 1.0))


@functools.lru_cache(maxsize=64)
def _nominal_levels(alpha: float, first: int, most: int) -> tuple[float, ...]:
    """Each look's two-sided nominal level, for looks after first..most runs. The z statistic of a
    shift estimated from n runs is a random walk's sum over sqrt(n); its boundary at each look is
    set, on seeded simulated paths that have not crossed before, so that the share crossing there
    is the alpha spent at that look (what group-sequential software computes by integration)."""
    import numpy as np  # with scipy (stats._scipy_stats), late

    generator = np.random.default_rng(20261202)
    walk = generator.normal(0.0, math.sqrt(first), SPENDING_PATHS)
    open_ = np.ones(SPENDING_PATHS, dtype=bool)
    levels = []
    for runs in range(first, most + 1):
        share = spent(alpha, runs / most) - (spent(alpha, (runs - 1) / most) if runs > first else 0.0)
        z = np.abs(walk) / math.sqrt(runs)
        crossing = int(round(share * SPENDING_PATHS))
        candidates = np.sort(z[open_])
        boundary = float(candidates[-crossing]) if 0 < crossing <= len(candidates) else math.inf
        levels.append(float(2 * _scipy_special().ndtr(-boundary)))
        open_ &= z < boundary
        walk += generator.normal(0.0, 1.0, SPENDING_PATHS)
    return tuple(levels)


def look(alpha: float, runs: int, first: int, most: int) -> Look:
    """The look after `runs` rounds of a sweep that looks first after `first` and at most `most`."""
    return Look(runs, _nominal_levels(alpha, first, most)[runs - first])


def group_baselines(groups: Sequence[compare.Group], within: Sequence[str] = ()) -> dict[str, str]:
    """Each group's baseline: the first group; with `within` (a sweep's compareWithin), the first
    group with the same values of these spec fields."""
    first: dict[str, str] = {}
    result = {}
    for group in groups:
        spec = group.entries[0].spec
        level = json.dumps([models.field_value(spec.to_wire(), field) if spec else None for field in within],
                           sort_keys=True)
        result[group.name] = first.setdefault(level, group.name)
    return result


def compare_groups(groups: Sequence[compare.Group], primary: Iterable[tuple[str, str]] = (),
                   paired: bool = False, within: Sequence[str] = ()) -> list[Row]:
    """Each group of repeated runs (a sweep's cell, or the runs of one spec) against the first (or
    the first of its level, group_baselines), as the sweep compares its cells. Paired: each run
    against its baseline's run of the same round (a sweep's runs carry it), as a sweep with
    statistics.paired does."""
    samples = {group.name: [entry.results for entry in group.entries] for group in groups}
    baselines = group_baselines(groups, within)
    if not paired:
        return compare_cells(samples, baselines, primary=primary)
    unpaired = [entry.label for group in groups for entry in group.entries if entry.repetition is None]
    if unpaired:
        raise compare.NotComparable(f"pairing by round needs a sweep's runs; these have no round: {', '.join(unpaired)}")
    rounds = {group.name: [entry.repetition or 0 for entry in group.entries] for group in groups}
    return compare_cells(samples, baselines, models.Statistics(paired=True), primary=primary, rounds=rounds)


def compare_cells(
    samples: Mapping[str, Sequence[models.Results]],
    baseline: str | Mapping[str, str],
    statistics_: models.Statistics | None = None,
    primary: Iterable[tuple[str, str]] = (),
    rounds: Mapping[str, Sequence[int]] | None = None,
    metrics: Collection[str] | None = None,
    looks: Mapping[str, Look] | None = None,
) -> list[Row]:
    """One Row per (section, subject, metric) that has a value in any cell, in the order of
    compare.measurements (tasks, then cluster, then nodes); only the metrics (keys) named in
    `metrics` when given, so that they alone are the comparisons corrected together.

    `samples` maps each cell (baseline included, in cell order) to the Results of its
    successful runs; `baseline` names the cell every other is compared with, or maps each cell
    to its own (a sweep's compareWithin: a baseline per level, itself among them). The
    contenders of every baseline are corrected together. Cells still without values for a
    metric are left out of its row, so
    partial results of a running sweep show what is there. `primary` names the (task, metric)
    pairs of the sweep's primary questions; every other row is exploratory. With
    statistics.paired, `rounds` gives each sample's round (in the samples' order), and a
    contender is compared run against run with the baseline's run of the same round. `looks`
    (sequential rounds) gives a contender the round its comparison stops at and the level its
    primary comparisons are decided at.
    """
    statistics_ = statistics_ or models.Statistics()
    _check_confidence(statistics_.confidence)
    baseline_of = {cell: baseline for cell in samples} if isinstance(baseline, str) else dict(baseline)
    baselines = {baseline_of[cell] for cell in samples}
    for against in baselines:
        if against not in samples:
            raise ValueError(f"baseline cell {against!r} is not among the cells {sorted(samples)}")
    figures = _Figures.of(samples, rounds, metrics)
    primary = set(primary)
    rows: list[Row] = []
    pending: dict[Family, list[_Pending]] = {Family.PRIMARY: [], Family.EXPLORATORY: []}
    for key in figures.keys():
        family = Family.PRIMARY if (key[1], key[2]) in primary else Family.EXPLORATORY
        cells: list[CellStats] = []
        for cell in samples:
            if cell not in figures.values[key]:
                continue
            found, comparison = _against_baseline(figures, key, cell, baseline_of[cell], statistics_,
                                                  rounds is not None and statistics_.paired,
                                                  looks[cell].round if looks and cell in looks else None)
            if comparison is not None:
                pending[family].append(_Pending(len(rows), len(cells), *comparison))
            cells.append(replace(found, against=found.against if len(baselines) > 1 else None))
        rows.append(Row(key[0], key[1], figures.first[key].metric, figures.units.get(key), cells, family))
    _settle_families(rows, pending, statistics_, looks)
    return rows


Key = tuple[Section, str, str]  # a row: section, subject (a task), metric


@dataclass
class _Figures:
    """Every cell's figures per row, with each figure's round, in compare.measurements' order."""

    values: dict[Key, dict[str, list[float]]]
    rounds: dict[Key, dict[str, list[int]]]  # empty when the samples' rounds are not known
    first: dict[Key, compare.Measurement]  # metric and subject of the row
    units: dict[Key, str]

    @classmethod
    def of(cls, samples: Mapping[str, Sequence[models.Results]], rounds: Mapping[str, Sequence[int]] | None,
           metrics: Collection[str] | None) -> _Figures:
        found = cls({}, {}, {}, {})
        for cell, runs in samples.items():
            for position, results in enumerate(runs):
                for m in compare.measurements(results, metrics):
                    key = (m.section, m.subject, m.metric.key)
                    found.first.setdefault(key, m)
                    # A missing or non-finite figure is no sample: nan would poison every statistic.
                    if m.value is None or not math.isfinite(m.value):
                        continue
                    found.values.setdefault(key, {}).setdefault(cell, []).append(float(m.value))
                    if rounds is not None:
                        found.rounds.setdefault(key, {}).setdefault(cell, []).append(rounds[cell][position])
                    if m.unit:
                        found.units.setdefault(key, m.unit)
        return found

    def keys(self) -> list[Key]:
        """The rows with a value in some cell: tasks, then cluster, then nodes (stable within)."""
        section_rank = {s: i for i, s in enumerate(Section)}
        return sorted((k for k in self.first if k in self.values), key=lambda k: section_rank[k[0]])


def _against_baseline(figures: _Figures, key: Key, cell: str, against: str, statistics_: models.Statistics,
                      pairing: bool, last_round: int | None
                      ) -> tuple[CellStats, tuple[Shift, Scale, int, int, float] | None]:
    """A cell's figures on one row and, for a contender, its change against its baseline; with the
    test's outcome (shift, scale, runs on each side, equivalence p) when there is one to correct."""
    threshold = statistics_.noise_threshold_percent
    values = figures.values[key]
    summary = summarize(values[cell], statistics_.confidence)
    if cell == against:
        return CellStats(cell, summary, None, _is_noisy(summary, threshold), Verdict.BASELINE), None
    baseline_values = values.get(against)
    baseline_rounds = figures.rounds[key][against] if figures.rounds and baseline_values else []
    if last_round is not None and baseline_rounds:
        # As the contender was judged when it stopped: the baseline's later rounds left out.
        kept = [(v, r) for v, r in zip(baseline_values, baseline_rounds, strict=True) if r <= last_round]
        baseline_values, baseline_rounds = [v for v, _ in kept] or None, [r for _, r in kept]
    baseline_summary = summarize(baseline_values, statistics_.confidence) if baseline_values else None
    noisy = _is_noisy(summary, threshold) or _is_noisy(baseline_summary, threshold)
    change, details, comparison = None, {}, None
    if baseline_values:
        on = scale(baseline_values, values[cell])
        b, c = on.values(baseline_values), on.values(values[cell])
        if pairing:
            by_round = dict(zip(baseline_rounds, b, strict=True))
            pairs = [(by_round[r], v) for r, v in zip(figures.rounds[key][cell], c, strict=True) if r in by_round]
            b, c = [x for x, _ in pairs], [y for _, y in pairs]
            details = {"pairs": len(pairs), "unpaired_rounds": tuple(sorted(
                set(baseline_rounds).symmetric_difference(figures.rounds[key][cell])))}
        test = statistics_.test
        if test == Test.MANN_WHITNEY_U and tied(b, c):
            test = details["test"] = Test.WELCH_T
        if len(b) > 1 and len(c) > 1:
            shift = (paired([y - x for x, y in zip(b, c, strict=True)]) if pairing else SHIFTS[test](b, c))
            change = _percent(on, shift.estimate)
            # Figures that did not vary within a cell (a count, two runs) give an "exact"
            # difference: no evidence of how they would vary, so no verdict.
            if shift.spread > 1e-9 * abs(shift.estimate) or shift.estimate == 0:  # beyond rounding
                margins = on.from_percent(-threshold), on.from_percent(threshold)
                if None in margins:  # a baseline of zero: no margin but "none at all"
                    margins = (-math.ulp(0.0), math.ulp(0.0))
                comparison = (shift, on, len(b), len(c), shift.equivalence(*margins))
        elif b and c:  # a difference between single runs (or a mean): no interval, no verdict
            change = _percent(on, statistics.fmean(c) - statistics.fmean(b))
        # Else paired, and no round has the figure in both cells (e.g. a figure only some races
        # report): no change to state.
    return CellStats(cell, summary, change, noisy, Verdict.INSUFFICIENT_DATA, against=against, **details), comparison


def _settle_families(rows: list[Row], pending: dict[Family, list[_Pending]], statistics_: models.Statistics,
                     looks: Mapping[str, Look] | None) -> None:
    """Each pending comparison's verdict, its p-values corrected over its family."""
    for family, comparisons in pending.items():
        # Difference and equivalence are two families of tests, each corrected for its number.
        differences = adjust([c.shift.p_value for c in comparisons], family)
        equivalences = adjust([c.equivalence_p for c in comparisons], family)
        for item, p_adjusted, equivalence_adjusted in zip(comparisons, differences, equivalences, strict=True):
            row = rows[item.row]
            cell = row.cells[item.position]
            decided_at = looks[cell.cell].alpha if looks and cell.cell in looks and family == Family.PRIMARY else None
            row.cells[item.position] = _settle(cell, item, p_adjusted, equivalence_adjusted, row.metric.direction,
                                               statistics_, len(comparisons) if family == Family.PRIMARY else None,
                                               decided_at)


# --- wire form -----------------------------------------------------------------------------


def _round(value: float | None, digits: int = 6) -> float | None:
    # Six significant digits are beyond any benchmark's precision and keep the status small
    # (it is stored in etcd); p-values and percentages need fewer.
    return None if value is None else float(f"{value:.{digits}g}")


def _compact(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def corrections(rows: Sequence[Row]) -> dict[str, Any]:
    """How the rows' p-values were corrected, and over how many comparisons: for a status."""
    counted = {family: sum(1 for row in rows if row.family == family for c in row.cells if c.p_value is not None)
               for family in Family}
    return {family.value: {"correction": CORRECTIONS[family], "comparisons": counted[family]} for family in Family}


def to_wire(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """camelCase, JSON-ready dicts for a Kubernetes status; None fields are left out."""
    return [
        _compact({
            "section": row.section.value,
            "subject": row.subject,
            "metric": row.metric.key,
            "unit": row.unit,
            "higherIsBetter": row.metric.direction == Direction.HIGHER_IS_BETTER,
            "family": row.family.value,
            "followsRequestCount": row.metric.follows_request_count or None,
            "cells": [
                _compact({
                    "cell": c.cell,
                    "n": c.summary.n,
                    "median": _round(c.summary.median),
                    "geometricMean": _round(c.summary.geometric_mean),
                    "mean": _round(c.summary.mean),
                    "stdDev": _round(c.summary.std_dev),
                    "cvPercent": _round(c.summary.cv_percent, 4),
                    "ciLow": _round(c.summary.ci_low),
                    "ciHigh": _round(c.summary.ci_high),
                    "changePercent": _round(c.change_percent, 4),
                    "changeLowPercent": _round(c.low_percent, 4),
                    "changeHighPercent": _round(c.high_percent, 4),
                    "rawChangeLowPercent": _round(c.raw_low_percent, 4),
                    "rawChangeHighPercent": _round(c.raw_high_percent, 4),
                    "pValue": _round(c.p_value, 4),
                    "pAdjusted": _round(c.p_adjusted, 4),
                    "runsNeeded": c.runs_needed,
                    "detectablePercent": _round(c.detectable_percent, 3),
                    "widthPercent": _round(c.width_percent, 4),
                    "equivalencePValue": _round(c.equivalence_p, 4),
                    "equivalencePAdjusted": _round(c.equivalence_p_adjusted, 4),
                    "pairs": c.pairs,
                    "unpairedRounds": list(c.unpaired_rounds) or None,
                    "test": c.test.value if c.test else None,
                    "noisy": c.noisy,
                    "verdict": c.verdict.value,
                    "against": c.against,
                })
                for c in row.cells
            ],
        })
        for row in rows
    ]


def contenders(row: dict[str, Any]) -> list[tuple[dict[str, Any] | None, dict[str, Any]]]:
    """A to_wire row's contenders, each with its baseline's cell (None: the baseline has no value
    here). With several baselines (compareWithin) each names its own (`against`)."""
    baselines = {c["cell"]: c for c in row["cells"] if c["verdict"] == Verdict.BASELINE.value}
    first = next(iter(baselines.values()), None)
    return [(baselines.get(c["against"]) if "against" in c else first, c)
            for c in row["cells"] if c["verdict"] != Verdict.BASELINE.value]


def contender_label(found: dict[str, Any]) -> str:
    """A contender's cell, and its baseline's where there are several (compareWithin)."""
    return f"{found['cell']} vs {found['against']}" if "against" in found else found["cell"]


def change_text(found: dict[str, Any]) -> str:
    """A change (a to_wire cell) with its interval, as "-12.0 % [-16.0, -8.0]" (an open end where
    the data cannot bound it); a change between single runs has no interval."""
    change = found.get("changePercent")
    if change is None:
        return "–"  # a zero baseline: no % to give
    if "pValue" not in found:
        return f"{change:+.1f} %"
    low, high = found.get("changeLowPercent"), found.get("changeHighPercent")
    return f"{change:+.1f} % [{'-inf' if low is None else f'{low:+.1f}'}, {'+inf' if high is None else f'{high:+.1f}'}]"


def estimate(found: dict[str, Any] | None) -> float | None:
    """A to_wire cell's figure that its change is made of: the geometric mean of its runs (the
    change is their ratio), or the median where a run had 0 or less."""
    return None if found is None else found.get("geometricMean", found["median"])


def uncorrected_hint(found: dict[str, Any]) -> str | None:
    """For an Inconclusive contender whose uncorrected interval excludes no change: why it is not a
    verdict (the correction over its family) and what would settle it."""
    if found.get("verdict") != Verdict.INCONCLUSIVE.value:
        return None
    low, high = found.get("rawChangeLowPercent"), found.get("rawChangeHighPercent")
    if not ((low is not None and low > 0) or (high is not None and high < 0)):
        return None
    return "excludes no change before the correction: declare it primary to test it alone"


def p_values_text(found: dict[str, Any]) -> str:
    """A to_wire cell's raw and adjusted p-values, as ".042/.168"."""
    def p(value: float) -> str:
        return "<.001" if value < 0.001 else f"{value:.3f}".removeprefix("0")

    return f"{p(found['pValue'])}/{p(found['pAdjusted'])}" if "pValue" in found else ""
