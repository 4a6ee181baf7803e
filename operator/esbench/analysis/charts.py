"""Charts of Experiments' results (matplotlib, drawn off-screen) as standalone SVG documents.

One colour per Experiment, the same in every chart. A chart is only drawn when at least one
Experiment has the figures for it (CPU, for instance, exists only when the runner sampled
`_nodes/stats`).
"""

from __future__ import annotations

import io
import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # off-screen; must precede pyplot
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from esbench.analysis import changepoints
from esbench.analysis.compare import Entry, Group, Metric, format_value, indexed_per_second, measurements
from esbench.api import models

_PERCENTILES = ("p50", "p90", "p99", "p100")
_COLUMNS = 3
plt.rcParams.update({
    "svg.hashsalt": "esbench",  # stable element ids: the same results give the same file
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
})


@dataclass(frozen=True)
class Chart:
    name: str  # file-name friendly, e.g. "throughput"
    title: str
    figure: Figure

    @property
    def svg(self) -> str:
        """A standalone SVG document (text as paths: no fonts needed to view it)."""
        buffer = io.StringIO()
        self.figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
        return buffer.getvalue()

    def png(self, dpi: int = 110) -> bytes:
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", bbox_inches="tight", dpi=dpi)
        return buffer.getvalue()

    def close(self) -> None:
        plt.close(self.figure)


def _colours(count: int) -> list:
    palette = plt.get_cmap("tab10")
    return [palette(i % 10) for i in range(count)]


def _grid(count: int, height: float, columns: int = _COLUMNS) -> tuple[Figure, list]:
    columns = min(columns, count)
    rows = math.ceil(count / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, height * rows), squeeze=False,
                                layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax in flat[count:]:
        ax.set_visible(False)
    return figure, flat[:count]


def _task_order(entries: list[Entry]) -> list[str]:
    order: list[str] = []
    for entry in entries:
        for task in entry.results.tasks:
            if task.task not in order:
                order.append(task.task)
    return order


def _task(entry: Entry, name: str) -> models.TaskResult | None:
    return next((t for t in entry.results.tasks if t.task == name), None)


def _tasks_with_throughput(entries: list[Entry]) -> list[str]:
    return [name for name in _task_order(entries)
            if any((t := _task(e, name)) and t.throughput and t.throughput.median is not None for e in entries)]


def _legend(figure: Figure, labels: list[str], colours: list, columns: int = 4) -> None:
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours]
    figure.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), columns), frameon=False)


def throughput(entries: list[Entry]) -> Chart | None:
    """Median throughput per task: one panel per task (tasks differ in unit and magnitude)."""
    tasks = _tasks_with_throughput(entries)
    if not tasks:
        return None
    colours = _colours(len(entries))
    figure, axes = _grid(len(tasks), 1.4 + 0.3 * len(entries))
    for ax, name in zip(axes, tasks, strict=True):
        values, unit = [], None
        for entry in entries:
            task = _task(entry, name)
            value = task.throughput.median if task and task.throughput else None
            unit = unit or (task.throughput.unit if task and task.throughput else None)
            values.append(value)
        positions = list(range(len(entries)))[::-1]
        ax.barh(positions, [v or 0 for v in values], color=colours)
        for position, value in zip(positions, values, strict=True):
            ax.text(value or 0, position, f" {format_value(value, None)}", va="center", fontsize=8)
        ax.set_yticks([])  # the colours (legend) say which Experiment a bar is
        ax.spines["left"].set_visible(False)
        ax.set_title(f"{name} ({unit or '?'})")
        ax.set_xlim(0, max((v or 0) for v in values) * 1.3 or 1)
    figure.suptitle("Throughput (median), higher is better (– : the Experiment did not run the task)")
    _legend(figure, [e.label for e in entries], colours)
    return Chart("throughput", "Throughput per task", figure)


def latency(entries: list[Entry]) -> Chart | None:
    """Latency percentiles per task: p50..p100 side by side, one bar per Experiment."""
    tasks = [name for name in _task_order(entries)
             if any((t := _task(e, name)) and t.latency and any(getattr(t.latency, p) is not None for p in _PERCENTILES)
                    for e in entries)]
    if not tasks:
        return None
    colours = _colours(len(entries))
    figure, axes = _grid(len(tasks), 2.8)
    width = 0.8 / len(entries)
    for ax, name in zip(axes, tasks, strict=True):
        unit = None
        for index, entry in enumerate(entries):
            task = _task(entry, name)
            if task is None or task.latency is None:
                continue  # this Experiment did not run the task
            unit = unit or task.latency.unit
            values = [getattr(task.latency, p) for p in _PERCENTILES]
            xs = [i + (index - (len(entries) - 1) / 2) * width for i in range(len(_PERCENTILES))]
            ax.bar([x for x, v in zip(xs, values, strict=True) if v is not None], [v for v in values if v is not None],
                   width=width, color=colours[index])
            for x, value in zip(xs, values, strict=True):
                if value is None:  # Rally reports a percentile only with enough samples
                    ax.text(x, 0, "n/a", rotation=90, ha="center", va="bottom", fontsize=6, color="#8c959f")
        ax.set_xticks(range(len(_PERCENTILES)), _PERCENTILES)
        ax.set_title(name)
        ax.set_ylabel(unit or "")
    figure.suptitle("Latency percentiles, lower is better (n/a: too few samples for Rally to report it)")
    _legend(figure, [e.label for e in entries], colours)
    return Chart("latency", "Latency percentiles per task", figure)


def _per_entry_bars(entries: list[Entry], values: list[float | None], title: str, unit_label: str,
                    labels: list[str], name: str, chart_title: str, errors: list[float | None] | None = None) -> Chart:
    colours = _colours(len(entries))
    crowded = len(entries) > 3 or max(len(e.label) for e in entries) > 14
    figure, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(entries) + 2), 4.0 if crowded else 3.0),
                              layout="constrained")
    positions = list(range(len(entries)))
    ax.bar(positions, [v or 0 for v in values], color=colours)
    if errors is not None:  # a marker for the p90 above the mean
        points = [(p, e) for p, e in zip(positions, errors, strict=True) if e is not None]
        if points:
            ax.scatter([p for p, _ in points], [e for _, e in points], marker="_", s=400, color="black", zorder=3,
                       label="p90")
            ax.legend(frameon=False, fontsize=8, loc="upper left")
    for position, value, label in zip(positions, values, labels, strict=True):
        ax.text(position, value or 0, label, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(positions, [e.label for e in entries], rotation=25 if crowded else 0,
                  ha="right" if crowded else "center")
    ax.set_ylabel(unit_label)
    ax.set_title(title)
    top = max([v or 0 for v in values] + [e or 0 for e in (errors or [])])
    ax.set_ylim(0, top * 1.25 or 1)
    return Chart(name, chart_title, figure)


def store_size(entries: list[Entry]) -> Chart | None:
    sizes = [e.results.cluster.store_size_bytes if e.results.cluster else None for e in entries]
    if all(s is None for s in sizes):
        return None
    segments = [e.results.cluster.segment_count if e.results.cluster else None for e in entries]
    labels = [f"{format_value(s, 'bytes')}\n{format_value(n, 'segments')} segment{'' if n == 1 else 's'}" if n is not None
              else format_value(s, "bytes") for s, n in zip(sizes, segments, strict=True)]
    largest = max(s for s in sizes if s is not None)
    exponent, unit = next(((e, u) for e, u in ((30, "GiB"), (20, "MiB"), (10, "KiB")) if largest >= 2**e), (0, "bytes"))
    scaled = [s / 2**exponent if s is not None else None for s in sizes]
    return _per_entry_bars(entries, scaled, "Store size after the race, lower is better", unit, labels,
                           "store-size", "Store size per configuration")


def cpu(entries: list[Entry]) -> Chart | None:
    def node_mean(entry: Entry, attribute: str) -> float | None:
        values = [getattr(n.process_cpu_percent, attribute) for n in entry.results.nodes or []
                  if n.process_cpu_percent and getattr(n.process_cpu_percent, attribute) is not None]
        return sum(values) / len(values) if values else None

    means = [node_mean(e, "mean") for e in entries]
    if all(m is None for m in means):
        return None
    p90s = [node_mean(e, "p90") for e in entries]
    labels = [format_value(m, "%") if m is not None else "n/a" for m in means]
    return _per_entry_bars(entries, means, "Elasticsearch process CPU during the race (mean, p90 marked), lower is better",
                           "% of the host's CPUs", labels, "cpu", "CPU per configuration", errors=p90s)


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flatten(item, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): value}


def _settings(entry: Entry) -> dict[str, object]:
    if entry.spec is not None:
        return _flatten(entry.spec.model_dump(mode="json", by_alias=True, exclude_none=True))
    return _flatten({"trackParams": entry.results.track_params or {}})


def varying_setting(entries: list[Entry]) -> tuple[str, list[float]] | None:
    """The one setting the Experiments differ in, when it is a number in each (bulk size, clients,
    shards...): the x axis of a curve. None when they differ in more or fewer, or not in numbers."""
    settings = [_settings(e) for e in entries]
    keys = sorted({k for s in settings for k in s})
    varying = [k for k in keys if len({json.dumps(s.get(k), sort_keys=True) for s in settings}) > 1]
    if len(varying) != 1:
        return None
    values = [s.get(varying[0]) for s in settings]
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values) or len(set(values)) < 3:
        return None
    return varying[0], [float(v) for v in values]


def curves(entries: list[Entry]) -> Chart | None:
    """Each task's median throughput against the one setting that varies (at least three values),
    with what the nodes indexed where they said (rejected documents left out) and the error rate
    where requests failed (e.g. rejected bulk requests): the shape of a knob, its knee and where
    it starts to fail. Repetitions of a value are dots; the lines join means."""
    found = varying_setting(entries)
    if found is None:
        return None
    setting, xs = found
    tasks = _tasks_with_throughput(entries)
    if not tasks:
        return None
    figure, axes = _grid(len(tasks), 3.0)
    for ax, name in zip(axes, tasks, strict=True):
        points: dict[float, list[models.TaskResult]] = {}
        for x, entry in zip(xs, entries, strict=True):
            task = _task(entry, name)
            if task and task.throughput and task.throughput.median is not None:
                points.setdefault(x, []).append(task)
        ordered = sorted(points)

        def mean(figure_of, ordered: list[float] = ordered, points: dict = points) -> list[float | None]:
            found = [[v for t in points[x] if (v := figure_of(t)) is not None] for x in ordered]
            return [sum(values) / len(values) if values else None for values in found]

        ax.scatter([x for x in ordered for _ in points[x]], [t.throughput.median for x in ordered for t in points[x]],
                   color="tab:blue", s=14, zorder=3)
        ax.plot(ordered, mean(lambda t: t.throughput.median), color="tab:blue", label="throughput (median)")
        indexed = mean(lambda t: indexed_per_second(t)[0])
        if any(v is not None for v in indexed):
            ax.plot(ordered, indexed, color="tab:green", marker=".", label="indexed by the nodes (docs/s)")
        ax.legend(frameon=False, fontsize=7, loc="lower right")
        ax.set_ylim(bottom=0)
        ax.set_ylabel(points[ordered[0]][0].throughput.unit or "")
        if ordered[0] > 0 and ordered[-1] / ordered[0] >= 8:
            ax.set_xscale("log", base=2)
            ax.set_xticks(ordered, [format_value(x, None) for x in ordered], rotation=30, ha="right")
        ax.set_xlabel(setting)
        ax.set_title(name)
        errors = mean(lambda t: t.error_rate or 0.0)
        if any(errors):
            twin = ax.twinx()
            twin.plot(ordered, [100 * e for e in errors], color="tab:red", linestyle="--", marker="x")
            twin.set_ylabel("error rate (%)", color="tab:red")
            twin.set_ylim(bottom=0)
            twin.spines["right"].set_visible(True)
    figure.suptitle(f"Throughput against {setting}, higher is better (dashed: share of failed requests)")
    return Chart("curves", f"Throughput against {setting}", figure)


# What the nodes spent at each rate, charted below the percentiles: where the curve breaks, whether
# their CPU or their disk was at its limit. Each: its title, its unit, the figure of a probe.
_SPENT_PANELS: dict[str, tuple[str, Callable[[models.CapacityProbe], float | None]]] = {
    "node CPU": ("%", lambda p: p.node_cpu_percent),
    "disk read": ("MiB/s", lambda p: None if p.disk_read_bytes_per_second is None
                  else p.disk_read_bytes_per_second / 2**20),
}


def _probe_figure(probe: models.CapacityProbe, panel: str) -> float | None:
    if panel in _SPENT_PANELS:
        return _SPENT_PANELS[panel][1](probe)
    kind, name = panel.split(".")
    figures = probe.latency if kind == "latency" else probe.service_time
    return getattr(figures, name) if figures else None


def _capacity_panels(found: list[models.CapacityResult]) -> list[str]:
    """The percentiles charted: each objective's, the same percentile of the other timing (latency
    counts the wait for a late send, service time does not) and the medians; then what the nodes
    spent, where the probes have it."""
    panels: list[str] = []
    for result in found:
        kind, name = result.metric.split(".")
        other = "service_time" if kind == "latency" else "latency"
        for metric in (result.metric, f"{other}.{name}", "latency.p50", "service_time.p50"):
            if metric not in panels:
                panels.append(metric)
    probes = [p for result in found for p in result.probes]
    return panels + [panel for panel in _SPENT_PANELS if any(_probe_figure(p, panel) is not None for p in probes)]


def capacity(entries: list[Entry]) -> Chart | None:
    """workload.capacity's probes: per percentile (then the nodes' CPU and disk reads), each probe's
    figure against the rate it was offered (a dot; hollow where the load driver, not the cluster,
    set the rate), a line through the median at each rate (confirmations probe a rate again), the
    objective's bound (dashed) and the capacity found (dotted). One colour per sweep cell (its
    repetitions are searches of one configuration), else per Experiment."""
    searched = [e for e in entries if e.results.capacity and e.results.capacity.probes]
    if not searched:
        return None
    groups = list(dict.fromkeys(e.cell or e.label for e in searched))
    colour_of = dict(zip(groups, _colours(len(groups)), strict=True))
    charted = [(e, colour_of[e.cell or e.label]) for e in searched]
    found = [e.results.capacity for e, _ in charted]
    panels = _capacity_panels(found)
    figure, axes = _grid(len(panels), 3.2, columns=2)  # latency beside service time
    rates = [p.target_throughput for result in found for p in result.probes]
    for ax, metric in zip(axes, panels, strict=True):
        for entry, colour in charted:
            result = entry.results.capacity
            points = [(p.target_throughput, value, p.verdict == "DriverLimited") for p in result.probes
                      if (value := _probe_figure(p, metric)) is not None]
            held = [(x, y) for x, y, limited in points if not limited]
            limited = [(x, y) for x, y, limited in points if limited]
            if held:
                ax.scatter(*zip(*held, strict=True), color=colour, s=16, zorder=3)
            if limited:
                ax.scatter(*zip(*limited, strict=True), facecolors="none", edgecolors=colour, s=22, zorder=3)
            per_rate: dict[float, list[float]] = {}
            for x, y in held:
                per_rate.setdefault(x, []).append(y)
            ordered = sorted(per_rate)
            ax.plot(ordered, [statistics.median(per_rate[x]) for x in ordered], color=colour, linewidth=1.2)
            if result.metric == metric:
                ax.axhline(result.max_milliseconds, color=colour, linestyle="--", linewidth=1)
            if result.capacity is not None:
                ax.axvline(result.capacity, color=colour, linestyle=":", linewidth=1.5)
        unit = _SPENT_PANELS[metric][0] if metric in _SPENT_PANELS else "ms"
        values = [v for e, _ in charted for p in e.results.capacity.probes if (v := _probe_figure(p, metric))]
        if unit == "ms" and values and max(values) / min(values) > 50:  # the rate past the capacity reads far slower
            ax.set_yscale("log")
        if min(rates) > 0 and max(rates) / min(rates) >= 8:  # the search grows and bisects by ratios
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(lambda value, _: f"{value:g}")
        ax.set_xlabel("offered rate (ops/s)")
        ax.set_ylabel(unit)
        ax.set_title(metric + (" (objective)" if any(r.metric == metric for r in found) else ""))
    tasks = ", ".join(dict.fromkeys(r.task for r in found))
    figure.suptitle(f"Capacity of {tasks}: dots are probes (hollow: the load driver limited it), lines join the "
                    "median per rate;\ndashed: the objective's bound; dotted: the capacity found")
    _legend(figure, [_search_group_label(group, searched) for group in groups], [colour_of[g] for g in groups],
            columns=3)
    return Chart("capacity", f"Capacity of {tasks}: percentiles against the offered rate", figure)


def _search_group_label(group: str, entries: list[Entry]) -> str:
    """A cell by its id, what it sets (the run's annotation) and its number of searches; an Experiment by its label."""
    runs = [e for e in entries if e.cell == group]
    if not runs:
        return group
    setting = runs[0].annotations.get(models.CELL_LABEL)
    return f"{group.split()[-1]}{f' {setting}' if setting else ''} ({len(runs)} search{'es' if len(runs) > 1 else ''})"


def _run_values(group: Group, row: dict) -> list[float]:
    """The row's figure in each run of the group (a run without it is left out)."""
    found = []
    for entry in group.entries:
        for m in measurements(entry.results):
            if (m.section.value, m.subject, m.metric.key) == (row["section"], row["subject"], row["metric"]):
                if m.value is not None and math.isfinite(m.value):
                    found.append(float(m.value))
    return found


def repeated_runs(groups: list[Group], rows: list[dict]) -> Chart | None:
    """Every run of each group as a dot, and the group's mean with its confidence interval as a
    bar: one panel per compared figure (rows as stats.to_wire gives them, chosen by the caller)."""
    if not rows:
        return None
    colours = _colours(len(groups))
    figure, axes = _grid(len(rows), 3.2)
    for ax, row in zip(axes, rows, strict=True):
        cells = {c["cell"]: c for c in row["cells"]}
        for position, (group, colour) in enumerate(zip(groups, colours, strict=True)):
            values = _run_values(group, row)
            spread = [position + 0.3 * (i - (len(values) - 1) / 2) / max(len(values), 1) for i in range(len(values))]
            ax.scatter(spread, values, color=colour, s=14, zorder=3)
            cell = cells.get(group.name)
            if cell and cell.get("ciLow") is not None:
                ax.errorbar([position + 0.3], [cell["mean"]], color="black", capsize=3, fmt="_", markersize=10,
                            yerr=[[cell["mean"] - cell["ciLow"]], [cell["ciHigh"] - cell["mean"]]])
        ax.set_xticks(range(len(groups)), [g.name for g in groups])
        ax.set_title(f"{row['subject']} {row['metric']}" + (" *" if row["family"] == "primary" else ""))
        ax.set_ylabel(row.get("unit") or "")
    figure.suptitle("Every run (dots) and each group's mean with its confidence interval (bar); * primary")
    return Chart("runs", "Every run, and each group's mean with its interval", figure)


def all_charts(entries: list[Entry]) -> list[Chart]:
    drawn = (capacity(entries), curves(entries), throughput(entries), latency(entries), store_size(entries), cpu(entries))
    return [c for c in drawn if c is not None]


KIND_COLOURS = {"regression": "#d62728", "improvement": "#2ca02c", "change": "#7f7f7f"}


def series(title: str, values: list[float], labels: list[str], found: list[changepoints.ChangePoint],
           metric: Metric | None, unit: str | None) -> Chart:
    """One series in time order: each run a dot, each stretch between change points its mean (a
    grey bar), each change point a dashed line before its first run, red for a regression and
    green for an improvement."""
    figure, ax = plt.subplots(figsize=(9, 3.4))
    positions = list(range(len(values)))
    ax.plot(positions, values, marker="o", markersize=4, linewidth=1, color=_colours(1)[0], zorder=3)
    bounds = [0, *[c.index for c in found], len(values)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        ax.hlines(sum(values[start:end]) / (end - start), start - 0.3, end - 0.7, colors="#8c959f", linewidth=3,
                  zorder=2)
    for point in found:
        kind = point.kind(metric)
        ax.axvline(point.index - 0.5, color=KIND_COLOURS[kind], linestyle="--", linewidth=1.5)
        change = f" {point.change_percent:+.0f} %" if point.change_percent is not None else ""
        ax.annotate(f"{kind}{change}", (point.index - 0.5, 1), xycoords=("data", "axes fraction"),
                    color=KIND_COLOURS[kind], fontsize=8, ha="left", va="top", xytext=(3, 0),
                    textcoords="offset points")
    step = max(1, len(labels) // 12)  # at most about 12 labels
    ax.set_xticks(positions[::step], labels[::step], rotation=30, ha="right")
    ax.set_ylabel(unit or "")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    return Chart("series", title, figure)
