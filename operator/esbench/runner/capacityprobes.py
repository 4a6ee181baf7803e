"""workload.capacity's probes, pure: how a probe runs (the task alone at a rate, on the index the
race left), what it measured, whether the load driver rather than the cluster set its rate, and
the search's answer as results.capacity. race.py runs the probes; analysis.capacitysearch
chooses their rates.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from esbench.analysis import capacitysearch, steadystate
from esbench.api import models
from esbench.runner import nodestats

# The share of the probe's time the driver's CPU limit held it back: beyond it, its requests may be
# as late as a probe may fall short of its rate (capacitysearch.SHORTFALL).
THROTTLED_SHARE = capacitysearch.SHORTFALL
# The clients send at most clients / service time; a rate this close to that bound is theirs.
CLIENT_BOUND_SHARE = 0.9
# The share of its CPUs the load driver's processes may use while sending before it falls behind.
BUSY_SHARE = 0.9


def settings(capacity: models.Capacity, race_id: str) -> capacitysearch.SearchSettings:
    """The search's settings; its lattice's offset drawn from the race's id: a search of its own
    lattice in every race, and the one the race's recorded id says."""
    return capacitysearch.SearchSettings(
        low=capacity.min_target_throughput, high=capacity.max_target_throughput,
        precision=capacity.precision_percent / 100, max_probes=capacity.max_probes,
        confirmations=capacity.confirmations, warmup_probes=capacity.warmup_probes,
        dither=random.Random(race_id).random())


def objective(capacity: models.Capacity) -> capacitysearch.Objective:
    wanted = capacity.objective
    return capacitysearch.Objective(wanted.metric, wanted.max_milliseconds, wanted.max_error_rate)


def describe(capacity: models.Capacity) -> str:
    wanted = capacity.objective
    return f"{wanted.metric} <= {wanted.max_milliseconds:g} ms, errors <= {wanted.max_error_rate:.2%}"


def probe_spec(spec: models.ExperimentSpec) -> models.ExperimentSpec:
    """The race's spec for a probe: the searched task alone (Rally's --include-tasks), so the index
    the race built is searched as it is, not made again."""
    assert spec.workload.capacity is not None
    workload = spec.workload.model_copy(update={"include_tasks": [spec.workload.capacity.task], "exclude_tasks": None})
    return spec.model_copy(update={"workload": workload})


def probe_params(params: dict[str, Any], capacity: models.Capacity, rate: float | None) -> dict[str, Any]:
    """The track params of a probe at `rate` (ops/s; None: a warm-up, as fast as the clients can, even
    where workload.load sets a rate): the bundled tracks' search-load.j2 reads them. Its requests
    arrive as independent users' would (Rally's poisson schedule), whatever workload.load's schedule:
    on the deterministic one the clients send together, and a probe would find the rate at which
    bursts of `clients` requests keep the objective."""
    return {**params, "target_throughputs": {capacity.task: rate}, "search_time_period": capacity.probe_seconds,
            "search_warmup_time_period": capacity.warmup_seconds, "search_schedule": "poisson"}


def driver_limit(rate: float, task: models.TaskResult, driver: nodestats.DriverWindow | None, clients: int,
                 fastest_ms: float | None) -> str | None:
    """Why the load driver, not the cluster, set this probe's rate; None when it did not.

    The clients' bound takes the fastest median service time a held probe saw: a cluster past its
    capacity answers slower, which would otherwise pass its own limit off as the clients'."""
    if driver and driver.throttled_share is not None and driver.throttled_share > THROTTLED_SHARE:
        return (f"the load driver's CPU limit ({driver.limit:g} CPUs) held it back for {driver.throttled_share:.0%} "
                f"of the probe (throttled in {driver.throttled_periods or 0:.0f} of {driver.periods or 0:.0f} periods)")
    if driver and driver.cpu_share is not None and driver.cpu_share >= BUSY_SHARE:
        return (f"the load driver's processes used {driver.cpu_share:.0%} of its {driver.processors:g} CPU(s) while "
                "it sent: give it more CPU")
    service_ms = min(filter(None, (task.service_time.p50 if task.service_time else None, fastest_ms)), default=None)
    if service_ms:
        # Each client waits for its answer before it sends again (Little's law).
        bound = clients * 1000 / service_ms
        if rate >= CLIENT_BOUND_SHARE * bound:
            return (f"{clients} client(s) at a median service time of {service_ms:.1f} ms send at most "
                    f"{bound:.1f} ops/s: raise workload.load.clients")
    return None


def judged(objective: capacitysearch.Objective, probe: capacitysearch.Probe, task: models.TaskResult,
           driver: nodestats.DriverWindow | None, clients: int, records: list[models.CapacityProbe],
           ) -> tuple[capacitysearch.Probe, str | None]:
    """The probe, marked driver-limited where the driver set its rate, and why. Only a failure is
    asked: a driver held back can only make a probe look worse, so a pass despite it stands."""
    if probe.offered is None or capacitysearch.judge(objective, probe) is not capacitysearch.Verdict.FAILED:
        return probe, None
    why = driver_limit(probe.offered, task, driver, clients, fastest_service(records))
    return dataclasses.replace(probe, driver_limited=why is not None), why


def fastest_service(records: list[models.CapacityProbe]) -> float | None:
    """The fastest median service time (ms) of the probes that held so far."""
    return min((p.service_time.p50 for p in records if p.verdict == capacitysearch.Verdict.PASSED and p.service_time
                and p.service_time.p50), default=None)


def measured(rate: float | None, task: models.TaskResult, lag: steadystate.Series | None) -> capacitysearch.Probe:
    """The task's figures as the search reads them, with how fast its requests fell behind their
    schedule (`lag`: each one's, in ms; None: none kept); `judged` marks a probe the driver limited.
    Raises ProbeFailed for a probe at a rate whose lag cannot be told: it would pass unjudged."""
    percentiles = {f"{kind}.{name}": value for kind, figures in (("latency", task.latency),
                                                                   ("service_time", task.service_time))
                   if figures for name, value in figures.model_dump(exclude={"unit"}).items() if value is not None}
    achieved = task.throughput.median if task.throughput and task.throughput.median is not None else 0.0
    growth = capacitysearch.lag_growth(lag.seconds, lag.values) if lag else None
    if rate is not None and growth is None:
        raise capacitysearch.ProbeFailed(f"too few requests kept from the probe at {rate:.4g} ops/s to tell whether "
                                         "it held the rate")
    return capacitysearch.Probe(offered=rate, achieved=achieved, percentiles=percentiles,
                                error_rate=task.error_rate or 0.0, driver_limited=False, lag_growth=growth or 0.0,
                                jit_share=jit_share(task.resources))


def probe_record(probe: capacitysearch.Probe, task: models.TaskResult, verdict: capacitysearch.Verdict | None,
                 driver: str | None, seconds: float) -> models.CapacityProbe:
    """A probe's figures, with its verdict; a warm-up has neither a verdict nor a target throughput."""
    resources = task.resources
    return models.CapacityProbe(
        target_throughput=probe.offered, throughput=probe.achieved,
        lag_growth_percent=round(100 * probe.lag_growth, 2) if probe.offered is not None else None, latency=task.latency,
        service_time=task.service_time, error_rate=task.error_rate,
        node_cpu_percent=resources.process_cpu_percent if resources else None,
        jit_share_percent=None if probe.jit_share is None else round(100 * probe.jit_share, 1),
        disk_read_bytes_per_second=disk_read_rate(resources),
        verdict=verdict.value if verdict else None,
        driver=driver, seconds=round(seconds, 1))


def disk_read_rate(resources: models.TaskResources | None) -> float | None:
    """Bytes a second the nodes' data disks read over the probe (none where Elasticsearch reports no I/O)."""
    if resources is None or resources.io_read_bytes is None or not resources.seconds:
        return None
    return round(resources.io_read_bytes / resources.seconds)


def jit_share(resources: models.TaskResources | None) -> float | None:
    """The share of the nodes' CPU time over the probe their JIT compilers took (local mode only)."""
    if resources is None or resources.jit_cpu_ms is None or not resources.process_cpu_ms:
        return None
    return resources.jit_cpu_ms / resources.process_cpu_ms


def result(capacity: models.Capacity, found: capacitysearch.Capacity, records: list[models.CapacityProbe],
           warmup: list[models.CapacityProbe], seconds: float, problem: str | None) -> models.CapacityResult:
    return models.CapacityResult(
        task=capacity.task, objective=describe(capacity), metric=capacity.objective.metric,
        max_milliseconds=capacity.objective.max_milliseconds, capacity=found.capacity, upper=found.upper,
        confirmations=found.confirmations, stop=found.stop.value if found.stop else "",
        message=message(found, problem), seconds=round(seconds, 1), probes=records, warmup=warmup,
        steady=found.steady)


def message(found: capacitysearch.Capacity, problem: str | None) -> str:
    Stop = capacitysearch.Stop
    held = f"{found.capacity:.4g} ops/s held" if found.capacity is not None else "no rate held"
    bound = f", {found.upper:.4g} ops/s failed" if found.upper is not None else ""
    why = {
        Stop.CONVERGED: "the bracket is within the precision",
        Stop.BUDGET_SPENT: "maxProbes probes made before the bracket narrowed to the precision",
        Stop.BELOW_RANGE: "the lowest rate of the range already fails",
        Stop.ABOVE_RANGE: "the highest rate of the range holds: the capacity is at least that",
        Stop.DRIVER_LIMITED: "the load driver could not send faster: the capacity is at least the rate held",
        Stop.OUT_OF_TIME: "the next probe would not end within lifecycle.raceTimeoutSeconds",
        Stop.PROBE_FAILED: "a probe failed",
    }[found.stop] if found.stop else "the search did not end"
    cold = ("" if found.steady else
            f"; the node was still getting faster after {len(found.warmup)} warm-up probes (or its JIT still "
            "compiling): raise warmupProbes")
    return f"{held}{bound} ({len(found.probes)} probes): {why}" + (f": {problem}" if problem else "") + cold
