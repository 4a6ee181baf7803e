"""Comparing Experiments: directions, differences, row layout and the text formats, on result
files made from the real race.json fixtures (tests/support/result_files.py)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from esbench.analysis import compare
from esbench.analysis.compare import Direction, Section, difference
from esbench.api import models
from tests.support.result_files import experiment_from_race, race_fixtures


@pytest.fixture(scope="module")
def documents() -> list[dict]:
    found = [experiment_from_race(p) for p in race_fixtures()]
    assert len(found) >= 2, "tests/fixtures/race/ needs at least two race.json files with results"
    return found


@pytest.fixture
def entries(documents) -> list[compare.Entry]:
    return compare.unique_labels([compare.entry_from_document(d, f"fixture {i}") for i, d in enumerate(documents)])


def test_a_difference_between_runs_is_contender_minus_baseline_and_no_verdict():
    # One run per side cannot tell an effect from noise: the issue saw "-0.2 % worse".
    assert difference(100.0, 125.0) == compare.Difference(25.0, 25.0)
    assert difference(100.0, 99.8) == compare.Difference(pytest.approx(-0.2), pytest.approx(-0.2))
    assert not hasattr(compare.Difference(1.0, 1.0), "verdict")


def test_a_zero_baseline_has_no_percentage():
    zero = difference(0.0, 2.0)
    assert zero.percent is None and zero.absolute == 2.0
    assert difference(None, 2.0) is None
    assert difference(2.0, None) is None


def test_every_task_and_cluster_figure_of_every_experiment_is_a_row_with_rallys_exact_values(entries):
    comparison = compare.compare(entries)
    rows = {(r.section, r.subject, r.metric.key): r for r in comparison.rows}
    for position, entry in enumerate(entries):
        for task in entry.results.tasks:
            row = rows[(Section.TASK, task.task, "throughput.median")]
            assert row.values[position] == task.throughput.median
            assert row.unit == task.throughput.unit
            if task.latency and task.latency.p100 is not None:
                assert rows[(Section.TASK, task.task, "latency.p100")].values[position] == task.latency.p100
        assert rows[(Section.CLUSTER, "cluster", "store_size")].values[position] == entry.results.cluster.store_size_bytes
        assert rows[(Section.CLUSTER, "cluster", "segment_count")].values[position] == entry.results.cluster.segment_count


def test_every_difference_is_contender_minus_baseline_and_each_metric_has_its_direction(entries):
    comparison = compare.compare(entries)
    checked = 0
    for row in comparison.rows:
        for value, d in zip(row.values[1:], row.differences, strict=True):
            if row.values[0] is None or value is None:
                assert d is None
                continue
            checked += 1
            assert d.absolute == value - row.values[0]
    assert checked > 10
    directions = {r.metric.key: r.metric.direction for r in comparison.rows}
    assert directions["throughput.median"] == Direction.HIGHER_IS_BETTER
    for key in ("latency.p50", "service_time.p100", "error_rate", "store_size", "segment_count", "merge_time"):
        assert directions[key] == Direction.LOWER_IS_BETTER


def test_rows_are_grouped_tasks_first_in_the_baselines_task_order(entries):
    comparison = compare.compare(entries)
    sections = [r.section for r in comparison.rows]
    assert sections == sorted(sections, key=list(Section).index)
    baseline_tasks = [t.task for t in entries[0].results.tasks]
    seen = list(dict.fromkeys(r.subject for r in comparison.rows if r.section == Section.TASK))
    assert seen[: len(baseline_tasks)] == baseline_tasks


def test_a_task_only_one_experiment_ran_has_values_but_no_difference(entries):
    baseline, contender = entries[0], entries[1]
    dropped = baseline.results.tasks[0].task
    contender.results = contender.results.model_copy(
        update={"tasks": [t for t in contender.results.tasks if t.task != dropped]})
    row = next(r for r in compare.compare([baseline, contender]).rows
               if r.subject == dropped and r.metric.key == "throughput.median")
    assert row.values == [baseline.results.tasks[0].throughput.median, None]
    assert row.differences == [None]


def test_node_cpu_rows_are_absent_when_no_node_was_sampled(entries):
    assert not [r for r in compare.compare(entries).rows if r.section == Section.NODES]  # race.json has no CPU


def test_different_workloads_and_unfinished_experiments_are_warned_about(documents):
    first, second = json.loads(json.dumps(documents[0])), json.loads(json.dumps(documents[1]))
    second["status"]["results"]["track"] = "another-track"
    second["status"]["phase"], second["status"]["reason"] = "Failed", "RaceErrors"
    comparison = compare.compare([compare.entry_from_document(first), compare.entry_from_document(second)])
    assert any("different workloads" in w for w in comparison.warnings)
    assert any("did not succeed (Failed, RaceErrors)" in w for w in comparison.warnings)


def test_a_bulk_task_with_failed_requests_is_in_ops_and_the_warning_says_why():
    # examples/studies/004-indexing-curves: at the most clients, 73 % of the bulk requests failed
    # and Rally, which counts a failed request as one op (esrally/driver/driver.py, execute_single),
    # reported the task's throughput in ops/s.
    def entry(name: str, unit: str, error_rate: float) -> compare.Entry:
        task = models.TaskResult(task="index-append", throughput=models.Throughput(median=1000, unit=unit),
                                 error_rate=error_rate)
        return compare.Entry(name, models.Results(tasks=[task]))
    comparison = compare.compare([entry("c0", "docs/s", 0.0), entry("c1", "docs/s", 0.0), entry("c5", "ops/s", 0.729)])
    assert comparison.warnings == ["index-append throughput median: in docs/s, but c5 in ops/s (72.9% of its "
                                   "requests failed, and Rally counts a failed request as one op): not comparable"]


def test_an_experiment_without_results_is_not_comparable(documents):
    pending = {**documents[0], "status": {"phase": "Benchmarking"}}
    with pytest.raises(compare.NotComparable, match="no results yet \\(phase Benchmarking\\)"):
        compare.entry_from_document(pending)


def test_the_same_name_twice_gets_distinct_labels(documents):
    entries = compare.unique_labels([compare.entry_from_document(documents[0]) for _ in range(3)])
    name = documents[0]["metadata"]["name"]
    assert [e.label for e in entries] == [f"{name}#1", f"{name}#2", f"{name}#3"]


def test_csv_has_one_line_per_row_and_experiment_with_raw_values(entries):
    comparison = compare.compare(entries)
    lines = list(csv.DictReader(io.StringIO(compare.to_csv(comparison))))
    assert len(lines) == len(comparison.rows) * len(entries)
    first = lines[0]
    assert first["experiment"] == comparison.baseline and first["difference"] == ""
    assert float(first["value"]) == comparison.rows[0].values[0]
    contender = lines[1]
    assert "verdict" not in contender and contender["direction"] in ("higher", "lower")


def test_json_and_markdown_carry_every_row(entries):
    comparison = compare.compare(entries)
    data = json.loads(compare.to_json(comparison))
    assert data["baseline"] == entries[0].label and data["contenders"] == [e.label for e in entries[1:]]
    assert len(data["rows"]) == len(comparison.rows)
    assert set(data["rows"][0]["values"]) == {e.label for e in entries}
    markdown = compare.to_markdown(comparison)
    assert len([line for line in markdown.splitlines() if line.startswith("| ")]) == len(comparison.rows) + 1


def test_values_are_formatted_for_people():
    assert compare.format_value(141_437.0, "bytes") == "138.1 KiB"
    assert compare.format_value(512.0, "bytes") == "512 B"
    assert compare.format_value(0.25, "fraction") == "25.00%"
    assert compare.format_value(2641.5, "docs/s") == "2,642 docs/s"
    assert compare.format_value(None, "ms") == "–"
    assert compare.format_difference(difference(200.0, 150.0), "ms") == "-50.00 ms (-25.0 %)"
    assert compare.format_difference(difference(200.0, 200.0), "ms") == "0"


def test_results_of_the_api_model_round_trip_through_a_document(documents):
    entry = compare.entry_from_document(documents[0])
    assert entry.results == models.Results.model_validate(documents[0]["status"]["results"])
    assert entry.spec is not None and entry.phase == "Succeeded"


BASE_ENVIRONMENT = {
    "esbench_version": "0.1.0", "rally_version": "2.13.0",
    "track": {"source": "Bundled", "name": "smoke", "sha256": "aaa"},
    "nodes": [{"node": "n1", "jvm": "OpenJDK 64-Bit Server VM 17.0.13", "kernel": "6.1.0", "available_processors": 2,
               "mmap": False}],
    "load_driver": {"cpu_model": "Xeon A"},
}


@pytest.mark.parametrize(("fact", "change"), [
    ("track", {"track": {"source": "Bundled", "name": "smoke", "sha256": "bbb"}}),
    ("Rally", {"rally_version": "2.12.0"}),
    ("esbench", {"esbench_version": "0.2.0"}),
    ("JVM", {"nodes": [{**BASE_ENVIRONMENT["nodes"][0], "jvm": "OpenJDK 64-Bit Server VM 21.0.5"}]}),
    ("node kernel", {"nodes": [{**BASE_ENVIRONMENT["nodes"][0], "kernel": "6.12.0"}]}),
    ("node processors", {"nodes": [{**BASE_ENVIRONMENT["nodes"][0], "available_processors": 4}]}),
    ("mmap", {"nodes": [{**BASE_ENVIRONMENT["nodes"][0], "mmap": True}]}),
    ("load driver CPU", {"load_driver": {"cpu_model": "EPYC B"}}),
])
def test_each_fact_of_the_reproducibility_record_that_differs_is_warned_about_by_name(fact, change):
    def entry(label, environment):
        return compare.Entry(label, models.Results(environment=models.Environment.model_validate(environment)))

    same = [entry("a", BASE_ENVIRONMENT), entry("b", BASE_ENVIRONMENT)]
    assert compare.environment_warnings(same) == []
    (warning,) = compare.environment_warnings([entry("a", BASE_ENVIRONMENT), entry("b", {**BASE_ENVIRONMENT, **change})])
    assert warning.startswith(f"different {fact} (a: ") and "b: " in warning, warning
    # A fact one side did not record is not a difference.
    unrecorded = {**BASE_ENVIRONMENT, "nodes": [{"node": "n1"}], "load_driver": {}, "track": None,
                  "rally_version": None, "esbench_version": None}
    assert compare.environment_warnings([entry("a", BASE_ENVIRONMENT), entry("b", unrecorded)]) == []
