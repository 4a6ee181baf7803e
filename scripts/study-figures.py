#!/usr/bin/env python3
"""Writes each seed study's figures from its result files: examples/studies/*/results/figures.md.

For every sweep of a study (results/*/sweep.json): its regime as its runs recorded it, its
primary questions' verdicts, its contrasts, the other comparisons its README quotes, and per
counted run the figures its README quotes as ranges, and whether the order of its runs could have
made a verdict (its Order section); then the study's single races
(results/*.json) and, where a study has one, its page-cache residency file (fincore samples, cut
by each task's window). A README quotes these tables; tests/unit/test_study_figures.py fails when
a figure with an interval in a README is not in its study's figures.md, or a figures.md is stale.

    .venv/bin/python scripts/study-figures.py            # make figures
    .venv/bin/python scripts/study-figures.py --check    # writes nothing, exits 1 naming stale files
"""

from __future__ import annotations

import json
import math
import re
import statistics
import sys
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from esbench.analysis import compare, stats
from esbench.api import models
from esbench.planning import grid, sweepstate

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "examples" / "studies"
FIGURES = "figures.md"

# A figure with its 95 % interval as the READMEs write it: "+145.1 % [+45.0, +314.3]", or the
# interval alone, "**[+17, +39]**". Groups: the change (optional), the low and high limits.
_NUMBER = r"[-+]?\d[\d,]*(?:\.\d+)?"
INTERVAL = re.compile(rf"(?:({_NUMBER}) ?% ?)?\**\[({_NUMBER}) ?%?, ({_NUMBER}) ?%?\]")



def intervals(text: str) -> list[tuple[str, list[float | None], int]]:
    """Every figure with an interval in a text: as written, its (change, low, high), the decimals written."""
    found = []
    text = "\n".join(re.sub(r"^\s*>\s?", "", line) for line in text.splitlines())  # a quote's lines too
    for match in INTERVAL.finditer(" ".join(text.split())):
        written = [group.replace(",", "") if group else None for group in match.groups()]
        decimals = max(len(g.partition(".")[2]) for g in written if g)
        found.append((match.group(0).strip("*"), [float(g) if g else None for g in written], decimals))
    return found


# Figures with an interval that a README quotes but no file in results/ holds: where each comes from.
# figures.md lists them under their own heading; the test holds the README to them like to the rest.
_JIT = "computed afterwards from results/sweep/runs (node CPU net of idle less `jit_cpu.time`, paired by race, Benjamini-Hochberg over six), not by this script"
_CROSSOVER = "computed afterwards from results/sweep-integer-range/runs (statsmodels OLS of the log ratio on the order, the AB/BA crossover model, raw intervals), not by this script"
NOT_FROM_RESULTS: dict[str, dict[str, str]] = {
    "001-range-queries-cpu": {
        "+11.3 % [+0.8, +23.0]": _CROSSOVER, "+1.2 % [-7.0, +10.0]": _CROSSOVER,
        "+10.2 % [-0.2, +21.7]": _CROSSOVER, "+10.2 % [+1.3, +19.8]": _CROSSOVER,
        "+7.9 % [-0.6, +17.1]": _JIT, "-0.7 % [-14.1, +14.9]": _JIT, "+57.6 % [+43.1, +73.5]": _JIT,
        "+59.0 % [+45.6, +73.6]": _JIT, "+62.4 % [+53.0, +72.4]": _JIT, "+65.4 % [+51.2, +80.9]": _JIT,
        **dict.fromkeys(("+8.0 % [-9.5, +28.9]", "-2.8 % [-18.7, +16.1]", "+65.0 % [+30.9, +108.1]",
                         "+75.4 % [+37.4, +123.9]", "+78.1 % [+42.7, +122.3]", "+77.3 % [+41.4, +122.3]",
                         "-2.0 % [-13.4, +10.8]"), "the previous sweep of 2026-11-28 03:34 (each form 20 s first), results in git history at 142bf3e"),
        **dict.fromkeys(("+80.7 % [-30.6, +370.8]", "+61.8 % [-30.5, +276.7]"), "the sweep of 2026-11-28 00:30 without warm-up tasks, results in git history at 112e283"),
    },
    "002-best-compression-io": {
        **dict.fromkeys(("+99.2 % [-29.4, +461.9]", "+109.0 % [-28.0, +506.4]", "[-75.3, +958.8]"), "sweep-map.yaml's first run (2026-11-29 00:41, corpus writeback), results in git history at 266a069"),
        **dict.fromkeys(("+63.5 % [-50.6, +441.6]", "+86.3 % [-44.4, +524.0]", "-85.0 % [-96.6, -33.5]"), "sweep-map-40kb-3600mi.yaml's first run (2026-11-29 04:53, corpus writeback), results in git history at e8df0ff"),
    },
    "004-indexing-curves": {
        **dict.fromkeys(("+9.7 % [-11.8, +36.3]", "+18.7 % [-8.3, +53.5]", "+16.4 % [-4.5, +41.9]"), "curve-bulk-size.yaml's first run (2026-11-27, corpus writeback), results in git history at 04a6ff0"),
        **dict.fromkeys(("+5.9 % [-15.4, +32.5]", "+12.2 % [-25.2, +68.4]", "-16.8 % [-48.5, +34.3]",
                         "-30.6 % [-51.7, -0.3]"), "curve-clients.yaml's first run (2026-11-27, corpus writeback), results in git history at 04a6ff0"),
        **dict.fromkeys(("+27.2 % [-9.6, +79.1]", "+21.5 % [-14.2, +72.1]"), "curve-refresh.yaml's first run (2026-11-27, corpus writeback, a faster host), results in git history at 04a6ff0"),
    },
}

# The comparisons a study's README quotes beyond each sweep's primary questions and contrasts:
# these metrics, for every task that has them, in every sweep of the study.
QUOTED = {
    "001-range-queries-cpu": ("process_cpu.net_time",),
    "002-best-compression-io": ("service_time.p50", "latency.p99", "process_cpu.time", "io.read_bytes",
                                "io.read_operations", "page_faults.major", "page_cache.mean", "store_size"),
    "004-indexing-curves": ("service_time.p50", "segment_count", "refresh_time", "store_size"),
}
# Figures a README quotes per run (their ranges and each round's value), beside the primary
# questions' metrics: (tasks, metric), the tasks a regular expression.
PER_RUN = {
    "000-source-filtering": (("paginate-.*", "service_time.p50"), ("paginate-.*", "io.read_bytes"),
                             ("paginate-.*", "io.write_bytes"), ("paginate-.*", "page_cache.mean"),
                             ("paginate-.*", "index_resident.percent")),
    "001-range-queries-cpu": ((".*", "process_cpu.percent"), (".*", "throughput.median"), (".*", "jit_cpu.share"),
                              ("idle", "idle.cpu_ms_per_second")),
    "002-best-compression-io": (("random-.*|count-errors", "service_time.p50"),
                                ("random-.*|count-errors", "throughput.median"),
                                ("random-.*|count-errors", "page_cache.mean"),
                                ("random-.*|count-errors", "io.write_bytes"),
                                ("random-.*", "page_faults.major"), ("random-.*", "index_resident.percent"),
                                ("random-hits", "fdt_resident.bytes")),
    "004-indexing-curves": (("index-append", "window.seconds"), ("index-append", "service_time.p50"),
                            ("index-append", "process_cpu.percent"), ("index-append", "error_rate"),
                            ("index-append", "io.write_bytes"), ("cluster", "store_size"),
                            ("cluster", "segment_count"), ("cluster", "merge_time")),
}
# Questions a README asks of a sweep's runs beyond the sweep's own, each variant task against a
# baseline task of the same race, paired by race on the logarithms (exploratory, uncorrected):
# (sweep folder, metric, baseline task, variant task).
PAIRED = {
    "000-source-filtering": tuple((sweep, "service_time.p50", f"paginate-source-{field}", f"paginate-fields-{field}")
                                  for sweep in ("sweep", "sweep-fixed-order") for field in ("title", "body")),
}
# The tasks whose per-run figures are left out: a warm-up or a build step, not a measurement.
SKIPPED_TASKS = re.compile(r"^(warm-up-|delete-|create-|cluster-health|refresh|force-merge|flush|restore|wait-)")


# --- reading -----------------------------------------------------------------------------------


def _values(results: models.Results, raw: dict[str, Any]) -> dict[tuple[str, str], float]:
    """Every figure of one run by (task or cluster/nodes, metric): esbench's own, and a few derived."""
    found = {(m.subject, m.metric.key): m.value for m in compare.measurements(results) if m.value is not None}
    for task in results.tasks:
        resources = task.resources
        if resources is None:
            continue
        found[(task.task, "window.seconds")] = resources.seconds
        if resources.jit_cpu_ms is not None and resources.process_cpu_ms:
            found[(task.task, "jit_cpu.share")] = 100 * resources.jit_cpu_ms / resources.process_cpu_ms
        files = resources.index_files or {}
        size = sum(f.size_bytes for f in files.values())
        if size:
            found[(task.task, "index_resident.percent")] = 100 * sum(f.cached_bytes for f in files.values()) / size
        if "fdt" in files:
            found[(task.task, "fdt_resident.bytes")] = files["fdt"].cached_bytes
    idle = raw.get("idle") or {}
    if idle.get("processCpuMsPerSecond") is not None:
        found[("idle", "idle.cpu_ms_per_second")] = idle["processCpuMsPerSecond"]
    return found


class Sweep:
    """One sweep's status as `esbench run` left it in results/FOLDER/sweep.json."""

    def __init__(self, path: Path):
        self.folder = path.parent.name
        document = json.loads(path.read_text())
        self.name = document["metadata"]["name"]
        self.spec = document["spec"]
        self.status = document["status"]
        self.cells = {cell["id"]: cell for cell in self.status["cells"]}
        self.runs = [run for run in self.status.get("runs") or []
                     if run.get("phase") == "Succeeded" and run.get("results")]
        self.values = {run["name"]: _values(models.Results.model_validate(run["results"]), run["results"])
                       for run in self.runs}

    def counted(self, cell: str) -> list[dict[str, Any]]:
        return sorted((run for run in self.runs if run["cell"] == cell), key=lambda run: run["repetition"])

    def warm_ups(self) -> list[dict[str, Any]]:
        return [run for run in self.runs if run["cell"] not in self.cells]

    def label(self, cell: str) -> str:
        values = self.cells[cell].get("values") or {}
        return ", ".join(_short(value) for value in values.values()) or self.cells[cell].get("label") or cell

    def baseline_of(self, cell: str) -> str:
        """The baseline a cell is compared with: the one that shares its compareWithin values."""
        within = self.spec.get("compareWithin") or []
        values = self.cells[cell].get("values") or {}
        for other in self.cells.values():
            if other.get("baseline") and all((other.get("values") or {}).get(f) == values.get(f) for f in within):
                return other["id"]
        return self.status["baseline"]


def _short(value: Any) -> str:
    """A cell's value as people name it: a dict of resources by its memory limit, others as written."""
    if isinstance(value, dict):
        limits = value.get("limits") or value.get("requests") or {}
        if "memory" in limits:
            return str(limits["memory"])
        return json.dumps(value, sort_keys=True)
    if isinstance(value, list):
        return "/".join(str(v) for v in value)
    return str(value)


# --- formatting ----------------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f} %"


def change(cell: dict[str, Any]) -> str:
    if cell.get("changeLowPercent") is None:
        return pct(cell.get("changePercent"))
    text = f"{cell['changePercent']:+.1f} % [{cell['changeLowPercent']:+.1f}, {cell['changeHighPercent']:+.1f}]"
    excludes = cell["changeLowPercent"] > 0 or cell["changeHighPercent"] < 0
    return f"**{text}**" if excludes else text


def uncorrected(cell: dict[str, Any]) -> str:
    low, high = cell.get("rawChangeLowPercent"), cell.get("rawChangeHighPercent")
    return "" if low is None or high is None else f"[{low:+.1f}, {high:+.1f}]"


def p(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def figure(value: float, metric: str) -> str:
    """A value in the unit people read it in: bytes as GB or MiB, times in ms or s, shares in %."""
    if metric.startswith("io.") and metric.endswith("bytes"):
        return f"{value / 1e9:.2f} GB"
    if metric.endswith(".bytes") or metric in ("page_cache.mean", "heap_used.mean"):
        return f"{value / 2**20:,.0f} MiB"
    if metric == "store_size":
        return f"{value / 2**20:,.1f} MiB"
    if metric.endswith(("percent", "share")):
        return f"{value:.1f} %"
    if metric == "error_rate":
        return f"{100 * value:.1f} %"
    if metric == "window.seconds":
        return f"{value:.1f} s"
    unit = " ms" if metric.startswith(("latency.", "service_time.")) or metric.endswith("time") else ""
    unit = "/s" if metric in ("throughput.median", "indexed_rate") else unit
    return (f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}") + unit


def span(values: list[float], metric: str) -> str:
    low, high = figure(min(values), metric), figure(max(values), metric)
    return low if low == high else f"{low} - {high}"


def table(header: Iterable[str], rows: Iterable[Iterable[Any]]) -> list[str]:
    header = list(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _time(text: str | None) -> str:
    return text.replace("T", " ").rstrip("Z")[:16] if text else "?"


def _minutes(start: str | None, end: str | None) -> str:
    if not start or not end:
        return "?"
    parse = lambda t: datetime.fromisoformat(t.replace("Z", "+00:00"))  # noqa: E731
    return f"{(parse(end) - parse(start)).total_seconds() / 60:.0f} min"


# --- sections ------------------------------------------------------------------------------------


def regime(sweep: Sweep) -> list[str]:
    """What the runs recorded about their node and index, per cell: the regime as measured."""
    rows = []
    for cell in sweep.cells:
        runs = sweep.counted(cell)
        if not runs:
            continue
        environment = [run["results"].get("environment") or {} for run in runs]
        nodes = [node for env in environment for node in env.get("nodes") or []]
        versions = sorted({f"{env.get('elasticsearchVersion', '?')} (Lucene {env.get('luceneVersion', '?')})"
                           for env in environment})
        heap = sorted({f"{node['heapMaxBytes'] / 2**20:.0f} MiB" for node in nodes if node.get("heapMaxBytes")})
        limit = sorted({f"{node['cgroupMemoryLimitBytes'] / 2**20:.0f} MiB" for node in nodes
                        if node.get("cgroupMemoryLimitBytes")})
        processors = sorted({str(node.get("availableProcessors")) for node in nodes})
        mmap = sorted({"on" if node.get("mmap") else "off" for node in nodes if "mmap" in node})
        indices = [index for run in runs for index in run["results"].get("indices") or []]
        missing = sum(1 for run in runs if not run["results"].get("indices"))
        if indices:
            documents = sorted({f"{index['documents']:,}" for index in indices})
            segments = sorted({f"{index['segments']} ({index.get('compoundSegments', 0)} compound)" for index in indices})
            modes = sorted({f"{k} {'/'.join(v)}" for index in indices for k, v in (index.get("attributes") or {}).items()})
            sizes = [index["sizeBytes"] for index in indices]
            layout = (f"{'/'.join(documents)} documents, segments {'/'.join(segments)}, "
                      f"{span(sizes, 'store_size')}{', ' + '; '.join(modes) if modes else ''}")
            if missing:
                layout += f"; not recorded in {missing} of {len(runs)} runs"
        else:
            layout = f"not recorded (`results.indices` empty in all {len(runs)} runs)"
        rows.append((sweep.label(cell), len(runs), "/".join(versions), "/".join(processors), "/".join(heap),
                     "/".join(limit) or "not recorded", "/".join(mmap) or "not recorded", layout))
    return table(("cell", "runs", "Elasticsearch", "processors", "heap", "memory limit", "mmap",
                  "index (`results.indices`)"), rows)


def _family(sweep: Sweep, family: str, corrections: dict[str, Any] | None) -> str:
    found = (corrections or {}).get(family)
    if not found:
        return f"{family} (correction not recorded)"
    return f"{family} ({found['correction']} over {found['comparisons']})"


def comparisons(sweep: Sweep, rows: list[dict[str, Any]], corrections: dict[str, Any] | None) -> list[str]:
    lines = []
    for row in rows:
        for cell in row["cells"]:
            if cell.get("changeLowPercent") is None:
                continue
            lines.append((sweep.label(cell["cell"]), sweep.label(sweep.baseline_of(cell["cell"])), row["subject"],
                          row["metric"], cell.get("pairs") or cell["n"], change(cell), uncorrected(cell),
                          p(cell.get("pAdjusted")), cell.get("verdict", ""), _family(sweep, row["family"], corrections)))
    return table(("cell", "against", "task", "metric", "n", "change [95 % interval]", "uncorrected", "p adjusted",
                  "verdict", "family (correction over comparisons)"), lines)


def contrasts(sweep: Sweep) -> list[str]:
    lines = []
    for found in sweep.status.get("contrasts") or []:
        for row in found["rows"]:
            for cell in row["cells"]:
                if cell.get("changePercent") is None:
                    continue
                lines.append((sweep.label(found["cell"]), f"{found['name']}: {cell['cell']}", found["baseline"],
                              row["metric"], cell["n"], change(cell), uncorrected(cell), p(cell.get("pAdjusted")),
                              cell.get("verdict", ""), _family(sweep, row["family"], found.get("corrections"))))
    return table(("cell", "contrast: variant", "against", "metric", "n", "change [95 % interval]", "uncorrected",
                  "p adjusted", "verdict", "family (correction over comparisons)"), lines) if lines else []


def per_run(sweep: Sweep, wanted: list[tuple[str, str]]) -> list[str]:
    rounds = sorted({run["repetition"] for run in sweep.runs if run["cell"] in sweep.cells})
    subjects = sorted({subject for values in sweep.values.values() for subject, _ in values})
    lines = []
    for task, metric in wanted:
        for subject in (s for s in subjects if re.fullmatch(task, s) and not SKIPPED_TASKS.match(s)):
            for cell in sweep.cells:
                by_round = {run["repetition"]: sweep.values[run["name"]].get((subject, metric))
                            for run in sweep.counted(cell)}
                values = [v for v in by_round.values() if v is not None]
                if not values:
                    continue
                lines.append((subject, metric, sweep.label(cell), len(values), figure(statistics.median(values), metric),
                              span(values, metric),
                              *(figure(by_round[r], metric) if by_round.get(r) is not None else "" for r in rounds)))
    warm = [(run["name"], values) for run in sweep.warm_ups() for values in [sweep.values[run["name"]]]]
    if not lines:
        return []
    out = table(("task", "metric", "cell", "n", "median", "range", *(f"round {r}" for r in rounds)), lines)
    if warm:
        out.insert(0, "Counted runs only; the warm-up runs (" + ", ".join(name for name, _ in warm)
                   + ") are left out.\n")
    return out


def paired_afterwards(study: str, sweep: Sweep) -> list[str]:
    rows = []
    for folder, metric, baseline, variant in PAIRED.get(study, ()):
        if folder != sweep.folder:
            continue
        for cell in sweep.cells:
            pairs = [(values.get((baseline, metric)), values.get((variant, metric)))
                     for values in (sweep.values[run["name"]] for run in sweep.counted(cell))]
            logs = [math.log(b / a) for a, b in pairs if a and b]
            if len(logs) < 2:
                continue
            shift = stats.paired(logs)
            low, high = shift.interval(0.05)
            percent = lambda x: 100 * (math.exp(x) - 1)  # noqa: E731
            rows.append((sweep.label(cell), variant, baseline, metric, len(logs),
                         f"{percent(shift.estimate):+.1f} % [{percent(low):+.1f}, {percent(high):+.1f}]",
                         p(shift.p_value)))
    if not rows:
        return []
    return ["### Paired afterwards (exploratory: uncorrected 95 % intervals, paired by race)", "",
            *table(("cell", "variant", "against", "metric", "n", "change [95 % interval]", "p"), rows)]


# --- order: could drift within a round have made a verdict? -------------------------------------
# Under `order: Interleaved` the cells race in their own order in every round, so a node that
# drifts run by run within a round (still warming up, a page cache filling) gives each cell a
# fixed share of that drift, which pairing by round does not cancel and no test can tell from an
# effect (esbench.analysis.ordereffect: Confounded). What the runs do show is the drift from one
# round to the next; spread evenly over a round's runs, it says how large that bias could be.


class Slope(NamedTuple):
    """A fitted change of the figure's logarithm per step of its covariate, with its interval."""

    estimate: float
    low: float
    high: float
    runs: int


def fit_slope(points: list[tuple[tuple[Any, ...], float, float]], confidence: float) -> Slope | None:
    """Least squares of y on a level per value of each factor and one covariate x, for points
    (factors, x, y): the covariate's coefficient with its t interval, or None when the factors
    already explain x (confounded) or nothing is left to estimate the noise."""
    import numpy as np  # late, as esbench.analysis.stats loads it

    if not points:
        return None
    columns = [[1.0] * len(points)]
    for factor in range(len(points[0][0])):
        levels = sorted({str(levels[factor]) for levels, _, _ in points})
        columns += [[float(str(levels_[factor]) == level) for levels_, _, _ in points] for level in levels[1:]]
    nuisance = np.array(columns).T
    design = np.column_stack([nuisance, [x for _, x, _ in points]])
    rank = np.linalg.matrix_rank(design)
    df = len(points) - rank
    if rank == np.linalg.matrix_rank(nuisance) or df < 1:
        return None
    y = np.array([y for _, _, y in points])
    coefficients, _, _, _ = np.linalg.lstsq(design, y, rcond=None)
    residuals = y - design @ coefficients
    se = math.sqrt(max(float(residuals @ residuals) / df * float(np.linalg.pinv(design.T @ design)[-1, -1]), 0.0))
    low, high = stats.t_shift(float(coefficients[-1]), se, df, 0.0).interval(round(1 - confidence, 12))
    return Slope(float(coefficients[-1]), low, high, len(points))


def scaled(slope: Slope, factor: float) -> Slope:
    """The slope times a factor (a share of a round, a difference of positions), its interval too."""
    low, high = sorted((slope.low * factor, slope.high * factor))
    return Slope(slope.estimate * factor, low, high, slope.runs)


def could_order_explain(verdict: str, change: tuple[float, float, float], bias: Slope | None,
                        margin_percent: float) -> str:
    """Could a bias (log scale) have produced the verdict on a change (%, with its interval)?

    Better/Worse: yes when the bias reaches the interval's near end in the effect's direction (the
    interval less the bias would include no change), partly when only its interval's far end does,
    no otherwise. Equivalent: the same question of the interval less the bias leaving +-margin.
    """
    if bias is None:
        return "not measured"
    logs = [math.log1p(value / 100) for value in change]
    if verdict in ("Better", "Worse"):
        near = logs[1] if logs[0] > 0 else logs[2]
        sign = 1 if logs[0] > 0 else -1
        if sign * bias.estimate >= sign * near:
            return "yes"
        return "partly" if max(sign * bias.low, sign * bias.high) >= sign * near else "no"
    if verdict == "Equivalent":
        low, high = math.log1p(-margin_percent / 100), math.log1p(margin_percent / 100)
        leaves = lambda shift: logs[1] - shift < low or logs[2] - shift > high  # noqa: E731
        if leaves(bias.estimate):
            return "yes"
        return "partly" if leaves(bias.low) or leaves(bias.high) else "no"
    return "no verdict"


def _log_pct(value: float) -> str:
    return f"{math.expm1(value) * 100:+.1f} %"


def _slope_text(slope: Slope | None) -> str:
    if slope is None:
        return "not measured"
    percent = lambda value: math.expm1(value) * 100 + 0.0  # noqa: E731  (+ 0.0: no "-0.0" from a zero shift)
    return f"{percent(slope.estimate):+.1f} % [{percent(slope.low):+.1f}, {percent(slope.high):+.1f}]"


def _direction(metric: str, slope: Slope | None) -> str:
    found = compare.metric_named(metric)
    if slope is None or found is None or abs(math.expm1(slope.estimate)) < 0.0005:  # +-0.0 % as written
        return ""
    higher = found.direction == compare.Direction.HIGHER_IS_BETTER
    return " (better)" if (slope.estimate > 0) == higher else " (worse)"


def _started(run: dict[str, Any]) -> str:
    return run.get("startTime") or ""


class Order:
    """Where each counted run raced in its round on its cluster, by the sweep's own plan."""

    def __init__(self, sweep: Sweep):
        self.sweep = sweep
        self.spec = models.SweepSpec.model_validate(sweep.spec)
        plan = grid.plan(self.spec, sweep.name, "local")
        self.positions = sweepstate.positions(plan, self.spec.cluster_reuse)
        shared = lambda cell: self.spec.cluster_reuse or "target" in cell.spec  # noqa: E731
        # None: a cluster of its own for every run, nothing raced before a run on its node.
        self.cluster = {cell.id: grid.cluster_key(cell.spec) if shared(cell) else None for cell in plan.cells}

    def cells_with(self, cell: str) -> list[str]:
        return [other for other, key in self.cluster.items() if key is not None and key == self.cluster[cell]]

    def position(self, cell: str) -> int | None:
        found = {self.positions[(run["cell"], run["repetition"])] for run in self.sweep.counted(cell)}
        return found.pop() if len(found) == 1 else None

    def disagreements(self) -> list[str]:
        """Rounds whose start times put the runs in another order than the plan's."""
        found = []
        for key in dict.fromkeys(k for k in self.cluster.values() if k is not None):
            runs = [run for cell, k in self.cluster.items() if k == key for run in self.sweep.counted(cell)]
            for round_ in sorted({run["repetition"] for run in runs}):
                raced = sorted((run for run in runs if run["repetition"] == round_), key=_started)
                planned = sorted(raced, key=lambda run: self.positions[(run["cell"], round_)])
                if [run["cell"] for run in raced] != [run["cell"] for run in planned]:
                    found.append(f"round {round_}: raced {', '.join(run['cell'] for run in raced)}")
        return found

    def drift(self, cell: str, task: str, metric: str) -> Slope | None:
        """The figure's change from one round to the next on this cell's cluster, a level per cell;
        rounds ranked by when they raced (a round run again later counts where it raced)."""
        runs = [run for other in self.cells_with(cell) for run in self.sweep.counted(other)]
        rounds = {}
        for run in runs:
            rounds[run["repetition"]] = min(rounds.get(run["repetition"], _started(run)), _started(run))
        rank = {round_: index for index, round_ in enumerate(sorted(rounds, key=lambda r: (rounds[r], r)))}
        points = [((run["cell"],), float(rank[run["repetition"]]), math.log(value))
                  for run in runs for value in [self.sweep.values[run["name"]].get((task, metric))]
                  if value is not None and value > 0]
        return fit_slope(points, self.spec.statistics.confidence)


def _verdict_text(cell: dict[str, Any]) -> str:
    return f"{cell.get('verdict')} {change(cell).strip('*')}"


def order_of_cells(sweep: Sweep, order: Order) -> list[str]:
    rows = []
    margin = order.spec.statistics.noise_threshold_percent
    for row in (r for r in sweep.status.get("comparison") or [] if r.get("family") == "primary"):
        for cell in row["cells"]:
            if cell.get("changeLowPercent") is None or cell.get("verdict") == "Baseline":
                continue
            name, baseline = cell["cell"], sweep.baseline_of(cell["cell"])
            if order.cluster[name] is None or order.cluster[name] != order.cluster[baseline]:
                rows.append((row["subject"], row["metric"], sweep.label(name), sweep.label(baseline),
                             "own clusters", "", "", "", _verdict_text(cell), "", "",
                             "no node shared" if cell.get("verdict") != "Inconclusive" else "no verdict"))
                continue
            ours, theirs = order.position(name), order.position(baseline)
            per_round = order.drift(name, row["subject"], row["metric"])
            per_run = len(order.cells_with(name))
            per_position = scaled(per_round, 1 / per_run) if per_round else None
            bias = scaled(per_position, ours - theirs) if per_position and None not in (ours, theirs) else None
            figures = (cell["changePercent"], cell["changeLowPercent"], cell["changeHighPercent"])
            rest = needed = ""
            if bias and cell.get("verdict") in ("Better", "Worse"):
                near = figures[1] if figures[0] > 0 else figures[2]
                rest = _log_pct(math.log1p(near / 100) - bias.estimate)
                # Free of the pace hypothesis: how fast the node must drift within a round to make it.
                needed = _log_pct(math.log1p(near / 100) / (ours - theirs)) if ours != theirs else "any"
            rows.append((row["subject"], row["metric"], sweep.label(name), sweep.label(baseline),
                         f"{theirs} → {ours} of {per_run}",
                         f"{_slope_text(per_round)}{_direction(row['metric'], per_round)}, "
                         f"{per_round.runs if per_round else 0} runs",
                         _slope_text(per_position), _slope_text(bias), _verdict_text(cell), rest, needed,
                         could_order_explain(cell.get("verdict", ""), figures, bias, margin)))
    if not rows:
        return []
    lines = table(("task", "metric", "cell", "against", "position: baseline → cell", "drift a round [95 %]",
                   "drift a position", "bias from the order [95 %]", "verdict [95 %]", "near end less the bias",
                   "drift a position that would make it", "could the order have made it?"), rows)
    disagreeing = order.disagreements()
    if not any(order.cluster.values()):
        where = (": a cluster of its own for every run, so no run raced before another on its node (they still "
                 "followed one another on one host, a drift of which this does not measure).")
    elif disagreeing:
        where = "; the runs' start times differ in " + "; ".join(disagreeing) + "."
    else:
        where = "; the runs' start times agree in every round."
    return [f"Positions from the sweep's own plan (`order: {order.spec.order.value}`, "
            f"`clusterReuse: {str(order.spec.cluster_reuse).lower()}`), counted runs only{where} {CELLS_NOTE}",
            "", *lines]


def _task_started(run: dict[str, Any], task: str) -> str | None:
    return next((t.get("start") for t in run["results"]["tasks"] if t["task"] == task), None)


def order_of_tasks(sweep: Sweep, order: Order) -> list[str]:
    """Contrasts compare tasks of one race: the same question one level down, the position of a
    task in its race (by the tasks' start times), its drift fitted with a level per task and per
    race, which a task order that changes from round to round makes measurable."""
    rows = []
    margin = order.spec.statistics.noise_threshold_percent
    for found in sweep.status.get("contrasts") or []:
        runs = sweep.counted(found["cell"])
        for row in found["rows"]:
            tasks = [cell["cell"] for cell in row["cells"]]
            placed = {}
            for run in runs:
                started = sorted((s, t) for t in tasks if (s := _task_started(run, t)))
                placed[run["name"]] = {task: index for index, (_, task) in enumerate(started)}
            points = [((task, run["repetition"]), float(placed[run["name"]][task]), math.log(value))
                      for run in runs for task in tasks
                      for value in [sweep.values[run["name"]].get((task, row["metric"]))]
                      if value is not None and value > 0 and task in placed[run["name"]]]
            per_position = fit_slope(points, order.spec.statistics.confidence)
            for cell in row["cells"]:
                if cell.get("verdict") in (None, "Baseline") or cell.get("changeLowPercent") is None:
                    continue
                shifts = [placed[run["name"]][cell["cell"]] - placed[run["name"]][found["baseline"]]
                          for run in runs if {cell["cell"], found["baseline"]} <= set(placed[run["name"]])]
                mean_shift = statistics.fmean(shifts) if shifts else 0.0
                # A task order that never changes leaves no drift to measure, and no bias if balanced.
                bias = scaled(per_position, mean_shift) if per_position else Slope(0.0, 0.0, 0.0, 0) if not any(
                    shifts) else None
                figures = (cell["changePercent"], cell["changeLowPercent"], cell["changeHighPercent"])
                rows.append((cell["verdict"] != "Inconclusive", sweep.label(found["cell"]), cell["cell"],
                             found["baseline"], row["metric"],
                             " ".join(f"{s:+d}" for s in shifts), f"{mean_shift:+.1f}",
                             f"{_slope_text(per_position)}, {per_position.runs if per_position else 0} figures"
                             if per_position else "confounded (one order)",
                             _slope_text(bias) if per_position else "", _verdict_text(cell),
                             could_order_explain(cell["verdict"], figures, bias, margin)
                             if bias else "cannot tell: one order"))
    # Inconclusive rows only where no row has a verdict: the order can have made none of theirs.
    rows = [row[1:] for row in rows if row[0]] or [row[1:] for row in rows]
    if not rows:
        return []
    return ["Contrasts compare tasks of one race: a task's position among them (by the tasks' start times) "
            "plays the part of a cell's; the drift a position is fitted over the tasks of each row, a level per "
            "task and per race (confounded when every race ran them in one order).", "",
            *table(("cell", "variant", "against", "metric", "positions: variant less baseline, by round",
                    "mean", "drift a position [95 %]", "bias from the order [95 %]", "verdict [95 %]",
                    "could the order have made it?"), rows)]


ORDER_RULE = (
    "Could drift within a round have made a verdict? The bias from the order is the difference of positions "
    "times the drift a position: the change that drift alone would give. Yes: the bias reaches the verdict "
    "interval's near end (the interval less the bias would include no change; for Equivalent, would leave the "
    "margin); partly: only the bias's own 95 % interval does; no: neither.")
CELLS_NOTE = (
    "Each row's drift a round is the slope of the figure's logarithm on the round (ranked by when it raced), "
    "fitted over the counted runs of the cells on that cluster with a level per cell; the drift a position is that "
    "divided by the runs a round on the cluster. That assumes the node drifts within a round at the pace it drifts "
    "between rounds, run by run: a hypothesis, since position and cell cannot be told apart in these runs (a node "
    "may warm up faster in its first runs). The drift a position that would make a verdict needs no such "
    "hypothesis: the near end of its interval divided by the difference of positions.")


def order_section(sweep: Sweep) -> list[str]:
    order = Order(sweep)
    cells, tasks = order_of_cells(sweep, order), order_of_tasks(sweep, order)
    if not cells and not tasks:
        return []
    return ["### Order", "", ORDER_RULE, "", *cells, *tasks]


def sweep_section(study: str, sweep: Sweep) -> list[str]:
    status = sweep.status
    lines = [f"## results/{sweep.folder}/ ({sweep.name})", "",
             f"{_time(status.get('startTime'))} to {_time(status.get('completionTime'))} UTC "
             f"({_minutes(status.get('startTime'), status.get('completionTime'))}), {len(sweep.runs)} runs "
             f"({len(sweep.warm_ups())} warm-up), {sweep.spec.get('repetitions')} repetitions per cell, "
             f"paired by round: {'yes' if (sweep.spec.get('statistics') or {}).get('paired') else 'no'}; "
             f"phase {status.get('phase')}.", "", "### Regime, as the runs recorded it", "", *regime(sweep)]
    comparison = status.get("comparison") or []
    primary = [row for row in comparison if row.get("family") == "primary"]
    if primary:
        lines += ["### Primary questions", "", *comparisons(sweep, primary, status.get("corrections"))]
    found = contrasts(sweep)
    if found:
        lines += ["### Contrasts (each variant against the baseline task of the same race)", "", *found]
    lines += paired_afterwards(study, sweep)
    quoted = [row for row in comparison if row.get("family") != "primary" and row["metric"] in QUOTED.get(study, ())]
    quoted = [row for row in quoted if any(cell.get("changeLowPercent") is not None for cell in row["cells"])]
    if quoted:
        lines += ["### Other comparisons the README quotes", "", *comparisons(sweep, quoted, status.get("corrections"))]
    wanted = [(row["subject"], row["metric"]) for row in primary]
    wanted += [pair for pair in PER_RUN.get(study, ()) if pair not in wanted]
    found = per_run(sweep, wanted)
    if found:
        lines += ["### Per run", "", *found]
    return lines + order_section(sweep)


def single_races(results: Path) -> list[str]:
    """The study's single Experiments (results/*.json): one race each, no intervals."""
    lines = []
    for path in sorted(results.glob("*.json")):
        document = json.loads(path.read_text())
        if document.get("kind") != models.KIND or not (document.get("status") or {}).get("results"):
            continue
        status = document["status"]
        values = _values(models.Results.model_validate(status["results"]), status["results"])
        tasks = [t["task"] for t in status["results"]["tasks"] if not SKIPPED_TASKS.match(t["task"])]
        rows = [(task, *(figure(values[(task, m)], m) if (task, m) in values else "" for m in _SINGLE)) for task in tasks]
        lines += [f"### {path.name} ({document['metadata']['name']}, {_time(status.get('startTime'))} UTC, one race)",
                  "", *table(("task", *_SINGLE), rows)]
    return ["## Single races (one race each: no intervals)", "", *lines] if lines else []


_SINGLE = ("throughput.median", "service_time.p50", "latency.p99", "process_cpu.percent", "io.read_bytes",
           "io.read_operations", "page_faults.major", "page_cache.mean")


def residency(results: Path, sweeps: list[Sweep]) -> list[str]:
    """fincore samples (results/*.jsonl: per file extension [resident, total] bytes, stamped `t`),
    averaged over each counted run's task window, by the sweep whose runs they cover."""
    lines = []
    for path in sorted(results.glob("*.jsonl")):
        samples = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for sweep in sweeps:
            rows = []
            for cell in sweep.cells:
                for task in sorted({t["task"] for run in sweep.counted(cell) for t in run["results"]["tasks"]}):
                    if SKIPPED_TASKS.match(task):
                        continue
                    means: dict[str, list[float]] = {}
                    for run in sweep.counted(cell):
                        window = [t for t in run["results"]["tasks"] if t["task"] == task]
                        if not window or not window[0].get("start"):
                            continue
                        start, end = (datetime.fromisoformat(window[0][k].replace("Z", "+00:00")).timestamp()
                                      for k in ("start", "end"))
                        inside = [s for s in samples if start <= s["t"] <= end]
                        for extension in ("fdt", "doc"):
                            if inside and all(extension in s for s in inside):
                                means.setdefault(extension, []).append(
                                    statistics.mean(s[extension][0] for s in inside))
                                means.setdefault(extension + " of", []).append(inside[-1][extension][1])
                    if means:
                        rows.append((task, sweep.label(cell), len(means.get("fdt", [])),
                                     *(f"{span(means[e], 'x.bytes')} of {span(means[e + ' of'], 'x.bytes')}"
                                       if e in means else "" for e in ("fdt", "doc"))))
            if rows:
                lines += [f"## Page cache by file: {path.name} during results/{sweep.folder}/", "",
                          "fincore samples (about every 15 s) inside each counted run's task window, averaged "
                          "per run; the range over the runs (resident MiB, of the file's size).", "",
                          *table(("task", "cell", "runs", "stored fields (`.fdt`)", "postings (`.doc`)"), rows)]
    return lines


def render(study: Path) -> str | None:
    results = study / "results"
    sweeps = [Sweep(path) for path in sorted(results.glob("*/sweep.json"))]
    if not sweeps:
        return None
    lines = [f"# Figures of {study.name}", "",
             "Generated from the files in results/ by scripts/study-figures.py (`make figures`); do not edit. "
             "Changes are against the baseline cell of the same round (paired) or of the sweep, with 95 % intervals "
             "corrected within their family (Holm for the primary questions, Benjamini-Hochberg for the rest, over "
             "the number of comparisons shown); bold: the interval excludes no change. n counts the runs of a cell, "
             "warm-up runs left out, or in a paired comparison the rounds it paired. README.md says what they mean.", ""]
    for sweep in sweeps:
        lines += sweep_section(study.name, sweep)
    lines += residency(results, sweeps)
    lines += single_races(results)
    elsewhere = NOT_FROM_RESULTS.get(study.name)
    if elsewhere:
        lines += ["## Quoted in README.md from outside results/ (not computed here)", "",
                  *table(("figure", "where it comes from"), sorted(elsewhere.items()))]
    return "\n".join(lines).rstrip("\n") + "\n"


def generated() -> dict[Path, str]:
    files = {}
    for study in sorted(p for p in STUDIES.iterdir() if p.is_dir()):
        text = render(study)
        if text is not None:
            files[study / "results" / FIGURES] = text
    return files


def main(argv: list[str]) -> int:
    files = generated()
    stale = [path for path, text in files.items() if not path.is_file() or path.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run scripts/study-figures.py (make figures)", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(files[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
