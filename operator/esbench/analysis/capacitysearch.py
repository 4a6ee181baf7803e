"""The highest rate a configuration holds under a latency objective, found by search (issue #69).

Each probe is a fixed-rate run of one task; this module only decides, from the probes so far, the
rate to probe next and what they say once the search is over. It keeps no state of its own, so a
search interrupted between probes resumes from its list of probes, and a simulation tests it.

The search grows the rate by a factor until the objective breaks, then bisects geometrically (rates
scale by ratios) until the highest rate that holds and the lowest that fails are within the
precision. The rates probed are then points of one lattice, growth ** (k / 2 ** j) apart, and a
search reports the lattice point below the capacity: searches on one lattice round a capacity the
same way however often they repeat, and a change smaller than a step shows as nothing or a whole
step. So each search's lattice starts at its own offset (`dither`, a fraction of a growth step,
drawn at random): the capacity's rounding error is then uniform over a step and independent from
search to search, and what repeated searches vary by is what a comparison's interval can see.

A rate's verdict is the majority of its probes, and a tie is probed again: one probe that reads
three times slower (a GC pause, a neighbour on the host) must not end the search far
below the capacity. Both ends of the final bracket are measured `confirmations` more times, so
that a lucky pass above the capacity is not reported as the capacity, nor an unlucky fail kept as
its bound; a confirmation that turns a rate to failing moves the bracket below it and the search
goes on.

A probe whose load driver could not send at the target rate measures the driver, not the cluster:
the search stops there and reports the highest confirmed rate below it, saying the driver limited.
Where the first rate probed (above the range's low end by the lattice's offset) fails or is the
driver's limit, the low end itself is probed: what a range says is held or not there.

A node keeps getting faster for minutes after its start, the more so the more requests it serves
(the JIT compiles what runs often): judged cold, the low rates probed first fail and the search
spends its probes on a node that is not the one it reports on. So the search begins with warm-up
probes as fast as the task's clients can, not judged, until its throughput stops rising (or
`warmup_probes` are spent, which the answer says). At a low rate the node warms too slowly to tell.
Under a CPU quota the JIT's compilations take their share of it for minutes, and the throughput
rises in steps, flat between them: where the JIT compilers' CPU is known (a local node), the node
is warm only once they take little of it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
from scipy import stats

# How fast a probe's requests may fall behind their schedule (seconds of lag gained a second: the
# share of the offered rate not sent) and still count as held: a GC pause or a neighbour on the
# host delays some requests of a rate the cluster does keep up with.
SHORTFALL = 0.05
# The node is warm once a warm-up probe's throughput is no more than this share above the one
# before it: flat out, the throughput wavers by less from probe to probe, a warming node's by more.
STEADY = 0.2
# ... and once its JIT compilers took at most this share of its CPU over the last warm-up probe
# (where it is known): a node still compiling gets faster in steps, and a step-to-step rule takes a
# plateau between two for steady.
JIT_STEADY = 0.05
# A probe's requests, in time order, are cut into this many runs of equal counts, and its lag's
# growth is drawn through their medians: a robust line costs pairs of points, and thousands of
# requests make millions of pairs.
LAG_RUNS = 10


@dataclass(frozen=True)
class Objective:
    """What the task must hold: a percentile (e.g. "latency.p99", "service_time.p90") at or below
    its bound, and at most a share of requests in error."""

    metric: str
    bound_ms: float
    max_error_rate: float = 0.0


@dataclass(frozen=True)
class SearchSettings:
    low: float  # requests/s: the lowest rate searched
    high: float  # requests/s: the highest rate searched
    precision: float  # the search ends once the lowest failing rate is within this share above the highest holding one
    max_probes: int
    confirmations: int = 1  # extra probes at each end of the final bracket
    growth: float = 2.0  # the factor by which the rate grows until the objective breaks
    warmup_probes: int = 0  # flat-out probes at most before the search, not judged, until the node is steady
    dither: float = 0.0  # the first rate probed is low * growth ** dither, 0 <= dither < 1

    def __post_init__(self) -> None:
        if not 0 < self.low <= self.high:
            raise ValueError(f"the range of rates must be 0 < low <= high, not {self.low}..{self.high}")
        if (self.precision <= 0 or self.growth <= 1 or self.max_probes < 1 or self.confirmations < 0
                or self.warmup_probes < 0 or not 0 <= self.dither < 1):
            raise ValueError("precision must be > 0, growth > 1, max_probes >= 1, confirmations >= 0, "
                             "warmup_probes >= 0 and 0 <= dither < 1")

    @property
    def start(self) -> float:
        """The first rate probed: the lattice's first point at or above low."""
        return min(self.low * self.growth ** self.dither, self.high)


@dataclass(frozen=True)
class Probe:
    """One run of the task, measured after its warm-up: at a fixed rate, or flat out (a warm-up)."""

    offered: float | None  # requests/s: the target rate; None for a warm-up, as fast as the clients can
    achieved: float  # requests/s: the rate the driver measured
    percentiles: dict[str, float]  # metric ("latency.p99") -> ms
    error_rate: float
    driver_limited: bool  # the driver's CPU was at its limit or CFS-throttled
    lag_growth: float  # seconds the requests fell behind their schedule a second (`lag_growth`); 0 flat out
    jit_share: float | None = None  # the share of the node's CPU its JIT compilers took; None: not known


class Verdict(StrEnum):
    PASSED = "Passed"
    FAILED = "Failed"
    DRIVER_LIMITED = "DriverLimited"


class Stop(StrEnum):
    CONVERGED = "Converged"  # the bracket is within the precision
    BUDGET_SPENT = "BudgetSpent"  # max_probes probes made
    BELOW_RANGE = "BelowRange"  # the low end of the range already fails
    ABOVE_RANGE = "AboveRange"  # the high end of the range holds: the capacity is at least that
    DRIVER_LIMITED = "DriverLimited"  # the driver could not go higher: the capacity is at least the one reported
    OUT_OF_TIME = "OutOfTime"  # the next probe would not end within the time left
    PROBE_FAILED = "ProbeFailed"  # a probe could not be measured (its race failed)


class ProbeFailed(Exception):
    """Raised by `search`'s measure: the probe has no figures; the search stops with those so far."""


@dataclass(frozen=True)
class Capacity:
    """What the probes say: the capacity lies between the highest rate that held and the lowest rate
    that failed above it (None where none did)."""

    capacity: float | None  # requests/s
    upper: float | None
    confirmations: int  # passed at the capacity, beyond the probe that found it
    stop: Stop | None  # None while the search goes on
    probes: tuple[Probe, ...]
    warmup: tuple[Probe, ...] = ()
    steady: bool = True  # False when the warm-up probes were spent with the node still getting faster


def lag_growth(seconds: Sequence[float], lag_ms: Sequence[float]) -> float | None:
    """How fast a probe's requests fell behind their schedule (seconds of lag a second, the share of
    the offered rate not sent), from each request's start (s) and its lag behind its scheduled time:
    Siegel's repeated-medians slope through the medians of LAG_RUNS runs. Rally's throughput does
    not tell it: a running count since the clients' start over the time since, it trails a held
    rate by some requests and reads a low rate a few percent short. None with fewer than two
    requests."""
    if len(seconds) < 2:
        return None
    starts, lags = np.asarray(seconds, dtype=float), np.asarray(lag_ms, dtype=float) / 1000
    runs = np.array_split(np.argsort(starts, kind="stable"), min(LAG_RUNS, len(starts)))
    run_starts = [float(np.median(starts[run])) for run in runs]
    if run_starts[0] == run_starts[-1]:
        return None
    return float(stats.siegelslopes([float(np.median(lags[run])) for run in runs], run_starts).slope)


def judge(objective: Objective, probe: Probe) -> Verdict:
    if probe.driver_limited:
        return Verdict.DRIVER_LIMITED
    if probe.error_rate > objective.max_error_rate or probe.lag_growth > SHORTFALL:
        return Verdict.FAILED
    return Verdict.PASSED if probe.percentiles[objective.metric] <= objective.bound_ms else Verdict.FAILED


@dataclass
class _Tally:
    passed: int = 0
    failed: int = 0

    @property
    def holds(self) -> bool:
        return self.passed > self.failed

    @property
    def fails(self) -> bool:
        return self.failed > self.passed

    def settled(self, needed: int) -> bool:
        """Measured enough times: `needed` probes that agree, more than disagree."""
        return max(self.passed, self.failed) >= needed


def _tallies(objective: Objective, probes: Sequence[Probe]) -> tuple[dict[float, _Tally], float | None]:
    """Each rate's passes and fails, and the lowest rate at which the driver was limited."""
    tallies: dict[float, _Tally] = {}
    driver_limit = None
    for probe in probes:
        verdict = judge(objective, probe)
        if verdict is Verdict.DRIVER_LIMITED:
            driver_limit = probe.offered if driver_limit is None else min(driver_limit, probe.offered)
            continue
        tally = tallies.setdefault(probe.offered, _Tally())
        tally.passed += verdict is Verdict.PASSED
        tally.failed += verdict is Verdict.FAILED
    return tallies, driver_limit


def _decide(settings: SearchSettings, objective: Objective, probes: Sequence[Probe]) -> tuple[float | None, Capacity]:
    """The rate to probe next, and what the probes say so far."""
    tallies, driver_limit = _tallies(objective, probes)
    upper = min((rate for rate, t in tallies.items() if t.fails), default=None)
    # The driver's limit bounds the search unless a rate below it failed: the cluster's limit is lower.
    driver_bounds = driver_limit is not None and (upper is None or driver_limit <= upper)
    ceiling = driver_limit if driver_bounds else upper
    lower = max((rate for rate, t in tallies.items() if t.holds and (ceiling is None or rate < ceiling)), default=None)
    needed = 1 + settings.confirmations

    def decision(next_rate: float | None, stop: Stop | None) -> tuple[float | None, Capacity]:
        if next_rate is not None and len(probes) >= settings.max_probes:
            next_rate, stop = None, Stop.BUDGET_SPENT
        confirmations = tallies[lower].passed - 1 if lower is not None else 0
        return next_rate, Capacity(capacity=lower, upper=upper, confirmations=confirmations, stop=stop,
                                   probes=tuple(probes))

    def settle(ends: Sequence[float | None], stop: Stop) -> tuple[float | None, Capacity]:
        """Measure the ends of the bracket until each is settled, then stop."""
        for end in ends:
            if end is not None and not tallies[end].settled(needed):
                return decision(end, None)
        return decision(None, stop)

    # A rate between the bracket's ends whose probes disagree evenly is probed again.
    tie = min((rate for rate, t in tallies.items() if not t.holds and not t.fails
               and (lower is None or rate > lower) and (ceiling is None or rate < ceiling)), default=None)
    if tie is not None:
        return decision(tie, None)
    if lower is None and ceiling is not None and ceiling > settings.low:  # the first rate did not hold: the low end decides
        return decision(settings.low, None)
    if driver_bounds:
        return settle([lower], Stop.DRIVER_LIMITED)
    if lower is None:
        if upper is None:
            return decision(settings.start, None)
        return settle([upper], Stop.BELOW_RANGE)
    if upper is None:
        if lower >= settings.high:
            return settle([lower], Stop.ABOVE_RANGE)
        return decision(min(lower * settings.growth, settings.high), None)
    if upper <= lower * (1 + settings.precision):
        return settle([lower, upper], Stop.CONVERGED)
    return decision(math.sqrt(lower * upper), None)


def next_rate(settings: SearchSettings, objective: Objective, probes: Sequence[Probe]) -> float | None:
    """The rate to probe next (requests/s), or None when the search is over."""
    return _decide(settings, objective, probes)[0]


def outcome(settings: SearchSettings, objective: Objective, probes: Sequence[Probe]) -> Capacity:
    return _decide(settings, objective, probes)[1]


def steady(warmup: Sequence[Probe]) -> bool:
    """The node stopped getting faster: the last warm-up probe's throughput is at most STEADY
    above the one before it, and its JIT compilers took at most JIT_STEADY of its CPU."""
    if len(warmup) < 2 or warmup[-1].achieved > warmup[-2].achieved * (1 + STEADY):
        return False
    return warmup[-1].jit_share is None or warmup[-1].jit_share <= JIT_STEADY


def search(settings: SearchSettings, objective: Objective, measure: Callable[[float | None], Probe],
           affordable: Callable[[], bool] = lambda: True) -> Capacity:
    """Warm-up probes, then probes, each measured by `measure` at the rate asked (None: a warm-up,
    as fast as the clients can), until the search is over, the next probe is not `affordable` (the
    time left), or one fails (ProbeFailed)."""
    warmup: list[Probe] = []
    probes: list[Probe] = []

    def ended(stop: Stop | None = None) -> Capacity:
        found = outcome(settings, objective, probes)
        return dataclasses.replace(found, stop=stop or found.stop, warmup=tuple(warmup),
                                   steady=settings.warmup_probes == 0 or steady(warmup))

    while True:
        warming = len(warmup) < settings.warmup_probes and not steady(warmup)
        rate = None if warming else next_rate(settings, objective, probes)
        if not warming and rate is None:  # the search is over
            return ended()
        if not affordable():
            return ended(Stop.OUT_OF_TIME)
        try:
            (warmup if warming else probes).append(measure(rate))
        except ProbeFailed:
            return ended(Stop.PROBE_FAILED)
