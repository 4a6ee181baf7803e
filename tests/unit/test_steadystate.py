"""A task's steady state (analysis/steadystate.py) found in simulated series of service times whose
warm-up is known: an exponential decay of the excess over the steady level, log-normal noise, one
request in a hundred a wild value (3 to 20 times its level, a GC pause), and a slow drift."""

from __future__ import annotations

import gzip
import json
import math

import numpy as np
import pytest
from rich.console import Console

from esbench.analysis import compare, steadystate
from esbench.api import models
from esbench.cli import rendering
from esbench.runner import requestsamples

SERIES = 400  # per case: a share of 95 % is then measured within about +-1 point
REQUESTS = 2000
TAU = 100  # requests for the excess to fall by e


def simulated(rng: np.random.Generator, *, excess: float = 1.0, tau: float = TAU, noise: float = 0.15,
              drift: float = 0.03, wild: float = 0.01, n: int = REQUESTS) -> np.ndarray:
    position = np.arange(n)
    level = 10.0 * (1 + excess * np.exp(-position / tau)) * (1 + drift * position / n)
    values = level * rng.lognormal(0.0, noise, n)
    outliers = rng.random(n) < wild
    values[outliers] *= rng.uniform(3, 20, outliers.sum())
    return values


@pytest.mark.parametrize("noise", [0.05, 0.15, 0.3])
def test_the_steady_state_begins_where_the_warm_up_falls_below_the_noise(noise):
    """The true start: where the excess has fallen to the noise of one request (excess * e^(-i/tau)
    = noise); found within 1.5 tau of it in at least 95 % of the series."""
    true_start = TAU * math.log(1.0 / noise)
    found = [steadystate.truncate(simulated(np.random.default_rng(seed), noise=noise)).start for seed in range(SERIES)]
    within = [start is not None and abs(start - true_start) <= 1.5 * TAU for start in found]
    assert sum(within) / SERIES >= 0.95, sorted(s for s in found if s is not None)[:: SERIES // 20]


def test_a_series_steady_from_its_start_keeps_nearly_all_of_it():
    """No warm-up: the start within the first 5 % of the requests in at least 95 % of the series."""
    found = [steadystate.truncate(simulated(np.random.default_rng(seed), excess=0.0)).start for seed in range(SERIES)]
    assert sum(start is not None and start <= 0.05 * REQUESTS for start in found) / SERIES >= 0.95


def test_a_series_that_trends_throughout_has_no_steady_state():
    """Service times that double over the task: never steady, in every series."""
    found = [steadystate.truncate(simulated(np.random.default_rng(seed), excess=0.0, drift=1.0))
             for seed in range(SERIES // 4)]
    assert all(t.start is None for t in found)
    assert "still trends" in found[0].problem


def test_a_warm_up_longer_than_half_the_task_has_no_steady_state():
    found = steadystate.truncate(simulated(np.random.default_rng(1), excess=3.0, tau=REQUESTS / 2, drift=0.0))
    assert found.start is None and found.problem


def test_a_task_of_few_requests_is_too_short_to_tell():
    found = steadystate.truncate([5.0] * 12)
    assert found.start is None and "12 requests: too few" in found.problem


def test_the_steady_figures_come_from_the_requests_kept_only():
    values = simulated(np.random.default_rng(7))
    seconds = np.arange(REQUESTS) * 0.01
    rates = steadystate.Series(seconds=list(np.arange(0, 20, 1.0)), values=[1.0] * 5 + [3.0] * 15, unit="ops/s")
    state = steadystate.summarize(steadystate.Series(list(seconds), list(values), "ms"), rates)
    assert state.reached and state.samples == REQUESTS and state.kept == REQUESTS - state.start_sample
    assert state.start_seconds == pytest.approx(seconds[state.start_sample])
    kept = values[state.start_sample:]
    assert state.service_time.p50 == pytest.approx(float(np.median(kept)))
    assert state.service_time.p99 == pytest.approx(float(np.percentile(kept, 99)))
    assert state.service_time.p50 < float(np.median(values[: state.start_sample]))  # the warm-up left out
    expected = [v for s, v in zip(rates.seconds, rates.values, strict=True) if s >= state.start_seconds]
    assert state.throughput.mean == pytest.approx(np.mean(expected)) and state.throughput.unit == "ops/s"


def test_no_steady_state_gives_no_figures_but_says_why():
    state = steadystate.summarize(steadystate.Series([0.0, 1.0], [1.0, 2.0], "ms"))
    assert not state.reached and state.service_time is None and state.samples == 2 and state.problem


def test_the_steady_figures_are_metrics_of_the_run():
    task = models.TaskResult(task="search", steady_state=models.SteadyState(
        reached=True, samples=100, start_sample=10, start_seconds=1.5, kept=90,
        service_time=models.Percentiles(p50=2.0, p90=3.0, p99=4.0, unit="ms"),
        throughput=models.SteadyThroughput(mean=50.0, unit="ops/s")))
    found = {m.metric.key: (m.value, m.unit) for m in compare.measurements(models.Results(tasks=[task]))}
    assert found["steady.service_time.p50"] == (2.0, "ms") and found["steady.service_time.p99"] == (4.0, "ms")
    assert found["steady.throughput.mean"] == (50.0, "ops/s")


def test_each_task_of_the_race_gets_its_steady_state_from_the_samples_file(tmp_path):
    rng = np.random.default_rng(3)
    values = simulated(rng, n=500)
    order = rng.permutation(500)  # two clients' requests arrive out of time order
    tasks = {"search": {"service_time": {"unit": "ms", "seconds": list(np.arange(500.0)[order] / 10),
                                         "values": list(values[order])}}}
    path = tmp_path / requestsamples.FILE
    with gzip.open(path, "wt") as file:
        json.dump({"tasks": tasks}, file)
    summary = models.Results(tasks=[models.TaskResult(task="search"), models.TaskResult(task="create-index")])
    problem = requestsamples.attach_steady_states(summary, path)
    search, create = (t.steady_state for t in summary.tasks)
    assert search.reached and search.samples == 500 and 0 <= search.start_seconds < 50
    assert not create.reached and create.samples == 0 and "create-index" in problem
    assert steadystate.warnings(summary) == ["create-index: no steady state: no measured requests among the samples"]


def test_a_race_without_its_samples_file_says_so_per_task(tmp_path):
    summary = models.Results(tasks=[models.TaskResult(task="search")])
    assert "no request samples from esrally" in requestsamples.attach_steady_states(summary, tmp_path / requestsamples.FILE)
    (tmp_path / requestsamples.FILE).write_bytes(b"not gzip")
    assert "cannot be read" in requestsamples.attach_steady_states(summary, tmp_path / requestsamples.FILE)
    assert not summary.tasks[0].steady_state.reached and "cannot be read" in summary.tasks[0].steady_state.problem
    assert "search: no steady state: the request samples" in steadystate.warnings(summary)[0]


def test_show_says_when_each_task_settled_and_warns_for_one_that_never_did():
    settled = models.TaskResult(task="search", steady_state=models.SteadyState(
        reached=True, samples=600, start_sample=150, start_seconds=12.5, kept=450,
        service_time=models.Percentiles(p50=2.0, p90=3.0, p99=4.0, unit="ms")))
    drifting = models.TaskResult(task="scroll", steady_state=models.SteadyState(
        reached=False, samples=900, problem="the part kept still trends: +40% from its start to its end"))
    short = models.TaskResult(task="create-index", steady_state=models.SteadyState(
        reached=False, samples=1, problem="1 requests: too few to tell (at least 50)"))
    document = {"status": {"phase": "Succeeded", "reason": "RaceSucceeded", "message": "done",
                           "results": models.Results(tasks=[settled, drifting, short]).to_wire()}}
    console = Console(width=200, record=True)
    rendering.print_document_summary(console, document)
    text = console.export_text()
    assert "12.5 s" in text and "450 of 600" in text
    assert "warning: scroll: no steady state: the part kept still trends: +40%" in text
    assert "create-index: no steady state" not in text


def test_a_comparison_of_many_runs_warns_once_per_task_that_never_settled():
    def run(label: str, reached: bool) -> compare.Entry:
        state = models.SteadyState(reached=reached, samples=600, problem=None if reached else "still trends")
        return compare.Entry(label, models.Results(tasks=[models.TaskResult(task="search", steady_state=state)]))

    entries = [run("a", False), run("b", True), run("c", False)]
    assert compare.measurement_warnings(entries) == ["search: no steady state in 2 of 3 runs (a, c); esbench show says why"]
    assert compare.measurement_warnings(entries[:1]) == ["a: search: no steady state: still trends"]
