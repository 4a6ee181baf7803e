"""A schedule's watch for regressions (controller.regressionwatch) on series with a known step, run
by run as a schedule would see them: steady, then suspected after the first bad run (a confirming
run is asked for, once), then confirmed by the next and reported once; and the metrics endpoint's
gauges that follow. Otava is real (its own virtualenv)."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import REGISTRY

from esbench.analysis import changepoints
from esbench.controller import metrics
from esbench.controller.regressionwatch import check, condition, newly_confirmed, to_confirm
from esbench.history.records import SeriesPoint
from esbench.planning import names

STEADY, WORSE = 10.0, 13.0  # ms of service time; a run made 30 % costlier from run 12 on


@pytest.fixture(scope="module")
def otava():
    try:
        return changepoints.otava_python()
    except changepoints.OtavaMissing as error:
        pytest.fail(f"{error} (make deps installs it)", pytrace=False)


CONFIGURATION = "c0ffee"


def history(values: list[float], throughputs: list[float] | None = None
            ) -> dict[tuple[str, str, str], list[SeriesPoint]]:
    """The store's series of one task of a schedule of Experiments: run n is nightly-n."""
    def points(figures: list[float], unit: str) -> list[SeriesPoint]:
        return [SeriesPoint(f"race-{n}", f"2026-11-{n + 1:02d}T02:00:00Z", f"nightly-{n}", value, unit)
                for n, value in enumerate(figures)]
    series = {(CONFIGURATION, "term", "service_time.p50"): points(values, "ms")}
    if throughputs:
        series[CONFIGURATION, "term", "throughput.median"] = points(throughputs, "ops/s")
    return series


def noisy(level: float, n: int, seed: int) -> list[float]:
    return list(level * np.random.default_rng(seed).lognormal(0.0, 0.03, n))


def run_check(otava, values: list[float], before: dict | None = None, run: str | None = None, **more) -> dict:
    run = run or f"nightly-{len(values) - 1}"
    return check(run, f"2026-11-{len(values):02d}T02:00:00Z", {CONFIGURATION: None}, history(values, **more), otava,
                 before)


def test_a_steady_series_raises_nothing(otava):
    steady = run_check(otava, noisy(STEADY, 14, 1), throughputs=noisy(50.0, 14, 2))
    assert (steady["series"], steady["races"], steady.get("regressions")) == (2, 14, None)
    assert to_confirm(steady) is None
    assert condition(steady)[1:3] == (False, "NoRegression")


def test_a_step_is_suspected_after_one_run_confirmed_after_the_next_and_reported_once(otava):
    before_step = noisy(STEADY, 12, 3)
    suspected = run_check(otava, [*before_step, WORSE])
    (regression,) = suspected["regressions"]
    assert (regression["state"], regression["firstRun"], regression["task"]) == ("Suspected", "nightly-12", "term")
    assert regression["changePercent"] == pytest.approx(30, abs=5) and regression["pvalue"] < changepoints.MAX_PVALUE
    assert to_confirm(suspected) == "nightly-12"
    assert condition(suspected)[1:3] == (False, "RegressionSuspected")
    assert newly_confirmed(suspected, None) == []

    asked = {**suspected, "confirmingRun": names.confirming_run_name("nightly-12")}
    assert to_confirm(asked) is None  # one confirming run per suspicion
    confirmed = run_check(otava, [*before_step, WORSE, WORSE * 1.01], asked, run="nightly-12c")
    (regression,) = confirmed["regressions"]
    assert (regression["state"], regression["firstRun"]) == ("Confirmed", "nightly-12")
    assert confirmed["confirmingRun"] == "nightly-12c"
    assert condition(confirmed)[1:3] == (True, "RegressionConfirmed")
    assert "term service_time.p50 +3" in condition(confirmed)[3]
    assert [r["firstRun"] for r in newly_confirmed(confirmed, asked)] == ["nightly-12"]
    later = run_check(otava, [*before_step, WORSE, WORSE * 1.01, WORSE], confirmed)
    assert newly_confirmed(later, confirmed) == []  # still there, reported before


def test_a_lone_bad_run_undone_by_its_confirming_run_is_no_regression(otava):
    values = noisy(STEADY, 12, 4)
    suspected = run_check(otava, [*values, WORSE])
    assert to_confirm(suspected) == "nightly-12"
    undone = run_check(otava, [*values, WORSE, STEADY], {**suspected, "confirmingRun": "nightly-12c"}, run="nightly-12c")
    assert undone.get("regressions") is None and condition(undone)[2] == "NoRegression"


def test_a_confirming_run_that_is_itself_suspect_makes_no_other(otava):
    values = noisy(STEADY, 13, 5)
    suspect = run_check(otava, [*values, WORSE], run="nightly-12c")
    assert suspect["regressions"][0]["state"] == "Suspected"
    assert to_confirm(suspect) is None


def sweeps(nights: list[dict[str, list[float]]]) -> dict[tuple[str, str, str], list[SeriesPoint]]:
    """The store's series of a schedule of sweeps: night n is the sweep nightly-n, each cell's
    repetitions a race each (its configuration is the cell's name here)."""
    series: dict[tuple[str, str, str], list[SeriesPoint]] = {}
    for n, cells in enumerate(nights):
        for cell, values in cells.items():
            series.setdefault((cell, "term", "service_time.p50"), []).extend(
                SeriesPoint(f"race-{n}-{cell}-{r}", f"2026-11-{n + 1:02d}T02:{r:02d}:00Z", f"nightly-{n}-{cell}-r{r}",
                            value, "ms", f"perf/nightly-{n}") for r, value in enumerate(values, start=1))
    return series


def test_a_sweeps_night_is_one_point_of_each_cells_series_so_its_own_repetitions_do_not_confirm_it(otava):
    """Tonight every repetition of cell c1 is 30 % slower: suspected (one night), not confirmed by its
    own five repetitions, which share a cluster and a night; the confirming sweep confirms it."""
    rng = np.random.default_rng(10)
    nights = [{"c0": noisy(STEADY, 5, int(rng.integers(1000))), "c1": noisy(STEADY, 5, int(rng.integers(1000)))}
              for _ in range(12)]
    tonight = {"c0": noisy(STEADY, 5, 11), "c1": noisy(WORSE, 5, 12)}
    cells = {"c0": "c0", "c1": "c1"}
    suspected = check("nightly-12", "2026-11-13T02:00:00Z", cells, sweeps([*nights, tonight]), otava, None)
    assert (suspected["races"], suspected["series"], suspected["configurations"]) == (130, 2, ["c0", "c1"])
    (regression,) = suspected["regressions"]
    assert (regression["state"], regression["cell"], regression["firstRun"]) == ("Suspected", "c1", "nightly-12")
    assert to_confirm(suspected) == "nightly-12"
    assert condition(suspected)[3].startswith("cell c1: term service_time.p50 +3")

    again = {"c0": noisy(STEADY, 5, 13), "c1": noisy(WORSE, 5, 14)}
    confirmed = check("nightly-12c", "2026-11-13T04:00:00Z", cells, sweeps([*nights, tonight, again]), otava,
                      {**suspected, "confirmingRun": "nightly-12c"})
    (regression,) = confirmed["regressions"]
    assert (regression["state"], regression["cell"], regression["firstRun"]) == ("Confirmed", "c1", "nightly-12")
    assert condition(confirmed)[1:3] == (True, "RegressionConfirmed")


def test_faster_service_and_more_throughput_are_no_regression(otava):
    better = run_check(otava, [*noisy(STEADY, 12, 6), 7.0, 7.1], throughputs=[*noisy(50.0, 12, 7), 70.0, 71.0])
    assert better.get("regressions") is None


def test_the_gauges_follow_the_latest_check(otava):
    def gauge() -> dict:
        return {tuple(s.labels[k] for k in ("schedule", "task", "metric")): s.value
                for family in REGISTRY.collect() if family.name == "esbench_regression_state" for s in family.samples}

    suspected = run_check(otava, [*noisy(STEADY, 12, 8), WORSE])
    metrics.show("ns", "nightly", suspected)
    assert gauge() == {("nightly", "term", "service_time.p50"): 1.0}
    confirmed = run_check(otava, [*noisy(STEADY, 12, 8), WORSE, WORSE], suspected)
    metrics.show("ns", "nightly", confirmed)
    assert gauge() == {("nightly", "term", "service_time.p50"): 2.0}
    metrics.show("ns", "nightly", run_check(otava, noisy(STEADY, 14, 9)))
    assert gauge() == {}
    metrics.show("ns", "nightly", confirmed)
    metrics.show("ns", "nightly", None)  # deleted
    assert gauge() == {}
