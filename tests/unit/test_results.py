"""race.json -> models.Results, on real race.json files (tests/fixtures/race/README.md says how
each was produced)."""

import json
from pathlib import Path

import pytest

from esbench.api import models
from esbench.runner import environment, race, results, taskwindows

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "race"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


@pytest.mark.parametrize("name, version", [
    ("7.17.29-smoke-success.json", "7.17.29"),
    ("8.7.1-smoke-success.json", "8.7.1"),
])
def test_a_successful_race_is_summarized_with_numbers_exactly_as_rally_reports_them(name, version):
    race = load(name)
    summary = results.summarize(race)

    assert summary.race_id == race["race-id"]
    assert (summary.track, summary.challenge) == ("smoke", "index-and-search")
    assert summary.rally_version == "2.13.0" and summary.distribution_version == version
    assert [t.task for t in summary.tasks] == [op["task"] for op in race["results"]["op_metrics"]]
    for task, op in zip(summary.tasks, race["results"]["op_metrics"], strict=True):
        assert task.operation == op["operation"]
        assert task.throughput == models.Throughput(median=op["throughput"]["median"], unit=op["throughput"]["unit"])
        for ours, theirs in ((task.latency, op["latency"]), (task.service_time, op["service_time"])):
            assert ours.unit == theirs["unit"] == "ms"
            assert (ours.p50, ours.p90, ours.p99, ours.p100) == tuple(
                theirs.get(k) for k in ("50_0", "90_0", "99_0", "100_0"))
        assert task.error_rate == op["error_rate"] == 0
        assert task.duration == op["duration"]

    flat = race["results"]
    assert summary.cluster == models.ClusterResult(
        indexing_time_ms=flat["total_time"], merge_time_ms=flat["merge_time"], refresh_time_ms=flat["refresh_time"],
        flush_time_ms=flat["flush_time"], young_gc_time_ms=flat["young_gc_time"], old_gc_time_ms=flat["old_gc_time"],
        store_size_bytes=flat["store_size"], translog_size_bytes=flat["translog_size"],
        segment_count=flat["segment_count"])
    assert summary.cluster.store_size_bytes > 0 and summary.cluster.segment_count >= 1
    assert results.max_error_rate(summary) == 0


def test_search_tasks_of_a_full_race_have_p90_and_p100():
    tasks = {t.task: t for t in results.summarize(load("8.7.1-smoke-success.json")).tasks}
    latency = tasks["match-all"].latency
    assert latency.p50 <= latency.p90 <= latency.p100
    assert latency.p99 is None  # 50 iterations: Rally reports no 99th percentile
    assert tasks["index-append"].latency.p90 is None  # two bulk requests: only p50 and p100


def test_a_race_with_failing_requests_keeps_their_error_rate():
    summary = results.summarize(load("8.7.1-codec-search-errors.json"))
    rates = {t.task: t.error_rate for t in summary.tasks}
    assert rates["fetch-500-newest"] == 1.0
    assert rates["index-append"] == 0.0
    assert results.max_error_rate(summary) == 1.0
    assert summary.track_params["fetch_size"] == 20000
    failing = next(t for t in summary.tasks if t.task == "fetch-500-newest")
    assert failing.throughput is None or failing.throughput.median is None  # nothing succeeded to time


def test_an_aborted_race_has_provenance_but_no_results():
    summary = results.summarize(load("8.7.1-codec-search-aborted.json"))
    assert summary.race_id == "8.7.1-codec-search-aborted" and summary.track == "codec-search"
    assert summary.tasks == [] and summary.cluster is None


def test_figures_rally_could_not_collect_are_left_out():
    race = {"race-id": "r", "results": {"op_metrics": [], "store_size": None, "young_gc_time": [], "segment_count": 3}}
    assert results.summarize(race).cluster == models.ClusterResult(segment_count=3)


def test_the_summary_is_valid_status_material():
    summary = results.summarize(load("8.7.1-smoke-success.json"))
    assert models.Results.model_validate(summary.to_wire()) == summary


def test_each_task_gets_its_window_from_rallys_log_and_what_the_nodes_spent_in_it():
    """The fixed-rate fixture (race.json, rally.log, node-stats.json of one real race)."""
    folder = FIXTURES / "8.7.1-range-queries-fixed-rate"
    summary = results.summarize(json.loads((folder / "race.json").read_text()))
    windows = taskwindows.parse((folder / "rally.log").read_text())
    processors = environment.processors(json.loads((folder / "nodes-info.json").read_text()))
    race.attribute_to_tasks(summary, windows, json.loads((folder / "node-stats.json").read_text()), processors)
    tasks = {t.task: t for t in summary.tasks}
    assert tasks["range-1950s"].start == "2026-11-23T01:04:35.211Z" and tasks["range-1950s"].end == "2026-11-23T01:04:45.224Z"
    assert all(t.resources and t.resources.nodes == 1 and t.resources.process_cpu_ms > 0 for t in summary.tasks)
    # Rally held the fixed rates: 5 and 50 ops/s asked, the median within 2 %.
    assert tasks["range-1950s"].throughput.median == pytest.approx(5, rel=0.02)
    assert tasks["terms-1950s"].throughput.median == pytest.approx(50, rel=0.02)
    # Queueing shows as latency above service time; at 5 ops/s a request never waits for the previous one.
    assert tasks["range-1950s"].latency.p50 >= tasks["range-1950s"].service_time.p50
