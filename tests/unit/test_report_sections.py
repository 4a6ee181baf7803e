"""`esbench report`'s sections beyond the comparison: within-race contrasts and profiles."""

from __future__ import annotations

from pathlib import Path

from esbench.analysis import html_report
from esbench.analysis.compare import Entry
from esbench.api import models

SPEC = models.ExperimentSpec.model_validate({
    "elasticsearch": {"version": "8.7.1"},
    "workload": {"track": "source-filtering", "contrasts": [
        {"name": "returned-fields", "baseline": "full", "variants": ["none"], "metrics": ["service_time.p50"]}]}})


def _run(number: int, full: float, none: float, profiled: bool = False) -> Entry:
    tasks = [models.TaskResult(task=name, service_time=models.Percentiles(p50=value, unit="ms"))
             for name, value in (("full", full), ("none", none))]
    results = models.Results(tasks=tasks)
    if profiled:
        results.profile = models.ProfileRecording(profiler="async-profiler 4.6", event="cpu", interval="10ms",
                                                  folder=f"run-{number}.profiles")
        tasks[0].profile = models.TaskProfile(samples=100, stacks="full.collapsed.gz", flame_graph="full.html", top=[
            models.Frame(frame="org.apache.lucene.util.compress.LZ4.decompress", percent=41.5)])
    return Entry(label=f"run-{number}", results=results, spec=SPEC, source=f"/results/sweep/runs/run-{number}.json")


def test_one_configurations_runs_report_their_within_race_contrasts_with_an_interval(tmp_path):
    """The five races of a one-cell sweep (study 000): no second group to compare with, but each
    race's tasks against its baseline task, paired race by race."""
    fulls, halves = (100.0, 180.0, 60.0, 140.0, 90.0), (0.50, 0.51, 0.49, 0.50, 0.505)
    runs = [_run(n, full, full * half) for n, (full, half) in enumerate(zip(fulls, halves, strict=True))]
    report = html_report.build(runs)
    ((title, rows),) = report.contrasts
    assert title == "g0: contrast returned-fields, each task against full"
    (cell,) = [c for c in rows[0]["cells"] if c["cell"] == "none"]
    # Every race about halved it: paired, the interval is tight around -50 % although the races differ 3x.
    assert -52 < cell["changeLowPercent"] < -50 < cell["changeHighPercent"] < -48
    assert cell["verdict"] == "Better"
    written = tmp_path / "report.md"
    html_report.write_markdown(report, written)
    markdown = written.read_text()
    assert "## Within-race contrasts" in markdown
    # The contrast in its own column, each of its tasks in the contender's.
    assert "| contrast | metric | task | baseline |" in markdown
    # The geometric means of the runs, whose ratio the change is.
    assert "| returned-fields | service_time.p50 | none | 106.36 | 53.28 | ms |" in markdown
    page = html_report.to_html(report)
    assert "<h2>Within-race contrasts</h2>" in page and "<th>contrast</th><th>metric</th><th>task</th>" in page


def test_profiles_are_linked_from_where_the_report_is_written(tmp_path):
    report = html_report.build([_run(0, 100.0, 50.0, profiled=True)])
    (item,) = report.profiles
    assert item.link(item.profile.flame_graph, Path("/results/reports")) == "../sweep/runs/run-0.profiles/full.html"
    page = html_report.to_html(report, Path("/results"))
    assert 'href="sweep/runs/run-0.profiles/full.html"' in page and "41.5 % org.apache.lucene" in page
