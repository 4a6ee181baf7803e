"""Curves in reports: throughput against the one numeric setting the Experiments differ in."""

from esbench.analysis import charts
from esbench.analysis.compare import Entry
from esbench.api import models


def entry(label: str, throughput: float, error_rate: float = 0.0, indexed: float | None = None,
          **track_params) -> Entry:
    spec = models.ExperimentSpec.model_validate({
        "elasticsearch": {"version": "8.7.1"},
        "workload": {"track": "indexing", "trackParams": {"doc_count": 1000, **track_params}}})
    task = models.TaskResult(task="index-append", throughput=models.Throughput(median=throughput, unit="docs/s"),
                             error_rate=error_rate,
                             resources=models.TaskResources(seconds=10, nodes=1, index_operations=indexed))
    return Entry(label=label, results=models.Results(tasks=[task]), spec=spec)


def test_the_setting_that_varies_is_the_x_axis_and_repetitions_are_averaged():
    entries = [entry("a", 100, indexed=1000, bulk_bytes=1_000_000), entry("b", 300, indexed=3000, bulk_bytes=10_000_000),
               entry("c", 200, indexed=2000, bulk_bytes=5_000_000),
               entry("d", 320, 0.25, indexed=2400, bulk_bytes=10_000_000)]
    assert charts.varying_setting(entries) == ("workload.trackParams.bulk_bytes", [1e6, 1e7, 5e6, 1e7])
    chart = charts.curves(entries)
    throughput_axis, errors_axis = chart.figure.axes
    line, indexed = throughput_axis.lines
    assert list(line.get_xdata()) == [1e6, 5e6, 1e7] and list(line.get_ydata()) == [100, 200, 310]
    assert list(indexed.get_ydata()) == [100, 200, 270], "documents the nodes indexed per second of the task"
    assert list(errors_axis.lines[0].get_ydata()) == [0, 0, 12.5]
    assert throughput_axis.get_xscale() == "log"  # 1 MB to 10 MB spans more than three doublings
    assert chart.svg.lstrip().startswith("<?xml")
    chart.close()


def test_no_curve_when_two_settings_vary_or_the_setting_is_not_a_number():
    two = [entry("a", 1, bulk_bytes=1, clients=1), entry("b", 2, bulk_bytes=2, clients=2),
           entry("c", 3, bulk_bytes=3, clients=3)]
    words = [entry("a", 1, mode="x"), entry("b", 2, mode="y"), entry("c", 3, mode="z")]
    too_few = [entry("a", 1, bulk_bytes=1), entry("b", 2, bulk_bytes=2)]
    assert all(charts.curves(entries) is None for entries in (two, words, too_few))
