"""`esbench report`: configurations, results and charts of Experiments, as a self-contained HTML
page (charts as inline SVG images) and as Markdown (charts as SVG files next to it).

Runs of one spec are repetitions: when the Experiments hold some, the report opens with the
verdicts of their groups (as a sweep gives them) and charts every run with each group's
interval; otherwise it compares single runs, as differences. A report of one sweep's runs says
what the sweep said: its status.comparison, against its baseline, with its statistics.
Building the report (`build`) is pure apart from drawing the charts; rendering is string work.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from esbench.analysis import charts, compare, contrasts, stats
from esbench.analysis.compare import Comparison, Entry, Group
from esbench.analysis.verdicts import Verdicts
from esbench.api import models

try:
    esbench_version = version("esbench")
except PackageNotFoundError:  # running from a source tree without installing
    esbench_version = "(source)"

# Figures of repeated runs charted run by run: the primary questions, then the smallest p-values.
CHARTED_ROWS = 6
CONFIGURATION_COLUMNS = ["experiment", "result", "Elasticsearch", "codec", "shards", "replicas", "refresh",
                         "other index settings", "track", "challenge", "track params", "nodes / heap", "source"]


@dataclass(frozen=True)
class RenderedChart:
    name: str
    title: str
    svg: str


@dataclass(frozen=True)
class ProfiledTask:
    """One task's profile in one run, its files where the run's result file put them."""

    run: str
    task: str
    profile: models.TaskProfile
    folder: Path | None  # None: the result came from elsewhere than a file

    def link(self, name: str | None, report_folder: Path) -> str | None:
        if name is None or self.folder is None:
            return None
        return os.path.relpath(self.folder / name, report_folder)


def profiled_tasks(entries: list[Entry]) -> list[ProfiledTask]:
    found = []
    for entry in entries:
        recording = entry.results.profile
        if recording is None:
            continue
        # A folder named relative to the result file (esbench run --output), or absolute (a kept work dir).
        folder = Path(entry.source).parent / recording.folder if entry.source and recording.folder else None
        found += [ProfiledTask(entry.label, t.task, t.profile, folder) for t in entry.results.tasks if t.profile]
    return found


@dataclass
class Report:
    title: str
    generated: str
    entries: list[Entry]
    configurations: list[dict[str, str]]
    comparison: Comparison
    charts: list[RenderedChart]
    verdicts: list[dict[str, Any]] = field(default_factory=list)  # repeated runs: their groups' comparison
    method: Verdicts | None = None  # how the verdicts were made
    profiles: list[ProfiledTask] = field(default_factory=list)
    contrasts: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # title, rows
    # The history page of each configuration these runs belong to: (what it covers, its file's path)
    history: list[tuple[str, Path]] = field(default_factory=list)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(", ", ": ")) if value else "–"


def configuration(entry: Entry) -> dict[str, str]:
    """One row of the configuration table, from the spec (what was asked for) and the results
    (what Rally ran); without a spec (a bare race.json), from Rally's track params."""
    params = dict(entry.results.track_params or {})
    index_settings = dict(params.get("index_settings") or {})
    spec = entry.spec
    if spec:
        index = spec.index
        codec = index.codec.value if index.codec else "default"
        shards = str(index.shards) if index.shards is not None else "track default"
        replicas = str(index.replicas) if index.replicas is not None else "track default"
        refresh = index.refresh_interval or "default"
        other = _json(index.settings)
        track_params = _json(spec.workload.track_params)
        es = spec.elasticsearch
        if es is None:  # an existing cluster (spec.target): its topology is not in the spec
            topology = "existing cluster"
        else:
            nodes = sum(n.count for n in es.node_sets) if es.node_sets else es.node_count or 1
            topology = f"{nodes} / {es.heap or 'auto'}"
        track = spec.workload.track
        challenge = spec.workload.challenge or entry.results.challenge or "default"
    else:
        codec = str(index_settings.pop("index.codec", "default"))
        shards = str(params.get("number_of_shards", "track default"))
        replicas = str(params.get("number_of_replicas", "track default"))
        refresh = str(index_settings.pop("index.refresh_interval", "default"))
        other = _json(index_settings)
        track_params = _json({k: v for k, v in params.items()
                              if k not in ("index_settings", "number_of_shards", "number_of_replicas")})
        topology = "–"
        track = entry.results.track or "–"
        challenge = entry.results.challenge or "default"
    version = entry.cluster_version or entry.results.distribution_version or (spec.elasticsearch.version if spec and spec.elasticsearch else "–")
    distribution = entry.annotations.get("esbench.io/elasticsearch")
    result = entry.phase or "race.json"
    if entry.reason and entry.phase != "Succeeded":
        result += f" ({entry.reason})"
    return {
        "experiment": entry.label,
        "result": result,
        "Elasticsearch": version + (f" — {distribution}" if distribution else ""),
        "codec": codec,
        "shards": shards,
        "replicas": replicas,
        "refresh": refresh,
        "other index settings": other,
        "track": track,
        "challenge": challenge,
        "track params": track_params,
        "nodes / heap": topology,
        "source": entry.source or "–",
    }


def _groups(entries: list[Entry]) -> list[Group]:
    """The entries' groups of one spec (compare.repetition_groups), or none."""
    try:
        return compare.repetition_groups(entries)
    except compare.NotComparable:  # a bare race.json: which runs repeat which is not known
        return []


def _within_race(groups: list[Group]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Each group's declared contrasts over its runs: tasks of one race, compared race by race."""
    return [(f"{group.name}: contrast {found['name']}, each task against {found['baseline']}", found["rows"])
            for group in groups if group.entries[0].spec
            for found in contrasts.to_wire([e.results for e in group.entries], group.entries[0].spec.workload)]


def _charted_rows(rows: list[dict[str, Any]], limit: int = CHARTED_ROWS) -> list[dict[str, Any]]:
    """The rows worth a chart: primary ones, then those with the smallest adjusted p-value."""
    def rank(row: dict[str, Any]) -> tuple[bool, float]:
        adjusted = [c["pAdjusted"] for c in row["cells"] if "pAdjusted" in c]
        return row.get("family") != "primary", min(adjusted, default=2.0)

    return sorted(rows, key=rank)[:limit]


def build(entries: list[Entry], title: str | None = None, now: datetime | None = None,
          primary: Iterable[tuple[str, str]] = (), paired: bool = False, within: Sequence[str] = (),
          sweep: Verdicts | None = None) -> Report:
    """The report on these runs. With `sweep` (Verdicts.of_sweep: the runs are that sweep's), its
    verdicts are the sweep's own: its baseline and statistics, not the first group and the options."""
    moment = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    title = title or ("esbench report: " + (f"sweep {sweep.sweep}" if sweep else ", ".join(e.label for e in entries)))
    groups = _groups(entries)
    in_race = _within_race(groups)
    # Repeated runs: two groups or more, one of them repeated. Else single runs, compared as differences.
    repeated = len(groups) >= 2 and any(len(g.entries) > 1 for g in groups)
    if sweep and repeated:
        return _repeated(title, moment, entries, groups, in_race, sweep)
    if not repeated:
        if sweep:  # one run per cell: the differences are against the sweep's baseline, its run first
            entries = sorted(entries, key=lambda e: (e.cell or "").split()[-1:] != sweep.baselines[:1])
        return Report(title=title, generated=moment, entries=entries,
                      configurations=[configuration(e) for e in entries],
                      comparison=compare.compare(entries), charts=_render(charts.all_charts(entries)),
                      profiles=profiled_tasks(entries), contrasts=in_race)
    return _repeated(title, moment, entries, groups, in_race, Verdicts.of_groups(groups, primary, paired, within))


def _repeated(title: str, moment: str, entries: list[Entry], groups: list[Group],
              in_race: list[tuple[str, list[dict[str, Any]]]], verdicts: Verdicts) -> Report:
    """The report on groups of repeated runs and their verdicts."""
    configurations = []
    for group in groups:
        names = ", ".join(e.label for e in group.entries)
        values = group.entries[0].annotations.get(models.CELL_LABEL)  # a sweep's cell: what it sets
        role = "; the baseline" if group.name in verdicts.baselines else ""
        configurations.append({**configuration(group.entries[0]),
                               "experiment": f"{group.name}{f' ({values})' if values else ''}: "
                                             f"{len(group.entries)} run(s) ({names}){role}"})
    drawn = (charts.capacity(entries), charts.repeated_runs(groups, _charted_rows(verdicts.rows)))
    return Report(title=title, generated=moment, entries=entries, configurations=configurations,
                  comparison=compare.compare(entries), charts=_render([c for c in drawn if c is not None]),
                  verdicts=verdicts.rows, method=verdicts, profiles=profiled_tasks(entries), contrasts=in_race)


def _render(drawn: list[charts.Chart]) -> list[RenderedChart]:
    rendered = []
    for chart in drawn:
        rendered.append(RenderedChart(chart.name, chart.title, chart.svg))
        chart.close()
    return rendered


# --- HTML ----------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; vertical-align: top; }
th { background: #f6f8fa; text-align: left; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.section td { border-top: 2px solid #8c959f; }
.warning { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5rem; margin: 0.5rem 0; }
.meta { color: #59636e; font-size: 0.85rem; }
figure { margin: 1rem 0; } figure img { max-width: 100%; }
code { font-size: 0.8rem; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text))


def _configuration_html(report: Report) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in CONFIGURATION_COLUMNS)
    rows = []
    for config in report.configurations:
        cells = []
        for column in CONFIGURATION_COLUMNS:
            value = config[column]
            cells.append(f"<td><code>{_e(value)}</code></td>" if column in ("track params", "other index settings")
                         and value != "–" else f"<td>{_e(value)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _results_html(comparison: Comparison) -> str:
    header = compare.table_header(comparison)
    if not comparison.contenders:
        header[3] = comparison.baseline
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    rows = []
    previous = None
    for row, cells in compare.table_rows(comparison):
        group = (row.section, row.subject)
        css = ' class="section"' if previous is not None and group != previous else ""
        previous = group
        html_cells = [f"<td>{_e(c)}</td>" for c in cells[:3]] + [f'<td class="num">{_e(cells[3])}</td>']
        for index in range(len(row.differences)):
            html_cells.append(f'<td class="num">{_e(cells[4 + 2 * index])}</td>')
            html_cells.append(f'<td class="num">{_e(cells[5 + 2 * index])}</td>')
        rows.append(f"<tr{css}>{''.join(html_cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


VERDICT_COLUMNS = ["task", "metric", "group", "baseline", "contender", "unit", "change [interval]", "p raw/adj.",
                   "verdict"]
CONTRAST_COLUMNS = ["contrast", "metric", "task", *VERDICT_COLUMNS[3:]]  # a contrast's rows: its tasks are the groups
VERDICT_LEGEND = ("Each group is a sweep's cell or the runs of one spec. baseline, contender: geometric means of the runs "
                  "(medians where a run has 0). change: their ratio, "
                  "where a run has 0 the difference of means in % of the baseline's; [interval] at the level "
                  "corrected for the number of comparisons. * primary question.")


def _method_text(method: Verdicts) -> str:
    """How the groups were compared: against which baseline, the pairing, the test, the corrections."""
    baselines = ", ".join(method.baselines)
    if method.sweep:
        against = (f"Sweep {method.sweep}'s own comparison (its status): each cell against "
                   + (f"the baseline of its {' and '.join(method.within)} ({baselines})." if method.within
                      else f"its baseline, {baselines}."))
    elif method.within:
        against = f"Each group against the first group with its {' and '.join(method.within)} ({baselines})."
    else:
        against = f"Each group against the first, {baselines}."
    statistics = method.statistics
    pairing = ("Each run compared with the baseline's run of the same round (paired t)." if statistics.paired else
               "The runs compared as independent samples.")
    test = (f"Test {statistics.test.value}, confidence {statistics.confidence * 100:g} %; Equivalent: an interval "
            f"within +-{statistics.noise_threshold_percent:g} %.")
    families = [f"{family}: {c['correction']} over {c['comparisons']}" for family, c in method.corrections.items()
                if c.get("comparisons")]
    return " ".join([against, pairing, test]) + (
        " Corrected for many comparisons (" + "; ".join(families) + ")." if families else "")


def _verdict_lines(rows: list[dict[str, Any]]) -> list[list[str]]:
    """One line per (row, contender) in VERDICT_COLUMNS: the primary questions first."""
    lines = []
    for row in sorted(rows, key=lambda r: r.get("family") != "primary"):
        for baseline, found in stats.contenders(row):
            verdict = found["verdict"] + (f" (~{found['runsNeeded']} runs)" if found.get("runsNeeded") else "")
            hint = stats.uncorrected_hint(found)
            verdict += f"; {hint}" if hint else ""
            lines.append([row["subject"], row["metric"] + (" *" if row.get("family") == "primary" else ""),
                          stats.contender_label(found), compare.format_value(stats.estimate(baseline), None) if baseline
                          else "–", compare.format_value(stats.estimate(found), None), compare.unit_label(row.get("unit")),
                          stats.change_text(found), stats.p_values_text(found), verdict])
    return lines


def _split_verdicts(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the first screen (primary questions, and exploratory ones with a verdict other
    than Inconclusive) and the rest."""
    def shown(row: dict[str, Any]) -> bool:
        return row.get("family") == "primary" or any(
            c["verdict"] in ("Better", "Worse", "Equivalent") for c in row["cells"])

    return [r for r in rows if shown(r)], [r for r in rows if not shown(r)]


def _verdicts_table_html(rows: list[dict[str, Any]], columns: list[str] = VERDICT_COLUMNS) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    numeric = {"baseline", "contender", "change [interval]", "p raw/adj."}
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_e(v)}</td>' if c in numeric else f"<td>{_e(v)}</td>"
                         for c, v in zip(columns, line, strict=True)) + "</tr>"
        for line in _verdict_lines(rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _verdicts_html(report: Report) -> str:
    shown, rest = _split_verdicts(report.verdicts)
    more = (f"<details><summary>{len(rest)} more exploratory comparison(s), none with a verdict</summary>"
            f"{_verdicts_table_html(rest)}</details>" if rest else "")
    return (f'<p class="meta">{_e(_method_text(report.method))} {_e(VERDICT_LEGEND)}</p>'
            f"{_verdicts_table_html(shown)}{more}")


def chart_html(chart: RenderedChart) -> str:
    data = base64.b64encode(chart.svg.encode()).decode()
    return (f'<figure id="chart-{_e(chart.name)}"><img alt="{_e(chart.title)}" '
            f'src="data:image/svg+xml;base64,{data}"><figcaption>{_e(chart.title)}</figcaption></figure>')


CONTRASTS_LEGEND = ("Tasks of one race, each compared with the contrast's baseline task race by race (paired t), "
                    "over the group's runs; a contrast's rows corrected together (Benjamini-Hochberg).")


def _contrasts_html(report: Report) -> str:
    return f'<p class="meta">{_e(CONTRASTS_LEGEND)}</p>' + "".join(
        f"<h3>{_e(title)}</h3>{_verdicts_table_html(rows, CONTRAST_COLUMNS)}" for title, rows in report.contrasts)


PROFILE_FRAMES = 3  # per task in the report's profiles table
PROFILES_LEGEND = ("Per task, the frames its CPU samples (or the recording's event) were taken in most (self), "
                   "from a profile of the nodes during its window, warm-up included; the flame graph has all of them. "
                   "`esbench profile` compares two.")


def _top_text(profile: models.TaskProfile) -> list[str]:
    return [f"{frame.percent:.1f} % {frame.frame}" for frame in profile.top[:PROFILE_FRAMES]]


def _profiles_html(report: Report, folder: Path) -> str:
    rows = []
    for item in report.profiles:
        link = item.link(item.profile.flame_graph, folder)
        graph = f'<a href="{_e(link)}">flame graph</a>' if link else "–"
        top = "<br>".join(_e(line) for line in _top_text(item.profile))
        rows.append(f"<tr><td>{_e(item.run)}</td><td>{_e(item.task)}</td><td class=\"num\">{item.profile.samples}</td>"
                    f"<td>{top}</td><td>{graph}</td></tr>")
    return (f'<p class="meta">{_e(PROFILES_LEGEND)}</p><table><thead><tr><th>run</th><th>task</th><th>samples</th>'
            f"<th>top frames (self)</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def to_html(report: Report, folder: Path = Path(".")) -> str:
    """The page; links (to profiles' flame graphs) are relative to folder, where it will be written."""
    warnings = "".join(f'<p class="warning">{_e(w)}</p>' for w in report.comparison.warnings)
    legend = ("Differences are against the baseline (the first Experiment), run against run: a difference, "
              "not a verdict (that takes repeated runs: an ExperimentSweep); "
              "throughput: higher is better; latency, service time, times, sizes, segment counts, "
              "error rate and CPU: lower is better.")
    drawn = "".join(chart_html(c) for c in report.charts) or "<p>No figures to chart.</p>"
    if report.verdicts:
        sections = (f"<h2>Verdicts</h2>\n{_verdicts_html(report)}\n<h2>Every run</h2>\n{drawn}\n"
                    f"<h2>Groups</h2>\n{_configuration_html(report)}")
    else:
        sections = (f"<h2>Configurations</h2>\n{_configuration_html(report)}\n<h2>Results</h2>\n"
                    f'<p class="meta">{_e(legend)}</p>\n{_results_html(report.comparison)}\n'
                    f"<h2>Charts</h2>\n{drawn}")
    if report.contrasts:
        sections += f"\n<h2>Within-race contrasts</h2>\n{_contrasts_html(report)}"
    if report.profiles:
        sections += f"\n<h2>Profiles</h2>\n{_profiles_html(report, folder)}"
    if report.history:
        links = "".join(f'<li><a href="{_e(os.path.relpath(page, folder))}">{_e(label)}</a></li>'
                        for label, page in report.history)
        sections += (f"\n<h2>History</h2>\n<p class=\"meta\">Every recorded race of each configuration here "
                     f"(esbench history), with its change points.</p>\n<ul>{links}</ul>")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{_e(report.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{_e(report.title)}</h1>
<p class="meta">Generated {_e(report.generated)} by esbench {_e(esbench_version)} from {len(report.entries)} Experiment(s).
Figures are Rally's (race.json) and, for CPU, sampled from <code>_nodes/stats</code> during the race.</p>
{warnings}
{sections}
</body>
</html>
"""


# --- Markdown ------------------------------------------------------------------------------


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _configuration_markdown(report: Report) -> str:
    lines = ["| " + " | ".join(CONFIGURATION_COLUMNS) + " |", "|" + "---|" * len(CONFIGURATION_COLUMNS)]
    for config in report.configurations:
        lines.append("| " + " | ".join(_md(config[c]) for c in CONFIGURATION_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _verdicts_markdown(rows: list[dict[str, Any]], columns: list[str] = VERDICT_COLUMNS) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_md(v) for v in line) + " |" for line in _verdict_lines(rows)]
    return "\n".join(lines) + "\n"


def _profiles_markdown(report: Report, folder: Path) -> str:
    lines = ["| run | task | samples | top frames (self) | |", "|---|---|---|---|---|"]
    for item in report.profiles:
        link = item.link(item.profile.flame_graph, folder)
        lines.append(f"| {_md(item.run)} | {_md(item.task)} | {item.profile.samples} | "
                     f"{'<br>'.join(_md(line) for line in _top_text(item.profile))} | "
                     f"{f'[flame graph]({link})' if link else '–'} |")
    return "\n".join(lines) + "\n"


def write_markdown(report: Report, path: Path) -> list[Path]:
    """The Markdown report at path, its charts as PATH-STEM-NAME.svg beside it; returns the chart files."""
    path = Path(path)
    written = []
    images = []
    for chart in report.charts:
        chart_path = path.with_name(f"{path.stem}-{chart.name}.svg")
        chart_path.write_text(chart.svg)
        written.append(chart_path)
        images.append(f"![{chart.title}]({chart_path.name})")
    warnings = "".join(f"> warning: {w}\n" for w in report.comparison.warnings)
    if report.verdicts:
        shown, rest = _split_verdicts(report.verdicts)
        sections = ("## Verdicts\n\n" + f"{_method_text(report.method)} {VERDICT_LEGEND}\n\n"
                    + _verdicts_markdown(shown)
                    + (f"\n{len(rest)} more exploratory comparison(s), none with a verdict:\n\n" + _verdicts_markdown(rest)
                       if rest else "")
                    + "\n## Every run\n\n" + "\n\n".join(images) + "\n"
                    + "\n## Groups\n\n" + _configuration_markdown(report))
    else:
        sections = ("## Configurations\n\n" + _configuration_markdown(report)
                    + "\n## Results\n\nDifferences are against the baseline (the first Experiment), run against run: whether one is more than noise takes repeated runs (an ExperimentSweep).\n\n"
                    + compare.to_markdown(compare.Comparison(report.comparison.labels, report.comparison.rows, []))
                    + "\n## Charts\n\n" + "\n\n".join(images) + "\n")
    if report.contrasts:
        sections += "\n## Within-race contrasts\n\n" + CONTRASTS_LEGEND + "\n" + "".join(
            f"\n### {title}\n\n{_verdicts_markdown(rows, CONTRAST_COLUMNS)}" for title, rows in report.contrasts)
    if report.profiles:
        sections += "\n## Profiles\n\n" + PROFILES_LEGEND + "\n\n" + _profiles_markdown(report, path.parent)
    text = (
        f"# {report.title}\n\n"
        f"Generated {report.generated} by esbench {esbench_version} from {len(report.entries)} Experiment(s).\n\n"
        + (warnings + "\n" if warnings else "")
        + sections
    )
    path.write_text(text)
    return written
