"""Statistics over repeated runs, checked against references that do not use scipy (published
worked examples, t-table values, textbook formulas, an exhaustive Mann-Whitney enumeration), and
calibrated by simulation: A/A sweeps keep their false verdicts at the stated rate, a real effect
is found with the stated power, intervals cover the true effect at their nominal rate."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics

import pytest
from statsmodels.stats.multitest import multipletests

from esbench.analysis import compare, stats
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
    assert stats.summarize([3.0]) == stats.Summary(1, 3.0, 3.0, None, None, None, None, 3.0)
    assert stats.summarize([2.0, 2.0, 2.0]) == stats.Summary(3, 2.0, 2.0, 0.0, 0.0, 2.0, 2.0, 2.0)
    assert stats.summarize([-1.0, 1.0]).geometric_mean is None
    # 0.7 three times has a float mean just off 0.7: the spread must still be exactly none, and a
    # difference that is always the same an exact shift.
    assert stats.summarize([0.7] * 3).std_dev == 0.0
    low, high = stats.paired([0.7] * 3).interval(0.05)
    assert low == high == pytest.approx(0.7)
    assert stats.summarize([-1.0, 1.0]).cv_percent is None  # mean 0: no coefficient of variation
    with pytest.raises(ValueError):
        stats.summarize([])


# --- two cells -------------------------------------------------------------------------------


@pytest.mark.parametrize("sample, published_t, published_p", [(WIKI_1, -2.46, 0.021), (WIKI_2, -1.57, 0.149)])
def test_welch_p_value_matches_the_published_examples(sample, published_t, published_p):
    a, b = sample
    t, df = welch_t_and_df(a, b)
    assert round(t, 2) == published_t
    shift = stats.welch(a, b)
    assert shift.estimate == pytest.approx(statistics.fmean(b) - statistics.fmean(a))
    assert shift.p_value == pytest.approx(two_sided_t_p(t, df), abs=1e-7)
    assert round(shift.p_value, 3) == published_p
    assert stats.welch(b, a).p_value == pytest.approx(shift.p_value)


def test_welch_interval_is_the_test_inverted():
    shift = stats.welch(*WIKI_1)
    assert 0.02 < shift.p_value < 0.05  # t between the table's t(0.975) and t(0.99) at 24-25 df
    low, high = shift.interval(0.05)
    assert 0 < low < shift.estimate < high
    # At alpha = p the interval just touches no change; wider levels give wider intervals.
    assert shift.interval(shift.p_value)[0] == pytest.approx(0, abs=1e-9)
    assert shift.interval(0.01)[0] < 0 < shift.interval(0.01)[1]


@pytest.mark.parametrize("x, y", [
    ([1, 2, 3], [4, 5, 6]),
    ([1.1, 2.3, 3.5, 6.0], [2.9, 4.2, 5.1, 7.7, 8.0]),
    ([10.5, 9.1, 12.8, 11.0, 8.7], [9.9, 13.4, 12.2, 14.1, 10.1, 15.0]),
])
def test_mann_whitney_p_value_is_the_exact_enumeration(x, y):
    assert stats.mann_whitney(x, y).p_value == pytest.approx(exact_mann_whitney_p(x, y), abs=1e-12)


def test_mann_whitney_on_a_hand_counted_case():
    assert exact_mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)  # 2 of 20 splits
    shift = stats.mann_whitney([1, 2, 3], [4, 5, 6])
    # The nine differences y - x are 1 2 2 3 3 3 4 4 5: Hodges-Lehmann is their median.
    assert (shift.estimate, shift.p_value) == (3, pytest.approx(0.1))
    # Three runs a side can never exclude no change at 95 % (the smallest p is 0.1) ...
    assert shift.interval(0.05) == (-math.inf, math.inf)
    # ... and at 80 % every shift below the smallest difference, or above the largest, is refused.
    assert shift.interval(0.2) == (1, 5)


@pytest.mark.parametrize("method", [stats.welch, stats.mann_whitney])
def test_an_interval_excludes_no_change_exactly_when_the_test_rejects_it(method):
    generator = random.Random(3)
    for _ in range(200):
        x = [math.exp(generator.gauss(0, 0.1)) for _ in range(generator.randint(4, 7))]
        y = [math.exp(generator.gauss(generator.choice([0, 0.1]), 0.1)) for _ in range(generator.randint(4, 7))]
        shift = method(x, y)
        for alpha in (0.01, 0.05, 0.2):
            low, high = shift.interval(alpha)
            assert low <= shift.estimate <= high
            assert (shift.p_value < alpha) == (not low <= 0 <= high)


def test_samples_that_do_not_vary_give_an_exact_difference():
    assert stats.welch([5.0, 5.0], [5.0, 5.0, 5.0]).p_value == 1.0
    exact = stats.welch([5.0, 5.0, 5.0], [7.0, 7.0, 7.0])
    assert (exact.estimate, exact.p_value, exact.interval(0.05)) == (2.0, 0.0, (2.0, 2.0))


def test_holm_and_benjamini_hochberg_match_their_definitions_and_statsmodels():
    p = [0.01, 0.04, 0.03, 0.5]
    # Holm: sorted p times (m - rank + 1), made monotone; BH: sorted p times m / rank, from the top.
    assert stats.adjust(p, stats.Family.PRIMARY) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert stats.adjust(p, stats.Family.EXPLORATORY) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.5])
    assert stats.adjust([], stats.Family.PRIMARY) == []
    generator = random.Random(2)
    for size in (1, 2, 7, 60):
        p = [generator.random() ** 3 for _ in range(size)]
        for family, method in ((stats.Family.PRIMARY, "holm"), (stats.Family.EXPLORATORY, "fdr_bh")):
            assert stats.adjust(p, family) == pytest.approx(list(multipletests(p, method=method)[1]), abs=1e-12)


def test_runs_needed_and_the_detectable_effect_follow_the_t_formula():
    # 80 % power, alpha 5 %, 10 runs a side: (t(0.975, 18) 2.101 + t(0.80, 18) 0.862, from a t table) * sqrt(2/10)
    assert stats.detectable_shift(1.0, 10, 10, 0.05) == pytest.approx((2.101 + 0.862) * math.sqrt(0.2), rel=1e-4)
    needed = stats.runs_needed(spread=0.05, estimate=math.log(1.1), margin=None, alpha=0.05)
    assert stats.detectable_shift(0.05, needed, needed, 0.05) <= math.log(1.1)
    assert stats.detectable_shift(0.05, needed - 1, needed - 1, 0.05) > math.log(1.1)
    assert stats.runs_needed(spread=0.0, estimate=0.1, margin=None, alpha=0.05) is None


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
PRIMARY = [("bulk", "throughput.median")]


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


def test_the_effect_is_a_ratio_with_its_interval_and_the_verdict_follows_the_metric_direction():
    throughput, latency, store = (cells(r) for r in stats.compare_cells(SWEEP, "default", primary=PRIMARY))
    worse = throughput["best_compression"]
    geometric = lambda values: math.exp(statistics.fmean(map(math.log, values)))  # noqa: E731
    assert worse.change_percent == pytest.approx((geometric([900, 905, 895, 910, 890]) /
                                                  geometric([1000, 1010, 990, 1005, 995]) - 1) * 100)
    assert worse.verdict == Verdict.WORSE and worse.low_percent < worse.change_percent < worse.high_percent < 0
    assert throughput["tuned"].verdict == Verdict.BETTER and throughput["tuned"].low_percent > 0
    assert latency["best_compression"].verdict == Verdict.WORSE  # higher latency
    assert store["best_compression"].verdict == Verdict.BETTER  # smaller store
    baseline = throughput["default"]
    assert (baseline.verdict, baseline.change_percent, baseline.p_value) == (Verdict.BASELINE, None, None)


def test_a_single_run_is_a_difference_without_interval_or_verdict():
    pending = cells(stats.compare_cells(SWEEP, "default")[0])["pending"]
    assert pending.verdict == Verdict.INSUFFICIENT_DATA
    assert pending.change_percent == pytest.approx((1200 / geometric_mean([1000, 1010, 990, 1005, 995]) - 1) * 100)
    assert (pending.low_percent, pending.p_value) == (None, None)


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(map(math.log, values)))


def test_an_interval_within_the_threshold_is_equivalent_and_a_wide_one_inconclusive():
    latency = cells(stats.compare_cells(SWEEP, "default")[1])
    tuned = latency["tuned"]  # same mean as the baseline, CV about 16 %: the interval spans +-15 %
    assert tuned.verdict == Verdict.INCONCLUSIVE and tuned.runs_needed > 5
    assert tuned.noisy and not latency["default"].noisy and not latency["best_compression"].noisy
    close = {"a": [run(1000 + d, 1) for d in (-5, 0, 5, -3, 3)], "b": [run(1002 + d, 1) for d in (-5, 0, 5, -3, 3)]}
    same = cells(stats.compare_cells(close, "a")[0])["b"]
    assert same.verdict == Verdict.EQUIVALENT and -5 < same.low_percent < 0 < same.high_percent < 5
    assert same.runs_needed is None


def test_a_noisy_baseline_makes_every_comparison_noisy():
    sweep = {"a": [run(500, 1), run(1500, 1), run(1000, 1)], "b": [run(1000, 1), run(1001, 1), run(999, 1)]}
    throughput = cells(stats.compare_cells(sweep, "a")[0])
    assert throughput["a"].noisy and throughput["b"].noisy
    assert throughput["b"].summary.cv_percent < 5


def test_mann_whitney_gives_the_hodges_lehmann_ratio():
    statistics_ = models.Statistics(test=MANN_WHITNEY)
    tuned = cells(stats.compare_cells(SWEEP, "default", statistics_, primary=PRIMARY)[0])["tuned"]
    logs = sorted(math.log(c) - math.log(b) for b in [1000, 1010, 990, 1005, 995] for c in [1100, 1110, 1090, 1105, 1095])
    assert tuned.change_percent == pytest.approx(math.expm1(statistics.median(logs)) * 100)
    assert tuned.p_value == pytest.approx(exact_mann_whitney_p([1000, 1010, 990, 1005, 995],
                                                               [1100, 1110, 1090, 1105, 1095]))
    assert tuned.verdict == Verdict.BETTER


def test_figures_that_are_zero_are_compared_as_differences():
    sweep = {"a": [run(1, 1, error_rate=0.0)] * 3,
             "b": [run(1, 1, error_rate=0.1), run(1, 1, error_rate=0.12), run(1, 1, error_rate=0.11)],
             "c": [run(1, 1, error_rate=0.0)] * 3}
    errors = cells(next(r for r in stats.compare_cells(sweep, "a") if r.metric.key == "error_rate"))
    assert errors["b"].change_percent is None and errors["b"].verdict == Verdict.WORSE
    assert errors["c"].verdict == Verdict.EQUIVALENT  # no errors on either side


def test_primary_questions_are_corrected_by_holm_and_the_rest_by_benjamini_hochberg():
    rows = stats.compare_cells(SWEEP, "default", primary=PRIMARY)
    assert [r.family for r in rows] == [stats.Family.PRIMARY, stats.Family.EXPLORATORY, stats.Family.EXPLORATORY]
    primary = [c for c in rows[0].cells if c.p_value is not None]
    exploratory = [c for r in rows[1:] for c in r.cells if c.p_value is not None]
    assert [c.p_adjusted for c in primary] == pytest.approx(stats.adjust([c.p_value for c in primary],
                                                                         stats.Family.PRIMARY))
    assert [c.p_adjusted for c in exploratory] == pytest.approx(stats.adjust([c.p_value for c in exploratory],
                                                                             stats.Family.EXPLORATORY))
    assert all(c.p_adjusted >= c.p_value for c in primary + exploratory)
    # The interval is taken at the adjusted level: never narrower than the raw one.
    assert all(c.low_percent <= c.raw_low_percent and c.high_percent >= c.raw_high_percent for c in primary)
    assert stats.corrections(rows) == {"primary": {"correction": "Holm", "comparisons": 2},
                                       "exploratory": {"correction": "Benjamini-Hochberg", "comparisons": 3}}


def test_each_contender_is_compared_with_its_own_baseline_and_all_are_corrected_together():
    # Two levels (say two heap sizes), the codec compared within each: bc is 10 % slower than its
    # level's default, and its level's default is twice the other's, so that a comparison across
    # levels would find -45 % or +80 %.
    small, large = SWEEP["default"], [run(2 * r.tasks[0].throughput.median, 10.0) for r in SWEEP["default"]]
    samples = {"c0": small, "c1": [run(0.9 * r.tasks[0].throughput.median, 10.0) for r in small],
               "c2": large, "c3": [run(0.9 * r.tasks[0].throughput.median, 10.0) for r in large]}
    rows = stats.compare_cells(samples, {"c0": "c0", "c1": "c0", "c2": "c2", "c3": "c2"}, primary=PRIMARY)
    throughput = rows[0]
    found = cells(throughput)
    assert (found["c0"].verdict, found["c2"].verdict) == (Verdict.BASELINE, Verdict.BASELINE)
    assert found["c1"].change_percent == pytest.approx(-10.0) and found["c3"].change_percent == pytest.approx(-10.0)
    assert (found["c1"].against, found["c3"].against) == ("c0", "c2")
    assert stats.corrections(rows)["primary"] == {"correction": "Holm", "comparisons": 2}
    wire = stats.to_wire([throughput])[0]
    assert [(b["cell"], c["cell"]) for b, c in stats.contenders(wire)] == [("c0", "c1"), ("c2", "c3")]
    assert [stats.contender_label(c) for _, c in stats.contenders(wire)] == ["c1 vs c0", "c3 vs c2"]
    single = stats.to_wire(stats.compare_cells(SWEEP, "default"))[0]  # one baseline: no contender names it
    assert not any("against" in c for c in single["cells"]) and stats.contender_label(single["cells"][1]) == "best_compression"


def test_groups_of_runs_get_a_baseline_per_level_of_a_spec_field():
    def group(name: str, heap: str, codec: str) -> compare.Group:
        spec = models.ExperimentSpec.model_validate({"elasticsearch": {"version": "8.7.1", "heap": heap},
                                                     "index": {"codec": codec}, "workload": {"track": "smoke"}})
        return compare.Group(name, [compare.Entry(name, models.Results(), spec=spec)])
    groups = [group("g0", "1g", "default"), group("g1", "1g", "best_compression"),
              group("g2", "2g", "best_compression"), group("g3", "2g", "default")]
    assert stats.group_baselines(groups) == dict.fromkeys(["g0", "g1", "g2", "g3"], "g0")
    assert stats.group_baselines(groups, ["elasticsearch.heap"]) == {"g0": "g0", "g1": "g0", "g2": "g2", "g3": "g2"}


def test_an_unknown_baseline_is_an_error():
    with pytest.raises(ValueError, match="baseline"):
        stats.compare_cells(SWEEP, "nope")


def test_wire_form_is_compact_camel_case_json():
    wire = stats.to_wire(stats.compare_cells(SWEEP, "default", primary=PRIMARY))
    json.dumps(wire, allow_nan=False)
    assert not any(v is None for row in wire for v in [*row.values(), *(x for c in row["cells"] for x in c.values())])
    throughput = wire[0]
    assert {k: throughput[k] for k in ("section", "subject", "metric", "unit", "higherIsBetter", "family")} == {
        "section": "task", "subject": "bulk", "metric": "throughput.median", "unit": "docs/s", "higherIsBetter": True,
        "family": "primary"}
    baseline, contender = throughput["cells"][0], throughput["cells"][1]
    # ci: 1000 ± t(0.975, 4) 2.776445 (t table) * sqrt(62.5) / sqrt(5), to six significant digits
    assert baseline == {"cell": "default", "n": 5, "median": 1000.0, "mean": 1000.0, "geometricMean": 999.975,
                        "stdDev": 7.90569,
                        "cvPercent": 0.7906, "ciLow": 990.184, "ciHigh": 1009.82, "noisy": False, "verdict": "Baseline"}
    assert set(contender) == set(baseline) | {"changePercent", "changeLowPercent", "changeHighPercent",
                                              "rawChangeLowPercent", "rawChangeHighPercent", "pValue", "pAdjusted",
                                              "detectablePercent", "widthPercent", "equivalencePValue",
                                              "equivalencePAdjusted"}
    assert contender["verdict"] == "Worse"
    assert throughput["cells"][3]["verdict"] == "InsufficientData" and "pValue" not in throughput["cells"][3]


# --- calibration by simulation -----------------------------------------------------------------
# Runs are log-normal around their cell's true figure (benchmark noise is multiplicative). Each
# test states a rate and checks it within three Monte Carlo standard errors.


def simulated_sweep(generator: random.Random, effects: dict[str, float], cv: float, runs: int,
                    tasks: int) -> dict[str, list[models.Results]]:
    sigma = math.sqrt(math.log1p(cv ** 2))  # the log-normal whose CV is cv
    def one_run(effect: float) -> models.Results:
        return models.Results(tasks=[
            models.TaskResult(task=f"t{task}", throughput=models.Throughput(
                median=1000 * (1 + effect) * math.exp(generator.gauss(-sigma ** 2 / 2, sigma)), unit="docs/s"))
            for task in range(tasks)])
    return {cell: [one_run(effect) for _ in range(runs)] for cell, effect in effects.items()}


def monte_carlo_bound(rate: float, trials: int) -> float:
    return 3 * math.sqrt(rate * (1 - rate) / trials)


@pytest.mark.parametrize("test", list(stats.Test))
def test_a_a_sweeps_keep_any_false_primary_verdict_at_the_stated_rate(test):
    """Three contenders identical to the baseline, four primary questions each: twelve comparisons.
    Uncorrected, about a third of such sweeps would claim a difference somewhere."""
    generator, sweeps, alpha = random.Random(11), 400, 0.05
    cvs = (0.02, 0.05, 0.1, 0.2)
    primary = [(f"t{task}", "throughput.median") for task in range(4)]
    false_sweeps = 0
    for number in range(sweeps):
        samples = simulated_sweep(generator, {"c0": 0, "c1": 0, "c2": 0, "c3": 0}, cvs[number % 4], 5, 4)
        rows = stats.compare_cells(samples, "c0", models.Statistics(test=test), primary)
        false_sweeps += any(c.verdict in (Verdict.BETTER, Verdict.WORSE) for r in rows for c in r.cells)
        for contender in (c for r in rows for c in r.cells if c.p_value is not None):
            # The interval shown is at the adjusted level: it never contradicts the verdict.
            low, high = contender.low_percent, contender.high_percent  # None: unbounded
            excludes_no_change = (low is not None and low > 0) or (high is not None and high < 0)
            assert excludes_no_change == (contender.verdict in (Verdict.BETTER, Verdict.WORSE))
    assert false_sweeps / sweeps <= alpha + monte_carlo_bound(alpha, sweeps)


def test_a_ten_percent_effect_at_five_percent_cv_is_found_with_the_stated_power():
    cv, effect, alpha = 0.05, 0.10, 0.05
    sigma = math.sqrt(math.log1p(cv ** 2))
    runs = stats.runs_needed(spread=sigma, estimate=math.log1p(effect), margin=None, alpha=alpha)
    assert 3 <= runs <= 8
    generator, sweeps = random.Random(5), 500
    found = 0
    for _ in range(sweeps):
        samples = simulated_sweep(generator, {"c0": 0, "c1": effect}, cv, runs, 1)
        [row] = stats.compare_cells(samples, "c0", primary=[("t0", "throughput.median")])
        found += row.cells[1].verdict == Verdict.BETTER
    assert found / sweeps >= stats.POWER - monte_carlo_bound(stats.POWER, sweeps)


@pytest.mark.parametrize("test, cv", [(WELCH, 0.05), (WELCH, 0.2), (MANN_WHITNEY, 0.1)])
def test_intervals_cover_the_true_effect_at_their_nominal_rate(test, cv):
    generator, trials, effect = random.Random(7), 1500, 0.15
    sigma = math.sqrt(math.log1p(cv ** 2))
    covered = 0
    for _ in range(trials):
        baseline = [math.exp(generator.gauss(0, sigma)) for _ in range(5)]
        contender = [math.exp(math.log1p(effect) + generator.gauss(0, sigma)) for _ in range(5)]
        shift = stats.SHIFTS[test]([math.log(v) for v in baseline], [math.log(v) for v in contender])
        low, high = shift.interval(0.05)
        covered += low <= math.log1p(effect) <= high
    # The rank test's interval has only a few levels to choose from at n = 5: it may cover more.
    assert covered / trials >= 0.95 - monte_carlo_bound(0.95, trials)
    if test == WELCH:
        assert covered / trials <= 0.95 + monte_carlo_bound(0.95, trials)


# --- paired rounds ------------------------------------------------------------------------------


def test_the_paired_test_is_the_textbook_one_on_the_differences():
    differences = [0.1, 0.2, 0.15, 0.12, 0.18]
    shift = stats.paired(differences)
    t = statistics.fmean(differences) / (statistics.stdev(differences) / math.sqrt(5))
    assert shift.p_value == pytest.approx(two_sided_t_p(t, 4), abs=1e-7)
    low, high = shift.interval(0.05)  # t(0.975, 4) = 2.776445, from a t table
    assert high - low == pytest.approx(2 * 2.776445 * statistics.stdev(differences) / math.sqrt(5), rel=1e-6)
    assert stats.paired([0.1, 0.1]).interval(0.05) == (0.1, 0.1)


def drifting(effect: float, rounds: int, generator: random.Random) -> tuple[dict, dict]:
    """A node that warms up over the sweep: every round is 15 % faster than the one before, the
    same for both cells (as seen in a real A/A sweep, where CPU per task fell 3x over 5 rounds)."""
    samples: dict[str, list[models.Results]] = {"c0": [], "c1": []}
    for round_ in range(rounds):
        level = 1000 * 0.85 ** round_
        for cell, factor in (("c0", 1.0), ("c1", 1 + effect)):
            samples[cell].append(models.Results(tasks=[models.TaskResult(task="t0", throughput=models.Throughput(
                median=level * factor * math.exp(generator.gauss(0, 0.03)), unit="docs/s"))]))
    return samples, {cell: list(range(1, rounds + 1)) for cell in samples}


def test_pairing_by_round_cancels_drift_that_hides_an_effect_from_independent_samples():
    samples, rounds = drifting(0.10, 5, random.Random(4))
    primary = [("t0", "throughput.median")]
    independent = stats.compare_cells(samples, "c0", primary=primary)[0].cells[1]
    paired = stats.compare_cells(samples, "c0", models.Statistics(paired=True), primary, rounds)[0].cells[1]
    assert independent.verdict == Verdict.INCONCLUSIVE
    assert paired.verdict == Verdict.BETTER and 0 < paired.low_percent < 10 < paired.high_percent < 20
    # Pairs are made by round: a round the baseline lacks leaves its contender run out.
    lacking = {"c0": samples["c0"][1:], "c1": samples["c1"]}
    rows = stats.compare_cells(lacking, "c0", models.Statistics(paired=True), primary, {"c0": [2, 3, 4, 5],
                                                                                         "c1": [1, 2, 3, 4, 5]})
    assert rows[0].cells[1].summary.n == 5 and rows[0].cells[1].verdict == Verdict.BETTER


def test_a_figure_no_round_has_in_both_cells_is_no_change_when_paired():
    """As in 004's clients curve: rejections reported in a later round of the contender only."""
    def results(rejections: float | None) -> models.Results:
        resources = models.TaskResources(seconds=30.0, nodes=1, write_rejections=rejections) if rejections else None
        return models.Results(tasks=[models.TaskResult(task="t0", resources=resources, throughput=models.Throughput(
            median=1000.0, unit="docs/s"))])

    samples = {"c0": [results(None), results(None), results(4.0)], "c1": [results(3.0), results(2.0), results(None)]}
    rows = stats.compare_cells(samples, "c0", models.Statistics(paired=True), (), {"c0": [1, 2, 3], "c1": [1, 2, 3]})
    rejections = next(row for row in rows if row.metric.key == "write_rejections")
    (baseline, contender) = rejections.cells
    assert (baseline.summary.n, contender.summary.n) == (1, 2)
    assert contender.change_percent is None and contender.verdict == Verdict.INSUFFICIENT_DATA


def test_paired_a_a_sweeps_on_a_drifting_node_keep_false_verdicts_at_the_stated_rate():
    generator, sweeps, alpha = random.Random(21), 400, 0.05
    false_sweeps = 0
    for _ in range(sweeps):
        samples, rounds = drifting(0.0, 5, generator)
        [row] = stats.compare_cells(samples, "c0", models.Statistics(paired=True), [("t0", "throughput.median")],
                                    rounds)
        false_sweeps += row.cells[1].verdict in (Verdict.BETTER, Verdict.WORSE)
    assert false_sweeps / sweeps <= alpha + monte_carlo_bound(alpha, sweeps)


# --- what a verdict may rest on --------------------------------------------------------------------


def test_ten_contenders_truly_at_the_margin_are_called_equivalent_at_most_at_the_stated_rate():
    """Equivalent is its own family of tests (two one-sided tests per comparison), corrected for
    their number as the difference tests are: ten contenders each truly +5 % (the margin), ten
    runs, CV 5 %. Decided at the difference test's level, about 10 % of such sweeps called one of
    them Equivalent."""
    generator, sweeps, alpha = random.Random(31), 500, 0.05
    effects = {"c0": 0.0, **{f"c{i}": 0.05 for i in range(1, 11)}}
    false_sweeps = 0
    for _ in range(sweeps):
        samples = simulated_sweep(generator, effects, 0.05, 10, 1)
        [row] = stats.compare_cells(samples, "c0", primary=[("t0", "throughput.median")])
        false_sweeps += any(c.verdict == Verdict.EQUIVALENT for c in row.cells)
    assert false_sweeps / sweeps <= alpha + monte_carlo_bound(alpha, sweeps)


def test_equivalence_is_two_one_sided_tests_against_the_margins():
    shift = stats.welch([0.0, 0.1, -0.1, 0.05], [0.01, 0.11, -0.09, 0.06])
    low, high = shift.interval(0.10)  # the 90 % interval lies within the margins exactly when TOST rejects at 5 %
    assert (shift.equivalence(low - 1e-9, high + 1e-9) < 0.05) and shift.equivalence(low + 1e-3, high) > 0.05
    assert stats.welch([5.0, 5.0], [5.0, 5.0]).equivalence(-0.01, 0.01) == 0.0


def test_figures_that_did_not_vary_within_a_cell_give_a_difference_not_a_certain_verdict():
    """Two runs each, 12 and 13 rejected requests: an interval of one point and p = 0 would make it
    a certainty that no correction could touch."""
    def counts(*values: float) -> list[models.Results]:
        return [models.Results(tasks=[models.TaskResult(task="bulk", throughput=models.Throughput(
            median=v, unit="docs/s"))]) for v in values]

    [row] = stats.compare_cells({"a": counts(12, 12), "b": counts(13, 13)}, "a", primary=[("bulk", "throughput.median")])
    contender = row.cells[1]
    assert contender.verdict == Verdict.INSUFFICIENT_DATA and contender.p_value is None
    assert contender.change_percent == pytest.approx(100 / 12)
    # Paired ratios that did not vary (each round +10 %): the same.
    [row] = stats.compare_cells({"a": counts(10, 20), "b": counts(11, 22)}, "a", models.Statistics(paired=True),
                                [("bulk", "throughput.median")], {"a": [1, 2], "b": [1, 2]})
    assert row.cells[1].verdict == Verdict.INSUFFICIENT_DATA and row.cells[1].change_percent == pytest.approx(10)
    # Identical constant figures are no change at all.
    [row] = stats.compare_cells({"a": counts(12, 12), "b": counts(12, 12)}, "a")
    assert row.cells[1].verdict == Verdict.EQUIVALENT


def test_a_paired_comparison_says_how_many_pairs_it_used_and_which_rounds_it_left_out():
    samples = {"a": [run(1000 + d, 1) for d in (0, 5, -5, 3)], "b": [run(1100 + d, 1) for d in (2, 4, -3)]}
    rows = stats.compare_cells(samples, "a", models.Statistics(paired=True), (), {"a": [1, 2, 3, 5], "b": [1, 2, 4]})
    wire = stats.to_wire(rows)[0]["cells"][1]
    assert (wire["n"], wire["pairs"], wire["unpairedRounds"]) == (3, 2, [3, 4, 5])


def test_the_rank_test_compares_tied_figures_with_the_t_test_and_says_so():
    """Counts that repeat (segments: 12, 12, 13): the rank test's p-value (tie-corrected) and its
    interval (which assumes no ties) would disagree; the row takes WelchT and names it."""
    def segments(*values: float) -> list[models.Results]:
        return [models.Results(tasks=[models.TaskResult(task="bulk", throughput=models.Throughput(
            median=v, unit="docs/s"))]) for v in values]

    tests = models.Statistics(test=MANN_WHITNEY)
    [row] = stats.compare_cells({"a": segments(12, 12, 13, 12), "b": segments(15, 16, 15, 15)}, "a", tests)
    assert row.cells[1].test == WELCH and stats.to_wire([row])[0]["cells"][1]["test"] == "WelchT"
    [row] = stats.compare_cells({"a": segments(12, 12.5, 13, 12.2), "b": segments(15, 16, 15.5, 15.2)}, "a", tests)
    assert row.cells[1].test is None


def test_a_row_shows_the_figures_its_change_is_made_of():
    """A paired A/A once read 289.7 ms and 295.3 ms (medians) beside a change of -3.9 %: the
    geometric means are what the ratio is of, so the row agrees with itself."""
    samples = {"a": [run(1000, v) for v in (100.0, 300.0, 290.0)], "b": [run(1000, v) for v in (110.0, 250.0, 295.0)]}
    row = next(r for r in stats.to_wire(stats.compare_cells(samples, "a")) if r["metric"] == "latency.p50")
    baseline, contender = row["cells"]
    assert contender["changePercent"] == pytest.approx((stats.estimate(contender) / stats.estimate(baseline) - 1) * 100,
                                                       abs=0.01)
    assert (contender["median"] / baseline["median"] - 1) * 100 != pytest.approx(contender["changePercent"], abs=1)


def test_an_inconclusive_change_that_excludes_no_change_before_the_correction_says_what_would_settle_it():
    """Seen: a store 22-29 % smaller (raw interval), Inconclusive after Benjamini-Hochberg over a
    hundred exploratory comparisons; declared primary, the same effect was Better."""
    found = {"verdict": "Inconclusive", "rawChangeLowPercent": -29.0, "rawChangeHighPercent": -22.0}
    assert "declare it primary" in stats.uncorrected_hint(found)
    assert stats.uncorrected_hint({**found, "rawChangeHighPercent": 3.0}) is None
    assert stats.uncorrected_hint({**found, "verdict": "Better"}) is None


def test_a_runs_largest_request_is_marked_as_following_the_request_count():
    rows = stats.to_wire(stats.compare_cells(SWEEP, "default"))
    marked = {row["metric"] for row in rows if row.get("followsRequestCount")}
    assert marked <= {"latency.p100", "service_time.p100"} and "latency.p50" not in marked
    assert {m.key for m, _ in compare.TASK_METRICS if m.follows_request_count} == {"latency.p100", "service_time.p100"}
