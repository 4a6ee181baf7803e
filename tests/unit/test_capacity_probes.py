"""workload.capacity's probes, pure (runner/capacityprobes.py): how a probe runs, what it measured,
and when the load driver, not the cluster, set its rate. tests/runner/test_bundled_tracks.py runs
a search for real."""

from __future__ import annotations

import dataclasses
import io

import pytest

from esbench.analysis import capacitysearch, steadystate
from esbench.api import models, validation
from esbench.runner import capacityprobes, nodestats, race

CAPACITY = models.Capacity(task="terms-1950s", objective=models.CapacityObjective(metric="latency.p99",
                                                                                 max_milliseconds=200),
                           min_target_throughput=10, max_target_throughput=400, probe_seconds=20, warmup_seconds=5)


def task(service_p50: float = 10.0, achieved: float = 50.0, errors: float = 0.0) -> models.TaskResult:
    return models.TaskResult(
        task="terms-1950s", throughput=models.Throughput(median=achieved, unit="ops/s"),
        latency=models.Percentiles(p50=service_p50 * 2, p90=40.0, p99=90.0, p100=120.0, unit="ms"),
        service_time=models.Percentiles(p50=service_p50, p90=30.0, p99=60.0, unit="ms"), error_rate=errors)


def lag(growth: float, seconds: int = 15) -> steadystate.Series:
    """A probe's requests, ten a second, each `growth` s later behind its schedule than the last second's."""
    starts = [t / 10 for t in range(10 * seconds)]
    return steadystate.Series(seconds=starts, values=[1000 * growth * t for t in starts], unit="ms")


def test_a_probe_races_the_task_alone_at_its_rate_for_its_time():
    spec = models.ExperimentSpec.model_validate({
        "elasticsearch": {"version": "8.19.21"},
        "workload": {"track": "range-queries", "excludeTasks": ["range-1950s"], "capacity": CAPACITY.to_wire()}})
    probe = capacityprobes.probe_spec(spec)
    assert (probe.workload.include_tasks, probe.workload.exclude_tasks) == (["terms-1950s"], None)
    assert spec.workload.exclude_tasks == ["range-1950s"], "the race's own spec is left as it was"
    params = capacityprobes.probe_params({"doc_count": 1000, "target_throughput": 3}, CAPACITY, 42.5)
    assert params == {"doc_count": 1000, "target_throughput": 3, "target_throughputs": {"terms-1950s": 42.5},
                      "search_time_period": 20, "search_warmup_time_period": 5, "search_schedule": "poisson"}
    # A warm-up: no rate for the task, not even workload.load's (search-load.j2 reads None as none).
    assert capacityprobes.probe_params({"target_throughput": 3}, CAPACITY, None)["target_throughputs"] == {
        "terms-1950s": None}


def test_each_race_searches_its_own_lattice_the_one_its_id_says():
    offsets = [capacityprobes.settings(CAPACITY, race_id).dither for race_id in ("r1", "r2", "r3")]
    assert len(set(offsets)) == 3 and all(0 <= offset < 1 for offset in offsets)
    assert capacityprobes.settings(CAPACITY, "r2").dither == offsets[1]
    searched = capacityprobes.settings(CAPACITY, "r1")
    assert (searched.low, searched.high, searched.precision, searched.start) == (
        10, 400, 0.05, pytest.approx(10 * 2 ** offsets[0]))


def driver(throttled: float | None = None, busy: float | None = 0.5, periods: float = 1000) -> nodestats.DriverWindow:
    """The load driver within the probe's window: the share of the window its CPU limit held it back
    (None: no CPU limit), in half of its throttled periods, and the share of its CPU its processes used."""
    return nodestats.DriverWindow(processors=1.0, cpu_share=busy, limit=None if throttled is None else 1.0,
                                  periods=None if throttled is None else periods, throttled_share=throttled,
                                  throttled_periods=None if throttled is None else 2 * throttled * periods)


def test_the_driver_limits_when_its_cpu_limit_throttled_it_its_cpu_was_busy_or_its_clients_cannot_send_faster():
    assert capacityprobes.driver_limit(50, task(), driver(throttled=0.05), clients=4, fastest_ms=None) is None
    assert "held it back for 6% of the probe (throttled in 120 of 1000 periods)" in (
        capacityprobes.driver_limit(50, task(), driver(throttled=0.06), 4, None))
    # Two of 24 periods in a 3 s window, 100 ms held back: over 5 % of the periods, not of the time.
    brief = nodestats.DriverWindow(processors=0.5, cpu_share=0.5, periods=24, throttled_periods=2,
                                   throttled_share=0.1 / 3, limit=0.5)
    assert capacityprobes.driver_limit(50, task(), brief, clients=4, fastest_ms=None) is None
    assert capacityprobes.driver_limit(50, task(), driver(busy=0.89), 4, None) is None
    assert "used 90% of its 1 CPU(s) while it sent" in capacityprobes.driver_limit(50, task(), driver(busy=0.9), 4, None)
    # 4 clients at 10 ms send at most 400 ops/s: 360 is within 90 % of that, 359 is not.
    assert capacityprobes.driver_limit(359, task(), driver(), clients=4, fastest_ms=None) is None
    assert "4 client(s) at a median service time of 10.0 ms send at most 400.0 ops/s" in (
        capacityprobes.driver_limit(360, task(), driver(), clients=4, fastest_ms=None))
    assert capacityprobes.driver_limit(360, task(), None, clients=40, fastest_ms=None) is None
    # Past its capacity the cluster answers slower (26 ms): the bound is from the fastest held probe's.
    slow = task(service_p50=26.4)
    assert "at most 1212.1 ops/s" in capacityprobes.driver_limit(1280, slow, driver(), clients=32, fastest_ms=None)
    assert capacityprobes.driver_limit(1280, slow, driver(), clients=32, fastest_ms=2.7) is None


def test_only_a_failed_probe_asks_whether_the_driver_set_its_rate():
    """A pass despite a throttled driver stands (on CI, a Rally pod at 0.5 CPU throttled in 2 of 24
    periods while it held 4 ops/s); a failure with the driver at its limit is the driver's."""
    objective = capacityprobes.objective(CAPACITY)  # latency.p99 <= 200 ms
    throttled = driver(throttled=0.4)
    held = capacityprobes.measured(4, task(achieved=4.0), lag(0.0))
    assert capacityprobes.judged(objective, held, task(achieved=4.0), throttled, 2, []) == (held, None)
    behind = capacityprobes.measured(400, task(achieved=300.0), lag(0.25))
    probe, why = capacityprobes.judged(objective, behind, task(achieved=300.0), throttled, 32, [])
    assert probe.driver_limited and "held it back for 40% of the probe" in why
    assert capacitysearch.judge(objective, probe) is capacitysearch.Verdict.DRIVER_LIMITED
    probe, why = capacityprobes.judged(objective, behind, task(achieved=300.0), driver(), 32, [])
    assert (probe.driver_limited, why) == (False, None), "the cluster's own failure"


def test_the_fastest_service_time_is_of_the_probes_that_held():
    def record(p50: float, verdict: str) -> models.CapacityProbe:
        return models.CapacityProbe(target_throughput=10, verdict=verdict, seconds=30.0,
                                    service_time=models.Percentiles(p50=p50, unit="ms"))
    assert capacityprobes.fastest_service([record(5.0, "Passed"), record(2.0, "Failed"), record(4.0, "Passed")]) == 4.0
    assert capacityprobes.fastest_service([record(2.0, "DriverLimited")]) is None


def test_a_probes_figures_are_the_tasks_and_its_verdict_follows_the_objective():
    measured = capacityprobes.measured(50, task(errors=0.01), lag(0.0))
    assert measured.percentiles["latency.p99"] == 90.0 and measured.percentiles["service_time.p50"] == 10.0
    assert "service_time.p100" not in measured.percentiles  # not reported: not made up
    assert (measured.achieved, measured.error_rate, measured.driver_limited) == (50.0, 0.01, False)
    objective = capacityprobes.objective(CAPACITY)
    assert capacitysearch.judge(objective, measured) is capacitysearch.Verdict.FAILED  # errors above 0
    assert capacitysearch.judge(objective, capacityprobes.measured(50, task(), lag(0.0))) is capacitysearch.Verdict.PASSED
    # Held is the lag's growth, not Rally's throughput: 47 ops/s read at 50 held, 50 read with 6 % more lag a second not.
    assert capacitysearch.judge(objective, capacityprobes.measured(50, task(achieved=47.0), lag(0.0))) is (
        capacitysearch.Verdict.PASSED)
    late = capacityprobes.measured(50, task(), lag(0.06))
    assert late.lag_growth == pytest.approx(0.06) and capacitysearch.judge(objective, late) is (
        capacitysearch.Verdict.FAILED)
    record = capacityprobes.probe_record(late, task(), capacitysearch.Verdict.FAILED, None, 20.0)
    assert record.lag_growth_percent == 6.0 and record.throughput == 50.0
    assert late.jit_share is None and record.jit_share_percent is None  # the JIT's CPU known locally only
    assert record.disk_read_bytes_per_second is None  # no figures of the nodes: none made up
    compiling = task()
    compiling.resources = models.TaskResources(seconds=20.0, nodes=1, process_cpu_ms=6000.0, jit_cpu_ms=2340.0,
                                               io_read_bytes=50 * 2**20)
    warming = capacityprobes.measured(None, compiling, None)
    assert warming.jit_share == pytest.approx(0.39)
    warmed = capacityprobes.probe_record(warming, compiling, None, None, 20.0)
    assert (warmed.jit_share_percent, warmed.disk_read_bytes_per_second) == (39.0, 2.5 * 2**20)
    # A warm-up is not judged; a probe at a rate whose lag was not kept cannot be.
    assert capacityprobes.measured(None, task(), None).lag_growth == 0.0
    with pytest.raises(capacitysearch.ProbeFailed, match="too few requests kept from the probe at 50 ops/s"):
        capacityprobes.measured(50, task(), None)
    with pytest.raises(capacitysearch.ProbeFailed):
        capacityprobes.measured(50, task(), lag(0.0, seconds=0))


def test_the_answer_says_what_held_what_failed_and_why_the_search_stopped():
    probes = (capacitysearch.Probe(100, 100, {"latency.p99": 50}, 0, False, 0.0),)
    found = capacitysearch.Capacity(capacity=100.0, upper=110.0, confirmations=1, stop=capacitysearch.Stop.CONVERGED,
                                    probes=probes)
    answer = capacityprobes.result(CAPACITY, found, [], [], 300.0, None)
    assert (answer.capacity, answer.upper, answer.stop, answer.objective) == (
        100.0, 110.0, "Converged", "latency.p99 <= 200 ms, errors <= 0.00%")
    assert answer.message == "100 ops/s held, 110 ops/s failed (1 probes): the bracket is within the precision"
    failed = capacitysearch.Capacity(capacity=None, upper=None, confirmations=0,
                                     stop=capacitysearch.Stop.PROBE_FAILED, probes=())
    assert capacityprobes.result(CAPACITY, failed, [], [], 1.0, "esrally exited with 64").message == (
        "no rate held (0 probes): a probe failed: esrally exited with 64")
    cold = dataclasses.replace(found, warmup=probes * 6, steady=False)
    record = models.CapacityProbe(target_throughput=10, verdict=None, seconds=30.0)
    answer = capacityprobes.result(CAPACITY, cold, [], [record] * 6, 300.0, None)
    assert (answer.steady, len(answer.warmup)) == (False, 6)
    assert answer.message.endswith("; the node was still getting faster after 6 warm-up probes (or its JIT still compiling): "
                                        "raise warmupProbes")


@pytest.mark.parametrize(("change", "refusal"), [
    ({"maxTargetThroughput": 10}, "an empty range has no rate to search"),
    ({"objective": {"metric": "latency.p95", "maxMilliseconds": 1}}, 'Unsupported value: "latency.p95"'),
    ({"maxProbes": 40, "probeSeconds": 300}, "more than lifecycle.raceTimeoutSeconds"),
    ({"probeSeconds": 19}, "Rally reports p50 from 2, p90 from 10, p99 from 100 requests on, and a probe needs 2 "
                           "times that"),  # 10 x 19 = 190
    ({"track": "indexing"}, "workload.capacity drives a search task of the bundled tracks"),
    ({"includeTasks": ["index-append"]}, "must be a task the race runs"),
    ({"excludeTasks": ["terms-1950s"]}, "must be a task the race runs"),
])
def test_admission_refuses_a_search_that_cannot_be_made(change, refusal):
    capacity = CAPACITY.to_wire()
    workload = {"track": "range-queries", "capacity": capacity}
    for field in ("track", "includeTasks", "excludeTasks"):
        if field in change:
            workload[field] = change.pop(field)
    capacity.update(change)
    experiment = {"apiVersion": models.API_VERSION, "kind": models.KIND, "metadata": {"name": "capacity"},
                  "spec": {"elasticsearch": {"version": "8.19.21"}, "workload": workload}}
    with pytest.raises(validation.Rejected) as rejected:
        validation.admit(experiment)
    assert any(refusal in error for error in rejected.value.errors), rejected.value.errors
    workload.pop("includeTasks", None), workload.pop("excludeTasks", None)
    workload.update(track="range-queries", capacity=CAPACITY.to_wire())
    assert validation.admit(experiment)["spec"]["workload"]["capacity"]["maxProbes"] == 12


def test_a_probe_is_another_race_on_the_same_target_and_budget_without_the_idle_lead_or_a_profiler(tmp_path):
    """A probe's figures are not net of the idle rate: the 5 s the race waits before esrally, to
    measure it, would only lengthen each probe."""
    spec = models.ExperimentSpec.model_validate(
        {"elasticsearch": {"version": "8.19.21"},
         "workload": {"track": "range-queries", "capacity": CAPACITY.to_wire()}})
    settings = race.RaceSettings(spec=spec, target_url="http://127.0.0.1:9200", race_id="the-race",
                                 work_dir=tmp_path, password="secret", profiler=object())
    main = race.Race(settings, io.StringIO())
    probe = main.probe(capacityprobes.probe_spec(spec))
    assert main.settings.idle_lead == race.IDLE_LEAD_SECONDS > 0
    assert (probe.settings.idle_lead, probe.settings.profiler, probe.deadline) == (0, None, main.deadline)
    assert probe.settings.race_id != "the-race" and probe.work_dir == main.work_dir
    assert probe.settings.password == "secret" and probe.spec.workload.include_tasks == ["terms-1950s"]
