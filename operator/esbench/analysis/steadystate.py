"""Where a task's requests reach a steady state, and its figures from there on.

A fixed warm-up guesses when the JIT and the caches have settled; this finds it in the task's own
series of service times, by MSER-5 (White, "An effective truncation heuristic for bias reduction
in simulation output", Simulation 69(6), 1997; Hoad, Robinson and Davies 2010 rank it first of
the warm-up methods they compared). The series is cut into batches of five requests; the
truncation is the number of leading batches whose removal minimises the marginal standard error
of the batch means left, searched over the first half. No library esbench pins offers it
(Otava's E-divisive looks for shifts between stretches, not for the end of a transient, and runs
in a virtualenv of its own), and it is a few lines of numpy.

It assumes the task's load is stationary once warm (a fixed rate, or as fast as the clients go,
over the same requests). A truncation at the end of the searched half, or a part kept that still
moves by more than MAX_DRIFT from its start to its end (Kendall's tau for the trend, Theil-Sen
for its size), is no steady state: said, with no figures.

Pure: samples in (Rally's per-request samples, runner/requestsamples.py reads them), a
models.SteadyState out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from esbench.api import models

BATCH = 5  # requests a batch: MSER-5's, steadier than MSER on single values (White, Cobb and Spratt 2000)
# Fewer batches than this tell a transient from noise too rarely to be worth a verdict.
MIN_BATCHES = 10
# The share by which the part kept may move from its start to its end (a slope that sizes, not
# just a significant one: thousands of requests make any drift significant).
MAX_DRIFT = 0.10
TREND_ALPHA = 0.01
# Wild values (a GC pause, a slow disk read) are clipped to this many robust standard deviations
# from the median first: a batch holding one would otherwise decide where the cut falls.
CLIP = 5.0
# Rally's percentiles of a task's figures (race.json's 50_0, 90_0, 99_0).
PERCENTILES = ("p50", "p90", "p99")


@dataclass(frozen=True)
class Series:
    """One figure of a task over its measured requests, in time order."""

    seconds: Sequence[float]  # since the task's start, as Rally's relative time counts
    values: Sequence[float]
    unit: str | None = None


@dataclass(frozen=True)
class Truncation:
    start: int | None  # the first sample of the steady state; None: none found
    problem: str | None = None  # why none was found


def mser(batch_means: np.ndarray) -> int:
    """MSER's truncation, in batches: the d in [0, k/2] minimising the squared standard error of the
    mean of batches d..k-1, sum((z - mean)^2) / (k - d)^2."""
    k = len(batch_means)
    tail_sum = np.cumsum(batch_means[::-1])[::-1]
    tail_squares = np.cumsum(batch_means[::-1] ** 2)[::-1]
    left = np.arange(k, 0, -1, dtype=float)  # batches from d to the end
    statistic = (tail_squares - tail_sum**2 / left) / left**2
    return int(np.argmin(statistic[: k // 2 + 1]))


def truncate(values: Sequence[float]) -> Truncation:
    """Where the series' steady state begins (a sample index), or why there is none.

    On logarithms: service times are skewed, and a drift in logarithms is a share of the level.
    """
    raw = np.asarray(values, dtype=float)
    k = len(raw) // BATCH
    if k < MIN_BATCHES:
        return Truncation(None, f"{len(raw)} requests: too few to tell (at least {MIN_BATCHES * BATCH})")
    positive = raw[raw > 0]
    floor = positive.min() if len(positive) else 1.0
    logs = np.log(np.maximum(raw, floor))
    median = np.median(logs)
    spread = CLIP * 1.4826 * np.median(np.abs(logs - median))
    logs = np.clip(logs, median - spread, median + spread)
    means = logs[: k * BATCH].reshape(k, BATCH).mean(axis=1)
    d = mser(means)
    if d == k // 2:
        return Truncation(None, "the series was still settling at its half (MSER-5 truncated at the end of its "
                                "search)")
    kept = means[d:]
    if np.ptp(kept) == 0:  # no variation left to trend (a tau of constants is undefined)
        return Truncation(d * BATCH)
    positions = np.arange(len(kept))
    trend = stats.kendalltau(positions, kept)
    slope = stats.theilslopes(kept, positions).slope
    drift = math.expm1(slope * (len(kept) - 1))
    if trend.pvalue < TREND_ALPHA and abs(drift) > MAX_DRIFT:
        return Truncation(None, f"the part kept still trends: {drift:+.0%} from its start to its end")
    return Truncation(d * BATCH)


def _percentile(values: np.ndarray, name: str) -> float:
    # numpy's default interpolation is Rally's (InMemoryMetricsStore.percentile_value).
    return float(np.percentile(values, float(name[1:])))


def summarize(service_time: Series, throughput: Series | None = None) -> models.SteadyState:
    """The task's steady state: where it began, and its service time and throughput from there."""
    truncation = truncate(service_time.values)
    samples = len(service_time.values)
    if truncation.start is None:
        return models.SteadyState(reached=False, samples=samples, problem=truncation.problem)
    start_seconds = float(service_time.seconds[truncation.start])
    kept = np.asarray(service_time.values[truncation.start:], dtype=float)
    rates = [v for s, v in zip(throughput.seconds, throughput.values, strict=True)
             if s >= start_seconds] if throughput else []
    return models.SteadyState(
        reached=True,
        samples=samples,
        start_sample=truncation.start,
        start_seconds=start_seconds,
        kept=len(kept),
        service_time=models.Percentiles(unit=service_time.unit, **{p: _percentile(kept, p) for p in PERCENTILES}),
        throughput=models.SteadyThroughput(mean=float(np.mean(rates)), unit=throughput.unit)
        if rates and throughput else None,
    )


def too_short(state: models.SteadyState) -> bool:
    """A task of too few requests to tell (an index's creation, a health check): no warning. One of
    none had its samples lost, which is warned of."""
    return 0 < state.samples < MIN_BATCHES * BATCH


def unsettled(results: models.Results) -> list[models.TaskResult]:
    """The tasks long enough to tell that never reached a steady state (their figures include a
    transient or a trend), and those whose requests were not kept."""
    return [t for t in results.tasks if t.steady_state and not t.steady_state.reached and not too_short(t.steady_state)]


def warnings(results: models.Results) -> list[str]:
    return [f"{t.task}: no steady state: {t.steady_state.problem}" for t in unsettled(results) if t.steady_state]


def runs_warnings(runs: dict[str, models.Results]) -> list[str]:
    """Over several runs (a comparison, a sweep's report), one line per task rather than one per run."""
    by_task: dict[str, list[str]] = {}
    for label, results in runs.items():
        for task in unsettled(results):
            by_task.setdefault(task.task, []).append(label)
    return [f"{task}: no steady state in {len(labels)} of {len(runs)} runs ({', '.join(labels)}); esbench show "
            f"says why" for task, labels in by_task.items()]
