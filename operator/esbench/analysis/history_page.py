"""`esbench history show --html`: the history page of one configuration, a self-contained HTML
page with a chart of each series (its runs, the stretches between change points, the change
points), the change points' table, every run, and the spec that was run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any, Protocol

import yaml

from esbench.analysis import changepoints, charts, compare
from esbench.analysis.html_report import CSS, RenderedChart, chart_html, esbench_version


class Run(Protocol):
    """One run's figure (a history store's point)."""

    race_id: str
    race_timestamp: str
    experiment: str
    value: float


@dataclass(frozen=True)
class Series:
    subject: str  # a task, "cluster" or "nodes"
    unit: str | None
    runs: Sequence[Run]  # oldest first
    change_points: list[changepoints.ChangePoint]


def _chart(series: Series, metric: str) -> RenderedChart:
    drawn = charts.series(f"{series.subject}: {metric}", [r.value for r in series.runs],
                          [r.race_timestamp[:16].replace("T", " ") for r in series.runs], series.change_points,
                          compare.metric_named(metric), series.unit)
    try:
        return RenderedChart(f"{series.subject}-{metric}", drawn.title, drawn.svg)
    finally:
        drawn.close()


def _change_points_html(series: Series, metric: str) -> str:
    if not series.change_points:
        return f"<p>No change point over {len(series.runs)} runs.</p>"
    known = compare.metric_named(metric)
    rows = "".join(
        f"<tr><td>{escape(series.runs[c.index].race_timestamp)}</td><td>{escape(series.runs[c.index].experiment)}</td>"
        f"<td>{escape(c.kind(known))}</td><td class=\"num\">{compare.format_value(c.mean_before, series.unit)}</td>"
        f"<td class=\"num\">{compare.format_value(c.mean_after, series.unit)}</td>"
        f"<td class=\"num\">{'' if c.change_percent is None else f'{c.change_percent:+.1f} %'}</td>"
        f"<td class=\"num\">{c.pvalue:.2g}</td></tr>"
        for c in series.change_points)
    return ("<table><thead><tr><th>first run after it</th><th>experiment</th><th>kind</th><th>mean before</th>"
            f"<th>mean after</th><th>change</th><th>p</th></tr></thead><tbody>{rows}</tbody></table>")


def _runs_html(series: Series) -> str:
    rows = "".join(f"<tr><td class=\"num\">{i}</td><td>{escape(r.race_timestamp)}</td><td>{escape(r.experiment)}</td>"
                   f"<td><code>{escape(r.race_id)}</code></td>"
                   f"<td class=\"num\">{compare.format_value(r.value, series.unit)}</td></tr>"
                   for i, r in enumerate(series.runs))
    return (f"<details><summary>Every run ({len(series.runs)})</summary><table><thead><tr><th>#</th>"
            f"<th>race started</th><th>experiment</th><th>race id</th><th>value</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></details>")


def to_html(configuration: str, metric: str, found: list[Series], spec: dict[str, Any], max_pvalue: float,
            now: datetime | None = None) -> str:
    sections = "".join(
        f"<h2>{escape(s.subject)}</h2>\n{chart_html(_chart(s, metric))}\n{_change_points_html(s, metric)}\n"
        f"{_runs_html(s)}\n" for s in found)
    generated = (now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    title = f"History of {metric}, configuration {configuration}"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{escape(title)}</h1>
<p class="meta">Generated {generated} by esbench {escape(esbench_version)}. Change points: Apache Otava's E-divisive
means, each kept if a t-test between the runs before and after it gives p &lt; {max_pvalue:g}; a grey bar is the mean
of a stretch between change points. A regression or an improvement by the metric's direction.</p>
{sections}
<h2>The configuration</h2>
<p class="meta">The spec of the latest run (what identifies the series, without <code>lifecycle</code>).</p>
<pre><code>{escape(yaml.safe_dump(spec, sort_keys=False))}</code></pre>
</body>
</html>
"""
