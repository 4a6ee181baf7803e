"""Comparing Experiments (Rally calls it a tournament): a baseline against contenders.

Pure: Experiment documents (as `kubectl get esx NAME -o json` returns them, or as
`esbench run --output` writes them) in, a Comparison out, and text renderings of it
(Markdown, CSV, JSON). Reading documents from files or the API server is in cli/sources.py; the
terminal table is drawn in cli/commands.py.

Every figure is Rally's (or the node sampler's) unchanged. A difference between two runs is
shown as a difference, never as better or worse: one run per side cannot tell an effect from
noise (a sweep's repetitions can: analysis.stats). Each metric's direction (throughput higher is
better; latency, service time, times, sizes, segment counts, error rates, CPU and I/O lower is
better) goes with it in CSV and JSON.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from esbench.analysis import capacitysearch, foreignwrites, steadystate
from esbench.api import models

# --- what is compared ----------------------------------------------------------------------


class Direction(str, Enum):
    HIGHER_IS_BETTER = "higher"
    LOWER_IS_BETTER = "lower"


class Section(str, Enum):
    TASK = "task"  # per Rally task (op_metrics)
    CLUSTER = "cluster"  # node-level figures Rally collected
    NODES = "nodes"  # sampled from _nodes/stats during the race (mean over the cluster's nodes)


@dataclass(frozen=True)
class Metric:
    key: str  # stable identifier for CSV/JSON, e.g. "latency.p99"
    label: str  # for people, e.g. "latency p99"
    direction: Direction
    unit: str | None = None  # fixed unit; None: the unit Rally reported with the value
    # The largest of a run's requests: its expected value grows with their number, so a contender
    # that serves more or fewer requests moves it without being faster or slower.
    follows_request_count: bool = False


LOWER, HIGHER = Direction.LOWER_IS_BETTER, Direction.HIGHER_IS_BETTER
_PERCENTILES = ("p50", "p90", "p99", "p100")

TASK_METRICS: list[tuple[Metric, Callable[[models.TaskResult], tuple[float | None, str | None]]]] = [
    (Metric("throughput.median", "throughput median", HIGHER),
     lambda t: (t.throughput.median, t.throughput.unit) if t.throughput else (None, None)),
    *[
        (Metric(f"latency.{p}", f"latency {p}", LOWER, follows_request_count=p == "p100"),
         lambda t, p=p: (getattr(t.latency, p), t.latency.unit) if t.latency else (None, None))
        for p in _PERCENTILES
    ],
    *[
        (Metric(f"service_time.{p}", f"service time {p}", LOWER, follows_request_count=p == "p100"),
         lambda t, p=p: (getattr(t.service_time, p), t.service_time.unit) if t.service_time else (None, None))
        for p in _PERCENTILES
    ],
    # Rally reports a fraction (0.0-1.0); shown as such, with the unit saying so.
    (Metric("error_rate", "error rate", LOWER, "fraction"), lambda t: (t.error_rate, None)),
]


def _resource(attribute: str) -> Callable[[models.TaskResult], tuple[float | None, str | None]]:
    return lambda t: (getattr(t.resources, attribute), None) if t.resources else (None, None)


# What the nodes spent while the task ran (its window in Rally's log; models.TaskResources).
TASK_METRICS += [
    (Metric(key, label, LOWER, unit), _resource(attribute))
    for key, label, unit, attribute in (
        ("process_cpu.percent", "node CPU", "%", "process_cpu_percent"),
        ("process_cpu.max_node_percent", "busiest node CPU", "%", "process_cpu_percent_max"),
        ("process_cpu.time", "node CPU time", "ms", "process_cpu_ms"),
        ("process_cpu.net_time", "node CPU time net of idle", "ms", "process_cpu_ms_net"),
        ("jit_cpu.time", "JIT compiler CPU time", "ms", "jit_cpu_ms"),
        ("gc_cpu.time", "GC threads' CPU time", "ms", "gc_cpu_ms"),
        ("cgroup_cpu.time", "container CPU time", "ms", "cgroup_cpu_ms"),
        ("os_cpu.percent", "host CPU", "%", "os_cpu_percent"),
        ("heap_used.mean", "heap used", "bytes", "heap_used_bytes"),
        ("gc.time", "GC time", "ms", "gc_time_ms"),
        ("io.read_bytes", "disk read", "bytes", "io_read_bytes"),
        ("io.read_operations", "disk reads", "operations", "io_read_operations"),
        ("io.write_bytes", "disk written", "bytes", "io_write_bytes"),
        ("write_rejections", "write rejections", "rejections", "write_rejections"),
        ("page_faults.major", "major page faults", "faults", "major_page_faults"),
        ("page_cache.mean", "page cache", "bytes", "page_cache_bytes"),
    )
]


def indexed_per_second(task: models.TaskResult) -> tuple[float | None, str | None]:
    resources = task.resources
    if resources is None or not resources.index_operations or resources.seconds <= 0:
        return None, None
    return resources.index_operations / resources.seconds, None


# What the nodes indexed, rejected documents left out (Rally's bulk throughput counts them).
TASK_METRICS.append((Metric("indexed_rate", "indexed by the nodes", HIGHER, "docs/s"), indexed_per_second))


def _steady(task: models.TaskResult, percentile: str) -> tuple[float | None, str | None]:
    service = task.steady_state.service_time if task.steady_state else None
    return (getattr(service, percentile), service.unit) if service else (None, None)


# The requests from the task's steady state on (analysis/steadystate.py); none where it found none.
TASK_METRICS += [
    *[(Metric(f"steady.service_time.{p}", f"steady service time {p}", LOWER), lambda t, p=p: _steady(t, p))
      for p in ("p50", "p90", "p99")],
    (Metric("steady.throughput.mean", "steady throughput mean", HIGHER),
     lambda t: (t.steady_state.throughput.mean, t.steady_state.throughput.unit)
     if t.steady_state and t.steady_state.throughput else (None, None)),
]

CLUSTER_METRICS: list[tuple[Metric, str]] = [
    (Metric("store_size", "store size", LOWER, "bytes"), "store_size_bytes"),
    (Metric("segment_count", "segment count", LOWER, "segments"), "segment_count"),
    (Metric("indexing_time", "indexing time", LOWER, "ms"), "indexing_time_ms"),
    (Metric("merge_time", "merge time", LOWER, "ms"), "merge_time_ms"),
    (Metric("refresh_time", "refresh time", LOWER, "ms"), "refresh_time_ms"),
    (Metric("flush_time", "flush time", LOWER, "ms"), "flush_time_ms"),
    (Metric("young_gc_time", "young GC time", LOWER, "ms"), "young_gc_time_ms"),
    (Metric("old_gc_time", "old GC time", LOWER, "ms"), "old_gc_time_ms"),
]

NODE_METRICS: list[tuple[Metric, Callable[[models.NodeSample], float | None]]] = [
    (Metric("process_cpu.mean", "node CPU mean", LOWER, "%"),
     lambda n: n.process_cpu_percent.mean if n.process_cpu_percent else None),
    (Metric("process_cpu.p90", "node CPU p90", LOWER, "%"),
     lambda n: n.process_cpu_percent.p90 if n.process_cpu_percent else None),
]


# workload.capacity's answer, a figure of its task: the highest rate that held, where the search
# converged. A search that stopped at the range's top, the driver's limit or out of time gives only
# a bound, which compared as a value would pose as an effect of the range or the driver.
CAPACITY = Metric("capacity", "capacity", HIGHER, "ops/s")


# Every metric, in the API's order (models.METRIC_NAMES).
METRICS = [*(metric for metric, _ in TASK_METRICS), CAPACITY, *(metric for metric, _ in CLUSTER_METRICS),
           *(metric for metric, _ in NODE_METRICS)]


def metric_named(key: str) -> Metric | None:
    """The task, capacity, cluster or node metric with this key."""
    return next((metric for metric in METRICS if metric.key == key), None)


@dataclass(frozen=True)
class Measurement:
    section: Section
    subject: str  # the task name, "cluster" or "nodes"
    metric: Metric
    value: float | None
    unit: str | None


def measurements(results: models.Results, keys: Collection[str] | None = None) -> list[Measurement]:
    """Every comparable figure of one Experiment's results, in display order (only the metrics
    named in `keys` when given: a sweep's looks at its primary questions need a few of many)."""
    def wanted(metrics: list[tuple[Metric, Any]]) -> list[tuple[Metric, Any]]:
        return metrics if keys is None else [(metric, get) for metric, get in metrics if metric.key in keys]

    found: list[Measurement] = []
    task_metrics = wanted(TASK_METRICS)
    for task in results.tasks:
        for metric, get in task_metrics:
            value, unit = get(task)
            found.append(Measurement(Section.TASK, task.task, metric, value, metric.unit or unit))
    capacity = results.capacity
    if capacity is not None and (keys is None or CAPACITY.key in keys):
        value = capacity.capacity if capacity.stop == capacitysearch.Stop.CONVERGED else None
        found.append(Measurement(Section.TASK, capacity.task, CAPACITY, value, CAPACITY.unit))
    cluster = results.cluster or models.ClusterResult()
    for metric, attribute in wanted(CLUSTER_METRICS):
        found.append(Measurement(Section.CLUSTER, "cluster", metric, getattr(cluster, attribute), metric.unit))
    for metric, get in wanted(NODE_METRICS):
        values = [v for n in results.nodes or [] if (v := get(n)) is not None]
        value = sum(values) / len(values) if values else None
        found.append(Measurement(Section.NODES, "nodes", metric, value, metric.unit))
    return found


# --- inputs --------------------------------------------------------------------------------


@dataclass
class Entry:
    """One Experiment to compare: a label, its results, and what produced them."""

    label: str
    results: models.Results
    spec: models.ExperimentSpec | None = None
    phase: str | None = None
    reason: str | None = None
    cluster_version: str | None = None
    source: str | None = None  # file path or namespace/name
    annotations: dict[str, str] = field(default_factory=dict)
    cell: str | None = None  # a sweep's run: "SWEEP CELL" from its labels (warm-up runs: cells w0, w1, ...)
    repetition: int | None = None  # a sweep's run: its round


class NotComparable(ValueError):
    """An input that holds no results to compare."""


def entry_from_document(document: dict[str, Any], source: str | None = None) -> Entry:
    """An Entry from an Experiment document with status.results (API server or `esbench run --output`)."""
    if document.get("kind") != models.KIND:
        raise NotComparable(f"{source or 'input'}: not an Experiment (kind {document.get('kind')!r})")
    metadata = document.get("metadata") or {}
    labels = metadata.get("labels") or {}
    name = metadata.get("name") or source or "experiment"
    status = document.get("status") or {}
    if not status.get("results"):
        raise NotComparable(
            f"{source or name}: Experiment {name} has no results yet (phase {status.get('phase') or 'none'}"
            + (f", {status.get('reason')}" if status.get("reason") else "") + ")"
        )
    spec = None
    if document.get("spec"):
        try:
            spec = models.ExperimentSpec.model_validate(document["spec"])
        except ValueError:
            spec = None  # results stay comparable even if the spec is from another esbench version
    return Entry(
        label=name,
        results=models.Results.model_validate(status["results"]),
        spec=spec,
        phase=status.get("phase"),
        reason=status.get("reason"),
        cluster_version=status.get("clusterVersion"),
        source=source,
        annotations=dict(metadata.get("annotations") or {}),
        cell=(f"{labels[models.SWEEP_LABEL]} {labels[models.CELL_LABEL]}"
              if models.SWEEP_LABEL in labels and models.CELL_LABEL in labels else None),
        repetition=int(labels[models.REPETITION_LABEL]) if labels.get(models.REPETITION_LABEL, "").isdigit() else None,
    )


def unique_labels(entries: list[Entry]) -> list[Entry]:
    """Labels made unique (the same Experiment name from two files, or a file read twice)."""
    seen: dict[str, int] = {}
    for entry in entries:
        seen[entry.label] = seen.get(entry.label, 0) + 1
    counts: dict[str, int] = {}
    for entry in entries:
        if seen[entry.label] > 1:
            counts[entry.label] = counts.get(entry.label, 0) + 1
            entry.label = f"{entry.label}#{counts[entry.label]}"
    return entries


# --- the comparison ------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """A contender's figure minus the baseline's. Between single runs that is all it is: which
    differences are more than noise takes repeated runs (analysis.stats)."""

    absolute: float
    percent: float | None  # None when the baseline is 0


def difference(baseline: float | None, contender: float | None) -> Difference | None:
    if baseline is None or contender is None:
        return None
    absolute = contender - baseline
    return Difference(absolute, absolute / abs(baseline) * 100 if baseline else None)


@dataclass(frozen=True)
class Row:
    section: Section
    subject: str
    metric: Metric
    unit: str | None
    values: list[float | None]  # baseline first, then each contender
    differences: list[Difference | None]  # one per contender


@dataclass
class Comparison:
    labels: list[str]  # baseline first
    rows: list[Row]
    warnings: list[str]

    @property
    def baseline(self) -> str:
        return self.labels[0]

    @property
    def contenders(self) -> list[str]:
        return self.labels[1:]


def _workload(entry: Entry) -> tuple[str | None, str | None]:
    return entry.results.track, entry.results.challenge


def _facts(environment: models.Environment | None) -> dict[str, str | None]:
    """What should be the same across compared Experiments unless a spec changed it on purpose."""
    if environment is None:
        return {}
    track = environment.track
    nodes = environment.nodes or []
    driver = environment.load_driver or models.LoadDriverEnvironment()

    def across_nodes(attribute: str) -> str | None:
        values = sorted({str(v) for n in nodes if (v := getattr(n, attribute)) is not None})
        return ", ".join(values) or None

    return {
        "track": (track.sha256 or track.revision) if track else None,
        "Rally": environment.rally_version,
        "esbench": environment.esbench_version,
        "JVM": across_nodes("jvm"),
        "node kernel": across_nodes("kernel"),
        "node processors": across_nodes("available_processors"),
        "mmap": across_nodes("mmap"),
        "load driver CPU": driver.cpu_model,
    }


def environment_warnings(entries: list[Entry]) -> list[str]:
    """One warning per fact of the reproducibility record that differs between Experiments."""
    facts = [(e.label, _facts(e.results.environment)) for e in entries]
    warnings = []
    for name in dict.fromkeys(name for _, found in facts for name in found):
        values = {label: found[name] for label, found in facts if found.get(name) is not None}
        if len(set(values.values())) > 1:
            described = ", ".join(f"{label}: {value}" for label, value in values.items())
            warnings.append(f"different {name} ({described}): a difference in the figures may come from it")
    return warnings


def measurement_warnings(entries: list[Entry]) -> list[str]:
    """What makes a race's own figures suspect (foreignwrites, a task that never settled), each named by
    its Experiment; the tasks that never settled once a task over several."""
    found = [f"{entry.label}: {warning}" for entry in entries for warning in foreignwrites.warnings(entry.results)]
    if len(entries) == 1:
        return found + [f"{entries[0].label}: {warning}" for warning in steadystate.warnings(entries[0].results)]
    return found + steadystate.runs_warnings({entry.label: entry.results for entry in entries})


@dataclass
class Group:
    name: str  # a sweep's cell (c0, w0, ...) or g0 (the baseline), g1, ...
    entries: list[Entry]


def repetition_groups(entries: list[Entry]) -> list[Group]:
    """Runs of one configuration, one group each, in order: a sweep's runs by their cell (an A/A
    sweep has two cells of one spec; its warm-up runs are left out: they are there to be
    discarded), other runs by their spec."""
    found: dict[str, Group] = {}
    for entry in entries:
        if entry.cell and entry.cell.split()[-1].startswith(models.WARMUP_CELL_PREFIX):
            continue
        if entry.cell:
            if entry.cell not in found:  # the cell's id, unless runs of two sweeps share it
                short = entry.cell.split()[-1]
                found[entry.cell] = Group(short if all(g.name != short for g in found.values()) else entry.cell, [])
            found[entry.cell].entries.append(entry)
            continue
        if entry.spec is None:
            raise NotComparable(f"{entry.label} has no spec (a race.json?): which runs repeat which is not known")
        key = entry.spec.model_dump_json()
        found.setdefault(key, Group(f"g{len(found)}", [])).entries.append(entry)
    return list(found.values())


def _units_warning(sample: Measurement, found: list[Measurement | None], entries: list[Entry]) -> str:
    """Which Experiments report a figure in another unit than the first, and why when it is known:
    Rally counts a request that failed as one op, not as its documents, so a bulk task with
    failures reports ops/s."""
    usual = next(m.unit for m in found if m is not None and m.value is not None)
    odd = []
    for entry, m in zip(entries, found, strict=True):
        if m is None or m.value is None or m.unit == usual:
            continue
        task = next((t for t in entry.results.tasks if t.task == sample.subject), None)
        why = (f" ({task.error_rate:.1%} of its requests failed, and Rally counts a failed request as one op)"
               if sample.section == Section.TASK and task is not None and task.error_rate else "")
        odd.append(f"{entry.label} in {m.unit}{why}")
    return f"{sample.subject} {sample.metric.label}: in {usual}, but {', '.join(odd)}: not comparable"


def compare(entries: list[Entry]) -> Comparison:
    """The first entry is the baseline; every other one is compared against it.

    Rows: every (section, subject, metric) any entry has a value for, in the order they first
    appear (the baseline's task order first). A metric none of them has is left out.
    """
    if not entries:
        raise ValueError("nothing to compare")
    warnings = []
    for entry in entries:
        if entry.phase and entry.phase != models.Phase.SUCCEEDED.value:
            warnings.append(f"{entry.label} did not succeed ({entry.phase}, {entry.reason}): its figures may be partial")
    workloads = {_workload(e) for e in entries}
    if len(workloads) > 1:
        described = ", ".join(f"{e.label}: {e.results.track}/{e.results.challenge}" for e in entries)
        warnings.append(f"the Experiments ran different workloads ({described}): compare with care")
    warnings += environment_warnings(entries)
    warnings += measurement_warnings(entries)

    table: dict[tuple[Section, str, str], list[Measurement | None]] = {}
    order: list[tuple[Section, str, str]] = []
    for position, entry in enumerate(entries):
        for m in measurements(entry.results):
            key = (m.section, m.subject, m.metric.key)
            if key not in table:
                table[key] = [None] * len(entries)
                order.append(key)
            table[key][position] = m
    section_rank = {s: i for i, s in enumerate(Section)}
    order.sort(key=lambda k: section_rank[k[0]])  # stable: task order within a section kept

    rows = []
    for key in order:
        found = table[key]
        if all(m is None or m.value is None for m in found):
            continue
        sample = next(m for m in found if m is not None)
        units = {m.unit for m in found if m is not None and m.value is not None}
        if len(units) > 1:
            warnings.append(_units_warning(sample, found, entries))
        values = [m.value if m else None for m in found]
        rows.append(Row(
            section=sample.section,
            subject=sample.subject,
            metric=sample.metric,
            unit=next((m.unit for m in found if m is not None and m.unit), None),
            values=values,
            differences=[difference(values[0], v) for v in values[1:]],
        ))
    return Comparison(labels=[e.label for e in entries], rows=rows, warnings=warnings)


# --- formatting ----------------------------------------------------------------------------

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
# Units a value carries itself when formatted (bytes as KiB/MiB, fractions and CPU as %).
_SELF_DESCRIBING = ("bytes", "fraction", "%", "segments")


def format_value(value: float | None, unit: str | None, with_unit: bool = True) -> str:
    """A value for people: bytes in binary units, fractions as percent, large numbers grouped.
    with_unit=False leaves out a plain unit (ms, docs/s), for tables with a unit column."""
    if value is None:
        return "–"
    if unit == "bytes":
        size, index = float(value), 0
        while abs(size) >= 1024 and index < len(_BINARY_UNITS) - 1:
            size /= 1024
            index += 1
        return f"{size:,.1f} {_BINARY_UNITS[index]}" if index else f"{size:,.0f} B"
    if unit == "fraction":
        return f"{value * 100:.2f}%"
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "segments":
        return f"{value:,.0f}"
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return f"{text} {unit}" if unit and with_unit else text


def unit_label(unit: str | None) -> str:
    """The unit for a table's unit column (empty where the value shows its own)."""
    return "" if unit is None or unit in _SELF_DESCRIBING else unit


def format_difference(d: Difference | None, unit: str | None, with_unit: bool = True) -> str:
    if d is None:
        return "–"
    if d.absolute == 0:
        return "0"
    sign = "+" if d.absolute > 0 else "-"
    magnitude = format_value(abs(d.absolute), unit, with_unit)
    percent = f" ({sign}{abs(d.percent):.1f} %)" if d.percent is not None else ""
    return f"{sign}{magnitude}{percent}"


def subject_label(row: Row) -> str:
    return row.subject if row.section == Section.TASK else row.section.value


def metric_name(row: Row) -> str:
    return row.metric.label if row.section != Section.TASK else f"{row.subject} · {row.metric.label}"


def table_header(comparison: Comparison) -> list[str]:
    """Columns of the comparison as a table (terminal, Markdown, HTML)."""
    header = ["task / scope", "metric", "unit", f"{comparison.baseline} (baseline)"]
    for label in comparison.contenders:
        header += [label, f"Δ {label}"]
    return header


def table_rows(comparison: Comparison) -> list[tuple[Row, list[str]]]:
    """Each row with its cells as text; the task is named on the first row of its group only."""
    rows = []
    previous = None
    for row in comparison.rows:
        group = (row.section, row.subject)
        cells = [subject_label(row) if group != previous else "", row.metric.label, unit_label(row.unit),
                 format_value(row.values[0], row.unit, with_unit=False)]
        for value, d in zip(row.values[1:], row.differences, strict=True):
            cells += [format_value(value, row.unit, with_unit=False), format_difference(d, row.unit, with_unit=False)]
        rows.append((row, cells))
        previous = group
    return rows


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|")


def to_markdown(comparison: Comparison) -> str:
    header = table_header(comparison)
    lines = ["| " + " | ".join(map(_md_escape, header)) + " |", "|---|---|---|" + "---:|" * (len(header) - 3)]
    for _, cells in table_rows(comparison):
        lines.append("| " + " | ".join(map(_md_escape, cells)) + " |")
    text = "\n".join(lines) + "\n"
    if comparison.warnings:
        text += "\n" + "\n".join(f"> warning: {w}" for w in comparison.warnings) + "\n"
    return text


CSV_COLUMNS = ["section", "subject", "metric", "unit", "direction", "experiment", "value", "baseline",
               "baseline_value", "difference", "difference_percent"]


def to_csv(comparison: Comparison) -> str:
    """Long format: one line per row and experiment (the baseline's own line has no difference)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in comparison.rows:
        for position, (label, value) in enumerate(zip(comparison.labels, row.values, strict=True)):
            d = row.differences[position - 1] if position else None
            writer.writerow([
                row.section.value, row.subject, row.metric.key, row.unit or "", row.metric.direction.value,
                label, _raw(value), comparison.baseline, _raw(row.values[0]),
                _raw(d.absolute if d else None), _raw(d.percent if d else None),
            ])
    return out.getvalue()


def _raw(value: float | None) -> str:
    return "" if value is None else repr(value)


def to_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "baseline": comparison.baseline,
        "contenders": comparison.contenders,
        "warnings": comparison.warnings,
        "rows": [
            {
                "section": row.section.value,
                "subject": row.subject,
                "metric": row.metric.key,
                "label": row.metric.label,
                "unit": row.unit,
                "direction": row.metric.direction.value,
                "values": dict(zip(comparison.labels, row.values, strict=True)),
                "differences": {
                    label: None if d is None else
                    {"absolute": d.absolute, "percent": d.percent}
                    for label, d in zip(comparison.contenders, row.differences, strict=True)
                },
            }
            for row in comparison.rows
        ],
    }


def to_json(comparison: Comparison) -> str:
    return json.dumps(to_dict(comparison), indent=2) + "\n"
