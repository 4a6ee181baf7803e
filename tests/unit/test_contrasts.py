"""Within-race contrasts (analysis.contrasts): tasks of one race compared with a baseline task."""

import pytest
import yaml

from esbench.analysis import compare, contrasts
from esbench.analysis.stats import Verdict
from esbench.api import models
from tests.support.result_files import FIXTURES

REPO = FIXTURES.parents[2]

FULL, NO_SOURCE = "paginate-full-source", "paginate-no-source"
CONTRAST = models.Contrast(name="source", baseline=FULL, variants=[NO_SOURCE])


def race(full_ms: float, no_source_ms: float, cpu_full: float = 40, cpu_no_source: float = 20) -> models.Results:
    def task(name, ms, cpu):
        return models.TaskResult(task=name, service_time=models.Percentiles(p50=ms, p99=2 * ms, unit="ms"),
                                 resources=models.TaskResources(seconds=10, nodes=1, process_cpu_percent=cpu))
    return models.Results(tasks=[task(FULL, full_ms, cpu_full), task(NO_SOURCE, no_source_ms, cpu_no_source),
                                 task("unrelated", 1, 1)])


def test_one_race_gives_the_change_of_each_variant_but_no_verdict():
    rows = contrasts.compare_tasks([race(100, 60)], CONTRAST)
    assert [r.metric.key for r in rows] == ["service_time.p50", "service_time.p99", "process_cpu.percent"]
    baseline, variant = rows[0].cells
    assert (baseline.cell, baseline.verdict) == (FULL, Verdict.BASELINE)
    assert (variant.cell, variant.change_percent, variant.verdict) == (NO_SOURCE, pytest.approx(-40), Verdict.INSUFFICIENT_DATA)
    assert all(r.subject == "source" for r in rows)


def test_repetitions_give_an_interval_and_a_verdict_by_the_metrics_direction():
    runs = [race(100 + d, 60 + d) for d in (-2, -1, 0, 1, 2)]
    service_p50 = contrasts.compare_tasks(runs, CONTRAST)[0]
    variant = service_p50.cells[1]
    assert variant.cell == NO_SOURCE and variant.verdict == Verdict.BETTER and variant.high_percent < -35
    assert variant.summary.n == 5 and variant.p_adjusted < 0.001


def test_races_that_differ_from_each_other_still_give_a_tight_interval_paired_race_by_race():
    """A node that warms up over a sweep makes every task of a later race faster: the variant's
    change within each race stays -40 %, and only pairing by race sees that through the drift."""
    runs = [race(100 * drift, 60 * drift * (1 + jitter), cpu_full=40 * drift, cpu_no_source=20 * drift)
            for drift, jitter in ((2.0, 0.01), (1.5, -0.01), (1.0, 0.0), (0.8, 0.02), (0.5, -0.02))]
    variant = contrasts.compare_tasks(runs, CONTRAST)[0].cells[1]
    assert variant.verdict == Verdict.BETTER and -42 < variant.low_percent < variant.high_percent < -38
    # Mann-Whitney has no paired form here: the same races leave it without a verdict.
    ranks = models.Statistics(test=models.SignificanceTest.MANN_WHITNEY_U)
    assert contrasts.compare_tasks(runs, CONTRAST, ranks)[0].cells[1].verdict == Verdict.INCONCLUSIVE


def test_chosen_metrics_in_their_order_and_missing_tasks_are_named():
    chosen = models.Contrast(name="source", baseline=FULL, variants=[NO_SOURCE, "paginate-typo"],
                             metrics=["process_cpu.percent", "service_time.p50"])
    workload = models.Workload(track="source-filtering", contrasts=[chosen])
    (wire,) = contrasts.to_wire([race(100, 60)], workload)
    assert [r["metric"] for r in wire["rows"]] == ["process_cpu.percent", "service_time.p50"]
    assert wire["missingTasks"] == ["paginate-typo"]
    assert [c["cell"] for c in wire["rows"][0]["cells"]] == [FULL, NO_SOURCE]


def test_the_metrics_a_contrast_names_are_the_family_its_p_values_are_corrected_over():
    """Each race reports more metrics (service p99, CPU, ...) than the contrast asks about: those
    it does not name are no comparisons of its family, and the status says the family's size."""
    chosen = models.Contrast(name="source", baseline=FULL, variants=[NO_SOURCE], metrics=["service_time.p50"])
    runs = [race(100 + d, 60 + d) for d in (-2, -1, 0, 1, 2)]
    (wire,) = contrasts.to_wire(runs, models.Workload(track="source-filtering", contrasts=[chosen]))
    assert wire["corrections"]["exploratory"] == {"correction": "Benjamini-Hochberg", "comparisons": 1}
    (row,) = contrasts.compare_tasks(runs, chosen)
    assert row.cells[1].p_adjusted == row.cells[1].p_value  # one comparison: nothing to correct


def test_the_crd_offers_exactly_the_task_metrics_of_esbench_compare():
    crd = yaml.safe_load((REPO / "crds" / "esbench.io_experiments.yaml").read_text())
    workload = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["workload"]
    items = workload["properties"]["contrasts"]["items"]["properties"]["metrics"]["items"]
    assert items["enum"] == list(contrasts.METRICS)
    assert set(contrasts.DEFAULT_METRICS) <= set(contrasts.METRICS)


def test_a_sweep_gate_may_name_every_metric_esbench_compare_has():
    crd = yaml.safe_load((REPO / "crds" / "esbench.io_experimentsweeps.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    enum = spec["properties"]["gates"]["items"]["properties"]["metric"]["enum"]
    assert enum == [m.key for m in compare.METRICS]
