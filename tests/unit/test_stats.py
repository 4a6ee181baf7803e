"""Statistics over repeated runs, checked against references that do not use scipy: published
worked examples, t-table values, textbook formulas and an exhaustive Mann-Whitney enumeration."""

from __future__ import annotations

import itertools
import json
import math
import statistics

import pytest

from esbench.analysis import stats
from esbench.analysis.compare import Section
from esbench.analysis.stats import Verdict
from esbench.api import models

WELCH, MANN_WHITNEY = stats.Test.WELCH_T, stats.Test.MANN_WHITNEY_U

# --- references ------------------------------------------------------------------------------

# Wikipedia, "Welch's t-test", Examples 1 and 2 (published: t, df, p rounded as shown there).
WIKI_1 = ([27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
          [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4])
WIKI_2 = ([17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
          [21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8,
           20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5, 21.5, 21.8])


def welch_t_and_df(a: list[float], b: list[float]) -> tuple[float, float]:
    """Welch's t and the Welch-Satterthwaite degrees of freedom, from the textbook formulas."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return t, df


def two_sided_t_p(t: float, df: float, steps: int = 4000) -> float:
    """1 - 2 * integral of Student's t density over [0, |t|], by Simpson's rule."""
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def density(x: float) -> float:
        return math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))

    h = abs(t) / steps
    area = density(0) + density(abs(t)) + sum((4 if i % 2 else 2) * density(i * h) for i in range(1, steps))
    return 1 - 2 * area * h / 3


def exact_mann_whitney_p(x: list[float], y: list[float]) -> float:
    """Two-sided exact p: the share of all splits of the pooled sample (no ties) whose U is at
    least as extreme as the observed one."""
    pooled, n1, n2 = x + y, len(x), len(y)
    def u(group: tuple[float, ...]) -> int:
        return sum(1 for a in group for b in pooled if b not in group and a > b)
    observed = u(tuple(x))
    extreme = min(observed, n1 * n2 - observed)
    splits = [u(group) for group in itertools.combinations(pooled, n1)]
    return min(1.0, 2 * sum(1 for s in splits if s <= extreme) / len(splits))


# --- one cell --------------------------------------------------------------------------------


def test_summary_of_known_data():
    s = stats.summarize([2, 4, 4, 4, 5, 5, 7, 9])
    assert (s.n, s.median, s.mean) == (8, 4.5, 5.0)
    assert s.std_dev == pytest.approx(math.sqrt(32 / 7))  # sum of squares 32, n - 1 = 7
    assert s.cv_percent == pytest.approx(math.sqrt(32 / 7) / 5 * 100)


def test_confidence_interval_matches_the_t_table():
    s = stats.summarize(range(1, 11))
    assert s.std_dev == pytest.approx(3.0277, abs=1e-4)
    half_width = 2.262157 * s.std_dev / math.sqrt(10)  # t(0.975, 9) from a t table
    assert (s.ci_low, s.ci_high) == (pytest.approx(5.5 - half_width), pytest.approx(5.5 + half_width))
    assert (round(s.ci_low, 3), round(s.ci_high, 3)) == (3.334, 7.666)
    wider = stats.summarize(range(1, 11), confidence=0.99)
    assert wider.ci_low == pytest.approx(5.5 - 3.249836 * s.std_dev / math.sqrt(10))  # t(0.995, 9)


def test_one_value_and_constant_values_give_none_not_nan():
    assert stats.summarize([3.0]) == stats.Summary(1, 3.0, 3.0, None, None, None, None)
    assert stats.summarize([2.0, 2.0, 2.0]) == stats.Summary(3, 2.0, 2.0, 0.0, 0.0, 2.0, 2.0)
    assert stats.summarize([-1.0, 1.0]).cv_percent is None  # mean 0: no coefficient of variation
    with pytest.raises(ValueError):
        stats.summarize([])


# --- two cells -------------------------------------------------------------------------------


@pytest.mark.parametrize("sample, published_t, published_p", [(WIKI_1, -2.46, 0.021), (WIKI_2, -1.57, 0.149)])
def test_welch_p_value_matches_the_published_examples(sample, published_t, published_p):
    a, b = sample
    t, df = welch_t_and_df(a, b)
    assert round(t, 2) == published_t
    p = stats.p_value(a, b, WELCH)
    assert p == pytest.approx(two_sided_t_p(t, df), abs=1e-7)
    assert round(p, 3) == published_p
    assert stats.p_value(b, a, WELCH) == pytest.approx(p)


def test_welch_p_value_agrees_with_t_table_critical_values():
    t, df = welch_t_and_df(*WIKI_1)
    assert 24 < df < 25  # between the table's rows: t(0.975) 2.064/2.060, t(0.99) 2.492/2.485
    assert 2.064 < abs(t) < 2.485
    assert 0.02 < stats.p_value(*WIKI_1, WELCH) < 0.05


@pytest.mark.parametrize("x, y", [
    ([1, 2, 3], [4, 5, 6]),
    ([1.1, 2.3, 3.5, 6.0], [2.9, 4.2, 5.1, 7.7, 8.0]),
    ([10.5, 9.1, 12.8, 11.0, 8.7], [9.9, 13.4, 12.2, 14.1, 10.1, 15.0]),
])
def test_mann_whitney_p_value_is_the_exact_enumeration(x, y):
    assert stats.p_value(x, y, MANN_WHITNEY) == pytest.approx(exact_mann_whitney_p(x, y), abs=1e-12)


def test_mann_whitney_reference_on_a_hand_counted_case():
    assert exact_mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)  # 2 of 20 splits
    assert stats.p_value([1, 2, 3], [4, 5, 6], MANN_WHITNEY) == pytest.approx(0.1)


@pytest.mark.parametrize("test", list(stats.Test))
def test_p_value_is_none_without_two_values_each(test):
    assert stats.p_value([1.0], [2.0, 3.0], test) is None
    assert stats.p_value([1.0, 2.0], [], test) is None


def test_welch_p_value_is_none_when_neither_sample_varies():
    assert stats.p_value([5.0, 5.0, 5.0], [5.0, 5.0, 5.0], WELCH) is None
    assert stats.p_value([5.0, 5.0, 5.0], [7.0, 7.0, 7.0], WELCH) is None
    assert stats.p_value([5.0, 5.0, 5.0], [7.0, 8.0, 9.0], WELCH) is not None


# --- the table -------------------------------------------------------------------------------


def run(throughput: float, latency: float, store: float | None = None, error_rate: float | None = None) -> models.Results:
    task = models.TaskResult(task="bulk", throughput=models.Throughput(median=throughput, unit="docs/s"),
                          latency=models.Percentiles(p50=latency, unit="ms"), error_rate=error_rate)
    return models.Results(tasks=[task], cluster=models.ClusterResult(store_size_bytes=store) if store else None)


SWEEP = {
    "default": [run(1000, 10.0, 100e6), run(1010, 10.2, 101e6), run(990, 9.8, 99e6),
                run(1005, 10.1, 100e6), run(995, 9.9, 100e6)],
    "best_compression": [run(900, 12.0, 60e6), run(905, 12.1, 61e6), run(895, 11.9, 59e6),
                         run(910, 12.2, 60e6), run(890, 11.8, 60e6)],
    "tuned": [run(1100, 8.0), run(1110, 12.0), run(1090, 9.0), run(1105, 11.0), run(1095, 10.0)],
    "pending": [run(1200, 9.0)],
    "queued": [],
}


def cells(row: stats.Row) -> dict[str, stats.CellStats]:
    return {c.cell: c for c in row.cells}


def test_rows_follow_measurement_order_and_leave_out_cells_without_data():
    rows = stats.compare_cells(SWEEP, "default")
    assert [(r.section, r.subject, r.metric.key, r.unit) for r in rows] == [
        (Section.TASK, "bulk", "throughput.median", "docs/s"),
        (Section.TASK, "bulk", "latency.p50", "ms"),
        (Section.CLUSTER, "cluster", "store_size", "bytes"),
    ]
    assert [c.cell for c in rows[0].cells] == ["default", "best_compression", "tuned", "pending"]
    assert [c.cell for c in rows[2].cells] == ["default", "best_compression"]


def test_verdicts_follow_the_metric_direction():
    throughput, latency, store = (cells(r) for r in stats.compare_cells(SWEEP, "default"))
    assert throughput["best_compression"].verdict == Verdict.WORSE
    assert throughput["best_compression"].change_percent == pytest.approx((900 - 1000) / 1000 * 100)
    assert throughput["tuned"].verdict == Verdict.BETTER and throughput["tuned"].significant
    assert latency["best_compression"].verdict == Verdict.WORSE  # higher latency
    assert store["best_compression"].verdict == Verdict.BETTER  # smaller store
    assert throughput["pending"].verdict == Verdict.INSUFFICIENT_DATA
    assert throughput["pending"].change_percent == pytest.approx(20.0)  # shown, though untested
    baseline = throughput["default"]
    assert (baseline.verdict, baseline.change_percent, baseline.p_value) == (Verdict.BASELINE, None, None)


def test_overlapping_spread_is_no_significant_change_and_flagged_noisy():
    latency = cells(stats.compare_cells(SWEEP, "default")[1])
    tuned = latency["tuned"]  # same mean as the baseline, CV about 16%
    assert tuned.verdict == Verdict.NO_SIGNIFICANT_CHANGE and not tuned.significant
    assert tuned.noisy and not latency["default"].noisy and not latency["best_compression"].noisy


def test_a_noisy_baseline_makes_every_comparison_noisy():
    sweep = {"a": [run(500, 1), run(1500, 1), run(1000, 1)], "b": [run(1000, 1), run(1001, 1), run(999, 1)]}
    throughput = cells(stats.compare_cells(sweep, "a")[0])
    assert throughput["a"].noisy and throughput["b"].noisy
    assert throughput["b"].summary.cv_percent < 5


def test_mann_whitney_reports_the_change_of_medians():
    throughput = cells(stats.compare_cells(SWEEP, "default", test=MANN_WHITNEY)[0])
    tuned = throughput["tuned"]
    assert tuned.change_percent == pytest.approx((1100 - 1000) / 1000 * 100)
    assert tuned.p_value == pytest.approx(exact_mann_whitney_p([1000, 1010, 990, 1005, 995],
                                                               [1100, 1110, 1090, 1105, 1095]))
    assert tuned.verdict == Verdict.BETTER


def test_a_zero_baseline_has_no_change_percent_but_still_a_verdict():
    sweep = {"a": [run(1, 1, error_rate=0.0)] * 3,
             "b": [run(1, 1, error_rate=0.1), run(1, 1, error_rate=0.2), run(1, 1, error_rate=0.15)]}
    errors = next(r for r in stats.compare_cells(sweep, "a") if r.metric.key == "error_rate")
    contender = cells(errors)["b"]
    assert contender.change_percent is None and contender.verdict == Verdict.WORSE


def test_an_unknown_baseline_is_an_error():
    with pytest.raises(ValueError, match="baseline"):
        stats.compare_cells(SWEEP, "nope")


def test_wire_form_is_compact_camel_case_json():
    wire = stats.to_wire(stats.compare_cells(SWEEP, "default"))
    json.dumps(wire, allow_nan=False)
    assert not any(v is None for row in wire for v in [*row.values(), *(x for c in row["cells"] for x in c.values())])
    throughput = wire[0]
    assert {k: throughput[k] for k in ("section", "subject", "metric", "unit", "higherIsBetter")} == {
        "section": "task", "subject": "bulk", "metric": "throughput.median", "unit": "docs/s", "higherIsBetter": True}
    baseline, contender = throughput["cells"][0], throughput["cells"][1]
    # ci: 1000 ± t(0.975, 4) 2.776445 (t table) * sqrt(62.5) / sqrt(5), to six significant digits
    assert baseline == {"cell": "default", "n": 5, "median": 1000.0, "mean": 1000.0, "stdDev": 7.90569,
                        "cvPercent": 0.7906, "ciLow": 990.184, "ciHigh": 1009.82,
                        "significant": False, "noisy": False, "verdict": "Baseline"}
    assert set(contender) == set(baseline) | {"changePercent", "pValue"}
    assert contender["pValue"] == float(f"{contender['pValue']:.4g}") and contender["verdict"] == "Worse"
    assert throughput["cells"][3] == {"cell": "pending", "n": 1, "median": 1200.0, "mean": 1200.0,
                                      "changePercent": 20.0, "significant": False, "noisy": False,
                                      "verdict": "InsufficientData"}
