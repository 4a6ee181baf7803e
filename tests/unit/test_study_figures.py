"""The seed studies' figures come from their result files: each results/figures.md is what
scripts/study-figures.py makes of results/ now, and every figure with an interval that a study's
README quotes is one of them."""

import importlib.util
import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("study_figures", ROOT / "scripts" / "study-figures.py")
figures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(figures)

GENERATED = figures.generated()
STUDIES = sorted(path.parent.parent for path in GENERATED)


def _summary_lines(study: Path) -> str:
    """The lines of the studies' summary that link this study."""
    text = (figures.STUDIES / "README.md").read_text()
    return "\n".join(line for line in text.splitlines() if f"]({study.name}/)" in line)


def _within(written: float, generated: float, decimals: int) -> bool:
    """The README's figure is the generated one rounded to the decimals the README writes."""
    return abs(written - generated) <= 0.5 * 10 ** -decimals + 1e-9


def _found(figure: list[float | None], decimals: int, generated: list[list[float | None]]) -> bool:
    return any(all(w is None or (g is not None and _within(w, g, decimals)) for w, g in zip(figure, candidate, strict=True))
               for candidate in generated)


@pytest.mark.parametrize("study", STUDIES, ids=lambda path: path.name)
def test_each_figures_file_is_what_the_script_makes_of_the_results_now(study):
    path = study / "results" / figures.FIGURES
    assert path.is_file() and path.read_text() == GENERATED[path], (
        f"{path.relative_to(ROOT)} is stale or missing: run `make figures` (scripts/study-figures.py) and commit it")


@pytest.mark.parametrize("study", STUDIES, ids=lambda path: path.name)
def test_every_interval_a_readme_quotes_is_in_its_studys_generated_figures(study):
    generated = [values for _, values, _ in figures.intervals(GENERATED[study / "results" / figures.FIGURES])]
    quoted = [(f"{study.name}/README.md", found) for found in figures.intervals((study / "README.md").read_text())]
    quoted += [("README.md (the summary)", found) for found in figures.intervals(_summary_lines(study))]
    missing = [f"{where}: {written}" for where, (written, values, decimals) in quoted
               if not _found(values, decimals, generated)]
    assert not missing, ("figures with an interval that the study's results/figures.md does not hold (correct them "
                         "from `make figures`, or list them in NOT_FROM_RESULTS with where they come from):\n"
                         + "\n".join(missing))


@pytest.mark.parametrize("study", sorted(figures.NOT_FROM_RESULTS), ids=str)
def test_every_figure_listed_as_from_outside_the_results_is_still_quoted(study):
    quoted = {written for written, _, _ in figures.intervals((figures.STUDIES / study / "README.md").read_text())}
    stale = sorted(set(figures.NOT_FROM_RESULTS[study]) - quoted)
    assert not stale, f"NOT_FROM_RESULTS lists figures {study}/README.md no longer quotes: {stale}"


# --- order: could drift within a round have made a verdict? ---------------------------------------

def _drifting_sweep(tmp_path, per_run: float, changes: dict[str, tuple[str, float, float, float]]) -> Path:
    """An Interleaved, paired sweep of three cells and five rounds after a warm-up run, whose node
    gets faster by `per_run` (log scale) with every counted run and whose cells are otherwise
    equal; its comparison says what `changes` says (cell: verdict, change, low, high)."""
    spec = {"template": {"elasticsearch": {"version": "8.7.1"}, "workload": {"track": "indexing"}}, "repetitions": 5, "order": "Interleaved", "warmupRuns": 1,
            "matrix": [{"field": "workload.trackParams.bulk", "values": [1, 2, 3]}],
            "statistics": {"paired": True, "primary": [{"task": "index", "metric": "throughput.median"}]}}
    results = lambda value: {"tasks": [{"task": "index", "throughput": {"median": value}}]}  # noqa: E731
    runs = [{"name": "s-w0-r1", "cell": "w0", "repetition": 1, "phase": "Succeeded",
             "startTime": "2026-01-01T00:00:00Z", "results": results(900.0)}]
    for index in range(15):
        round_, cell = divmod(index, 3)
        noise = 0.002 * (-1) ** index * (index % 4)  # residuals to estimate the noise from
        runs.append({"name": f"s-c{cell}-r{round_ + 1}", "cell": f"c{cell}", "repetition": round_ + 1,
                     "phase": "Succeeded", "startTime": f"2026-01-01T01:{index:02d}:00Z",
                     "results": results(1000 * math.exp(per_run * index + noise))})
    comparison = [{"subject": "index", "metric": "throughput.median", "family": "primary", "cells": [
        {"cell": "c0", "verdict": "Baseline", "n": 5},
        *({"cell": cell, "verdict": verdict, "n": 5, "changePercent": change, "changeLowPercent": low,
           "changeHighPercent": high} for cell, (verdict, change, low, high) in changes.items())]}]
    status = {"baseline": "c0", "runs": runs, "comparison": comparison,
              "cells": [{"id": f"c{i}", "values": {"workload.trackParams.bulk": i + 1}, "baseline": i == 0 or None}
                        for i in range(3)]}
    path = tmp_path / "sweep" / "sweep.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"metadata": {"name": "s"}, "spec": spec, "status": status}))
    return path


def test_drift_between_rounds_gives_the_bias_of_the_cells_positions_and_says_which_verdict_it_explains(tmp_path):
    # 3 % a run: 9.3 % a round of three runs; the last cell raced two runs after the baseline.
    sweep = figures.Sweep(_drifting_sweep(tmp_path, 0.03, {
        "c1": ("Better", 10.0, 8.0, 12.0), "c2": ("Better", 6.2, 5.0, 7.4)}))
    order = figures.Order(sweep)
    assert [order.position(cell) for cell in ("c0", "c1", "c2")] == [0, 1, 2]
    drift = order.drift("c2", "index", "throughput.median")
    assert drift.runs == 15 and drift.low < 0.09 < drift.high and abs(drift.estimate - 0.09) < 0.005
    rows = [line for line in figures.order_of_cells(sweep, order) if line.startswith("| index ")]
    assert rows[0].endswith("| no |")  # a bias of +3.0 % against an interval from +8 %
    assert rows[1].endswith("| yes |")  # +6.2 % of bias: the whole change
    assert "0 → 2 of 3" in rows[1]


def test_a_bias_against_the_effect_or_far_short_of_its_interval_explains_nothing():
    bias = lambda estimate, low, high: figures.Slope(math.log1p(estimate / 100), math.log1p(low / 100),  # noqa: E731
                                                     math.log1p(high / 100), 10)
    explain = figures.could_order_explain
    assert explain("Better", (27.4, 17.0, 38.7), bias(4.2, 2.6, 5.9), 5) == "no"
    assert explain("Worse", (-12.6, -19.7, -4.9), bias(-1.0, -1.8, -0.2), 5) == "no"
    assert explain("Worse", (-12.6, -19.7, -4.9), bias(-3.0, -6.0, 0.0), 5) == "partly"
    assert explain("Worse", (-12.6, -19.7, -4.9), bias(-5.0, -8.0, -2.0), 5) == "yes"
    assert explain("Worse", (-12.6, -19.7, -4.9), bias(+5.0, +2.0, +8.0), 5) == "no"  # against the effect
    assert explain("Equivalent", (0.0, -2.0, 2.0), bias(1.0, 0.5, 1.5), 5) == "no"
    assert explain("Equivalent", (0.0, -2.0, 2.0), bias(1.0, -4.0, 1.5), 5) == "partly"
    assert explain("Equivalent", (0.0, -2.0, 2.0), bias(-4.0, -5.0, -3.0), 5) == "yes"
    assert explain("Inconclusive", (5.0, -2.0, 12.0), bias(1.0, 0.5, 1.5), 5) == "no verdict"


def test_a_paired_comparison_counts_the_rounds_it_paired_not_the_contenders_runs(tmp_path):
    """A sweep stopped within a round: the contender has a run the baseline's round lacks."""
    path = _drifting_sweep(tmp_path, 0.0, {"c1": ("Inconclusive", -56.8, -82.2, 4.5)})
    document = json.loads(path.read_text())
    document["status"]["comparison"][0]["cells"][1].update(n=3, pairs=2)
    path.write_text(json.dumps(document))
    sweep = figures.Sweep(path)
    [row] = [line for line in figures.comparisons(sweep, document["status"]["comparison"], None) if "| index |" in line]
    assert row.split("|")[5].strip() == "2", row
