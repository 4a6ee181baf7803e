"""How the commands draw on a terminal (rich): the progress of `esbench run`, and the tables of
`esbench show`, `compare` and `sweep`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from esbench.analysis import capacitysearch, compare, foreignwrites, profiles, stats, steadystate
from esbench.analysis.compare import Comparison, Section, format_value, unit_label
from esbench.api import models
from esbench.api.reasons import ConditionType


def console() -> Console:
    """Standard output; when it is not a terminal (a log, CI), wide enough for the tables."""
    found = Console(highlight=False)
    if not found.is_terminal and "COLUMNS" not in os.environ:
        found = Console(highlight=False, width=160)
    return found


def elapsed(seconds: float) -> str:
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


class RichProgress:
    """local.Progress on a terminal (live steps with spinners and elapsed times) or, when output
    goes to a file or pipe, as plain lines with timings."""

    def __init__(self, console: Console, verbose: bool = False):
        self.console = console
        self.verbose = verbose
        self.live = console.is_terminal and not verbose
        self._progress = Progress(
            SpinnerColumn(finished_text=" "),
            TextColumn("{task.description}"),
            TextColumn("[dim]{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=console,
        ) if self.live else None

    def __enter__(self) -> RichProgress:
        if self._progress:
            self._progress.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress:
            self._progress.stop()

    @contextlib.contextmanager
    def step(self, title: str) -> Iterator[Callable[[str], None]]:
        started = time.monotonic()
        shown = escape(title)
        if self._progress:
            task = self._progress.add_task(shown, total=1, detail="")

            def update(detail: str) -> None:
                self._progress.update(task, detail=escape(detail))

            try:
                yield update
            except BaseException:
                self._progress.update(task, description=f"[red]✗ {shown}", completed=1)
                self._progress.stop_task(task)
                raise
            self._progress.update(task, description=f"[green]✓[/] {shown}", completed=1)
            self._progress.stop_task(task)
            return
        last: list[str] = []
        self.console.print(f"→ {shown}", highlight=False, soft_wrap=True)
        try:
            yield last.append
        except BaseException:
            self.console.print(f"[red]✗ {shown}[/] after {elapsed(time.monotonic() - started)}", highlight=False,
                               soft_wrap=True)
            raise
        detail = f" [dim]{escape(last[-1])}[/]" if last else ""
        self.console.print(f"[green]✓[/] {shown} ({elapsed(time.monotonic() - started)}){detail}", highlight=False,
                           soft_wrap=True)

    def note(self, text: str) -> None:
        self.console.print(f"[cyan]i[/] {escape(text)}", highlight=False, soft_wrap=not self.live)

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]![/] {escape(text)}", highlight=False, soft_wrap=not self.live)

    def output(self, line: str) -> None:
        if self.verbose:
            self.console.print(escape(line), style="dim", highlight=False, soft_wrap=True)


PROFILE_FRAMES = 5  # per task in `esbench show`; results keep ten


def results_tables(results: models.Results) -> list[Table]:
    """One Experiment's figures: per task, then the cluster and its nodes."""
    units = {p.unit for t in results.tasks for p in (t.latency, t.service_time) if p and p.unit}
    unit = units.pop() if len(units) == 1 else None  # Rally reports latency in ms
    tasks = Table(title="Tasks", title_justify="left", caption_justify="left",
                  caption="throughput: median" + (f"; latency and service time in {unit}" if unit else "")
                  + "; latency counts from when a request was due (fixed rate), service time from when it was sent"
                  + "; CPU and disk read: the nodes while the task ran")
    tasks.add_column("task", no_wrap=True)
    tasks.add_column("throughput", justify="right", no_wrap=True)
    for p in ("p50", "p99"):
        tasks.add_column(f"latency {p}", justify="right", no_wrap=True)
        tasks.add_column(f"service {p}", justify="right", no_wrap=True)
    tasks.add_column("errors", justify="right", no_wrap=True)
    tasks.add_column("node CPU", justify="right", no_wrap=True)
    tasks.add_column("disk read", justify="right", no_wrap=True)
    for t in results.tasks:
        latency, service = t.latency or models.Percentiles(), t.service_time or models.Percentiles()
        resources = t.resources or models.TaskResources(seconds=0, nodes=0)
        tasks.add_row(
            t.task,
            format_value(t.throughput.median, t.throughput.unit) if t.throughput else "–",
            *[format_value(getattr(timing, p), None if unit else timing.unit)
              for p in ("p50", "p99") for timing in (latency, service)],
            format_value(t.error_rate, "fraction"),
            format_value(resources.process_cpu_percent, "%"),
            format_value(resources.io_read_bytes, "bytes"),
        )
    tables = [tasks]
    if results.capacity:
        tables.append(capacity_table(results.capacity))
    with_resources = [t for t in results.tasks if t.resources]
    if with_resources:
        spent = Table(title="What the nodes spent while each task ran", title_justify="left", caption_justify="left",
                      caption="window: from Rally's log, warm-up included; sums over nodes, CPU % and heap averaged")
        columns = [("window", "seconds", "s"), ("node CPU", "process_cpu_percent", "%"),
                   ("busiest node", "process_cpu_percent_max", "%"), ("CPU time", "process_cpu_ms", "ms"),
                   ("host CPU", "os_cpu_percent", "%"), ("heap", "heap_used_bytes", "bytes"), ("GC", "gc_time_ms", "ms"),
                   ("disk read", "io_read_bytes", "bytes"), ("reads", "io_read_operations", None),
                   ("written", "io_write_bytes", "bytes"), ("write rejections", "write_rejections", None)]
        if any(t.resources.jit_cpu_ms is not None for t in with_resources):  # local mode: the node's threads
            columns[4:4] = [("JIT CPU", "jit_cpu_ms", "ms"), ("GC CPU", "gc_cpu_ms", "ms")]
        if any(t.resources.major_page_faults is not None for t in with_resources):  # local mode's memory cgroup
            columns += [("major faults", "major_page_faults", None), ("page cache", "page_cache_bytes", "bytes")]
        spent.add_column("task", no_wrap=True)
        for header, _, _ in columns:
            spent.add_column(header, justify="right", no_wrap=True)
        for t in with_resources:
            spent.add_row(t.task, *[format_value(getattr(t.resources, attribute), unit) for _, attribute, unit in columns])
        tables.append(spent)
    steady = [t for t in results.tasks if t.steady_state and not steadystate.too_short(t.steady_state)]
    if steady:
        tables.append(steady_state_table(steady))
    with_files = [t for t in with_resources if t.resources.index_files]
    if with_files:
        tables.append(index_files_table(with_files))
    measured = [m for m in compare.measurements(results) if m.section != Section.TASK and m.value is not None]
    if measured:
        cluster = Table(title="Cluster and nodes", title_justify="left")
        cluster.add_column("figure", no_wrap=True)
        cluster.add_column("value", justify="right", no_wrap=True)
        for m in measured:
            cluster.add_row(m.metric.label, format_value(m.value, m.unit))
        tables.append(cluster)
    if results.indices:
        layout = Table(title="Indices as the race left them", title_justify="left", caption_justify="left",
                       caption="every shard copy; compound: segments in one .cfs file, which hybridfs memory-maps")
        for header in ("index", "segments", "compound", "documents", "size", "segment attributes"):
            layout.add_column(header, justify="left" if header in ("index", "segment attributes") else "right",
                              no_wrap=header != "segment attributes", overflow="fold")
        for index in results.indices:
            attributes = "\n".join(f"{key}: {', '.join(values)}" for key, values in (index.attributes or {}).items())
            layout.add_row(index.index, str(index.segments), str(index.compound_segments),
                           format_value(index.documents, None), format_value(index.size_bytes, "bytes"), attributes)
        tables.append(layout)
    profiled = [t for t in results.tasks if t.profile]
    if results.profile and (profiled or results.profile.problem):
        recording = results.profile
        notes = ["self: the frame running when sampled"]
        if recording.folder or recording.config_map:
            notes.append(f"stacks and flame graphs in {recording.folder}" if recording.folder
                         else f"stacks in ConfigMap {recording.config_map}")
        top = Table(title=f"Where each task's samples were taken ({recording.profiler}, {recording.event.value}"
                          f"{', every ' + recording.interval if recording.interval else ''})",
                    title_justify="left", caption_justify="left",
                    caption="; ".join(notes) + (f"\nincomplete: {recording.problem}" if recording.problem else ""))
        top.add_column("task", no_wrap=True)
        top.add_column("samples", justify="right", no_wrap=True)
        top.add_column("top frames (self)", overflow="fold")
        for t in profiled:
            assert t.profile is not None
            frames = "\n".join(f"{frame.percent:5.1f} %  {frame.frame}" for frame in t.profile.top[:PROFILE_FRAMES])
            top.add_row(t.task, str(t.profile.samples), frames, end_section=True)
        tables.append(top)
    return tables


def steady_state_table(tasks: list[models.TaskResult]) -> Table:
    """Per task, where its service times stopped settling and its figures from there on."""
    table = Table(title="Steady state", title_justify="left", caption_justify="left",
                  caption="MSER-5 over each task's measured requests; began: since the task's start (Rally's "
                          "warm-up included); figures of the requests kept; Rally's own figures above are unchanged")
    for header in ("task", "began", "kept", "service p50", "service p99", "throughput mean"):
        table.add_column(header, justify="left" if header == "task" else "right", no_wrap=True)
    for t in tasks:
        state = t.steady_state
        assert state is not None
        if not state.reached:
            table.add_row(t.task, "[yellow]none[/]", f"0 of {state.samples:,}", "–", "–", "–")
            continue
        service = state.service_time or models.Percentiles()
        table.add_row(t.task, f"{state.start_seconds:,.1f} s", f"{state.kept:,} of {state.samples:,}",
                      format_value(service.p50, service.unit), format_value(service.p99, service.unit),
                      format_value(state.throughput.mean, state.throughput.unit) if state.throughput else "–")
    return table


# The percentiles of each probe `esbench show` prints beside the objective's, which comes first (the
# p90s are in the status and on the report's curve: the table keeps to 100 columns with its CPU, disk
# and JIT figures).
CAPACITY_COLUMNS = tuple(f"{kind}.{p}" for kind in ("latency", "service_time") for p in ("p50", "p99"))
WARMUP_VERDICT = "warm-up"  # a warm-up probe is not judged
PROBE_VERDICT_COLOURS = {"Passed": "green", "Failed": "red", "DriverLimited": "yellow", WARMUP_VERDICT: "dim"}


def capacity_table(capacity: models.CapacityResult) -> Table:
    """workload.capacity's probes in the order made (the warm-up's first), then the answer: the
    bracket the capacity lies in, why the search stopped and what it took. Why the driver limited a
    probe goes below the table, so that its lines keep to 100 columns."""
    metrics = [capacity.metric, *(m for m in CAPACITY_COLUMNS if m != capacity.metric)]
    probes = capacity.probes
    rows = [*capacity.warmup, *probes]
    jit = any(p.jit_share_percent is not None for p in rows)
    disk = any(p.disk_read_bytes_per_second is not None for p in rows)
    per_probe = f" ({elapsed(sum(p.seconds for p in probes) / len(probes))} a probe)" if probes else ""
    notes = [f"capacity {_rate(capacity.capacity)} ops/s, bracket [{_rate(capacity.capacity)}, {_rate(capacity.upper)}]; "
             f"stop {capacity.stop}; confirmations {capacity.confirmations}; warm-up {_warmup(capacity)}",
             f"search {elapsed(capacity.seconds)}{per_probe}: {capacity.message}",
             "ops/s: offered (–: a warm-up, as fast as the clients can), achieved (Rally's median); behind: lag "
             f"gained a second (held: {capacitysearch.SHORTFALL:.0%} or less); ms (k: thousands): latency, service "
             "time (* the objective); CPU: the nodes' mean" + ("; read: their disks' MiB/s" if disk else "")
             + ("; JIT: its JIT compilers' share" if jit else ""),
             *(f"driver-limited at {_rate(p.target_throughput)} ops/s: {p.driver}" for p in probes if p.driver)]
    table = Table(title=escape(f"Capacity of {capacity.task} under {capacity.objective}"), title_justify="left",
                  caption=escape("\n".join(notes)), caption_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    headers = ["\noffered", "\nachieved", "\nbehind", *(_short_metric(m) + ("*" if m == capacity.metric else "") for m in metrics),
               "\nerrors", "\nCPU", *(["\nread"] if disk else []), *(["\nJIT"] if jit else []), "\nverdict"]  # two lines: lat over p99 is narrower than "lat p99"
    for header in headers:
        table.add_column(header, justify="left" if header.endswith("verdict") else "right", no_wrap=True)
    for p in rows:
        figures = {f"{kind}.{name}": getattr(timing, name) for kind, timing in (("latency", p.latency),
                                                                                ("service_time", p.service_time))
                   if timing for name in ("p50", "p90", "p99", "p100")}
        verdict = p.verdict or WARMUP_VERDICT
        table.add_row(_rate(p.target_throughput), _rate(p.throughput), format_value(p.lag_growth_percent, "%"), *(_ms(figures.get(m)) for m in metrics),
                      format_value(p.error_rate, "fraction"), format_value(p.node_cpu_percent, "%"),
                      *([_mib(p.disk_read_bytes_per_second)] if disk else []),
                      *([_percent(p.jit_share_percent)] if jit else []),
                      f"[{PROBE_VERDICT_COLOURS.get(verdict, 'default')}]{verdict}[/]")
    return table


def _warmup(capacity: models.CapacityResult) -> str:
    if not capacity.warmup:
        return "none"
    return f"{len(capacity.warmup)} probes, " + ("steady" if capacity.steady else "still getting faster")


def _percent(value: float | None) -> str:
    """A share in whole percent: the JIT's is read as a trend towards none, and the table is full."""
    return "–" if value is None else f"{value:.0f}%"


def _mib(value: float | None) -> str:
    """Bytes as MiB, a tenth below 100: the column has room for four characters."""
    if value is None:
        return "–"
    mib = value / 2**20
    return f"{mib:.1f}" if mib < 99.95 else f"{mib:,.0f}"


def _rate(value: float | None) -> str:
    """ops/s, four significant figures at most: the search's rates are geometric means."""
    return "–" if value is None else f"{value:,.0f}" if value >= 1000 else f"{value:.4g}"


def _ms(value: float | None) -> str:
    """Three figures, or thousands (k) from 10 s on: a probe past the capacity queues for its length."""
    if value is None:
        return "–"
    return f"{value / 1000:,.0f}k" if value >= 10_000 else f"{value:,.0f}" if value >= 100 else f"{value:#.3g}"


def _short_metric(metric: str) -> str:
    kind, percentile = metric.split(".")
    return f"{'lat' if kind == 'latency' else 'svc'}\n{percentile}"


# The index files a study of the page cache asks about first, in this order; others follow.
MAIN_INDEX_FILES = ("fdt", "doc", "pos", "tim", "dvd", "cfs")


def index_files_table(tasks: list[models.TaskResult]) -> Table:
    """Per task, how much of each kind of index file the page cache held (local mode's fincore)."""
    seen = {extension for t in tasks for extension in t.resources.index_files}
    extensions = [e for e in MAIN_INDEX_FILES if e in seen] + sorted(seen - set(MAIN_INDEX_FILES))
    table = Table(title="Index files in the page cache", title_justify="left",
                  caption_justify="left", caption="by Lucene file extension: cached of its files' bytes, means over "
                                                  "the task's samples (fdt stored fields, doc postings, pos positions, "
                                                  "tim terms, dvd doc values, cfs compound segments)")
    table.add_column("task", no_wrap=True)
    for extension in extensions:
        table.add_column(extension, justify="right", no_wrap=True)
    for t in tasks:
        files = t.resources.index_files
        table.add_row(t.task, *[f"{format_value(files[e].cached_bytes, 'bytes')} of "
                                f"{format_value(files[e].size_bytes, 'bytes')}" if e in files else "–"
                                for e in extensions])
    return table


def describe_environment(environment: models.Environment) -> str:
    """The reproducibility record in one paragraph."""
    parts = [f"Elasticsearch {environment.elasticsearch_version} (build {(environment.elasticsearch_build_hash or '?')[:12]})"]
    for node in environment.nodes or []:
        parts.append(
            f"{node.node}: {node.jvm or 'JVM ?'}, {node.available_processors or '?'} processors, "
            f"heap {format_value(node.heap_max_bytes, 'bytes')}, memory limit {format_value(node.cgroup_memory_limit_bytes, 'bytes')}, "
            f"mmap {'on' if node.mmap else 'off'}, kernel {node.kernel or '?'}"
        )
    track = environment.track
    if track:
        parts.append(f"track {track.name} ({track.source.value}) " + (f"sha256 {track.sha256[:16]}" if track.sha256 else f"revision {track.revision or '?'}"))
    driver = environment.load_driver
    if driver:
        parts.append(f"Rally {environment.rally_version or '?'} on {driver.cpu_model or '?'} ({driver.processors} processors, kernel {driver.kernel})")
    kubernetes = environment.kubernetes
    for role, pod in [("Rally", kubernetes.rally if kubernetes else None),
                      *(("Elasticsearch", p) for p in (kubernetes.elasticsearch or [] if kubernetes else []))]:
        if pod is not None and pod.qos_class:
            parts.append(f"{role} pod {pod.pod}: QoS {pod.qos_class}")
    parts.append(f"esbench {environment.esbench_version or '?'}")
    return "; ".join(parts)


def print_document_summary(console: Console, document: dict[str, Any]) -> None:
    state = document["status"]
    results = models.Results.model_validate(state["results"]) if state.get("results") else None
    if results and results.tasks:
        for table in results_tables(results):
            console.print(table)
    if results and results.environment:
        console.print(f"environment: {escape(describe_environment(results.environment))}", highlight=False, soft_wrap=True)
    # What makes its figures suspect.
    print_warnings(console, foreignwrites.warnings(results) + steadystate.warnings(results) if results else [])
    colour = "green" if state["phase"] == models.Phase.SUCCEEDED.value else "red"
    console.print(f"[{colour}]{state['phase']}[/] ({escape(state['reason'])}): {escape(state['message'])}",
                  highlight=False, soft_wrap=True)
    if state.get("headline"):
        console.print(f"headline: [bold]{escape(state['headline'])}[/]", highlight=False)


def print_warnings(console: Console, warnings: list[str]) -> None:
    for warning in warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)


def comparison_table(comparison: Comparison) -> Table:
    """One column per Experiment; a contender's cell holds its value and, below it, the
    difference to the baseline: a difference, not a verdict (one run per side cannot tell)."""
    table = Table(title=f"Baseline: {comparison.baseline}", title_justify="left")
    table.add_column("task / scope", no_wrap=True)
    table.add_column("metric", min_width=len("service time p100"))
    table.add_column("unit", min_width=6)
    table.add_column(f"{comparison.baseline} (baseline)", justify="right", overflow="fold")
    for label in comparison.contenders:
        table.add_column(label, justify="right", overflow="fold")
    rows = compare.table_rows(comparison)
    for index, (row, cells) in enumerate(rows):
        styled = [Text(cell) for cell in cells[:4]]
        for position, d in enumerate(row.differences):
            cell = Text(cells[4 + 2 * position])
            if d is not None:
                cell.append("\n")
                cell.append(cells[5 + 2 * position], style="dim")
            styled.append(cell)
        following = rows[index + 1][0] if index + 1 < len(rows) else None
        boundary = following is None or (following.section, following.subject) != (row.section, row.subject)
        table.add_row(*styled, end_section=boundary)
    return table


def print_sweep(console: Console, document: dict[str, Any], every_row: bool = False) -> None:
    """A sweep as `esbench sweep` shows it, the answer first: where it stands, its primary
    questions, its gates and order effect, the exploratory comparisons that found a difference
    (every_row: all of them), then its cells and where a run's time goes. Fits 100 columns."""
    state = document.get("status") or {}
    progress = state.get("progress") or {}
    console.print(f"[bold]{escape(document['metadata']['name'])}[/]: {state.get('phase', 'not started')} "
                  f"({escape(state.get('reason', ''))}) {progress.get('summary', '')} runs finished; "
                  f"{escape(state.get('message', ''))}", highlight=False, soft_wrap=True)
    baselines = [cell["id"] for cell in state.get("cells", []) if cell.get("baseline")] or [state.get("baseline", "?")]
    rows = state.get("comparison", [])
    shown = rows if every_row else [r for r in rows if r.get("family") == "primary" or _decided(r)]
    if shown:
        console.print(comparison_statistics(", ".join(baselines), state.get("corrections") or {}, shown))
    folded = len(rows) - len(shown)
    if folded:
        console.print(f"{folded} exploratory comparison(s) without a Better or Worse are not shown: "
                      "all of them with --all, --format json or esbench report.", style="dim")
    for gate in state.get("gates", []):
        console.print(_gate_line(gate), highlight=False)
    order = next((c for c in state.get("conditions") or [] if c.get("type") == ConditionType.ORDER_EFFECT), None)
    if order:
        colour = "yellow" if order.get("status") == "True" else "green"
        console.print(f"order: [{colour}]{order['reason']}[/] {escape(order.get('message', ''))}", highlight=False)
    for table in sweep_tables(document):
        console.print(table)
    spent = state.get("timing")
    if spent:
        share = spent["overheadSeconds"] / spent["runSeconds"] * 100 if spent["runSeconds"] else 0
        console.print(f"a run (median of {spent['runs']}): {spent['runSeconds']:.0f} s, of which Rally's tasks "
                      f"{spent['taskSeconds']:.0f} s and overhead {spent['overheadSeconds']:.0f} s ({share:.0f} %)",
                      highlight=False, soft_wrap=True)


def _decided(row: dict[str, Any]) -> bool:
    return any(c["verdict"] in ("Better", "Worse") for c in row["cells"])


def _gate_line(gate: dict[str, Any]) -> str:
    colour = {"Passed": "green", "Failed": "red"}.get(gate["result"], "yellow")
    return (f"gate {escape(gate['task'])} {gate['metric']} (at most {gate['maxRegressionPercent']}% worse): "
            f"[{colour}]{gate['result']}[/] {escape(gate['message'])}")


VERDICT_STYLES = {"Better": "green", "Worse": "red", "Equivalent": "cyan", "Baseline": "bold"}
RUN_COUNTS = ("succeeded", "failed", "running", "pending")


def sweep_tables(document: dict[str, Any]) -> list[Table]:
    """A sweep's cells (their runs so far, and why a cell got no further round), then each cell's
    within-race contrasts."""
    state = document.get("status") or {}
    cells = Table(title="Cells", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    stops = any("stopped" in cell for cell in state.get("cells", []))  # rounds until the answer is clear
    longest = max((len(cell["label"]) for cell in state.get("cells", [])), default=0)
    for column in ("cell", "values", "runs", "cluster", *(["stopped"] * stops)):
        cells.add_column(column, overflow="fold", no_wrap=column in ("cell", "runs"),
                         min_width=min(longest, 36) if column == "values" else None)
    for cell in state.get("cells", []):
        name = f"{cell['id']} (baseline)" if cell.get("baseline") else cell["id"]
        runs = ", ".join(f"{cell[k]} {k}" for k in RUN_COUNTS if cell.get(k)) or "none yet"
        cells.add_row(name, escape(cell["label"]), runs, cell.get("cluster", "–"),
                      *([escape(cell.get("stopped", ""))] * stops))
    tables = [cells]
    for contrast in state.get("contrasts", []):
        title = (f"{contrast['cell']}: contrast {contrast['name']}, against task {contrast['baseline']} over the "
                 f"cell's runs{corrected(contrast.get('corrections') or {})}")
        tables.append(statistics_table(title, "contrast", contrast["rows"], contender="task"))
    return tables


def corrected(corrections: dict[str, Any]) -> str:
    """How many comparisons each family's p-values were corrected over (stats.corrections), for a title."""
    families = "; ".join(f"{family}: {corrections[family]['correction']} over {corrections[family]['comparisons']}"
                         for family in ("primary", "exploratory") if (corrections.get(family) or {}).get("comparisons"))
    return f" (corrected for many comparisons: {families})" if families else ""


def comparison_statistics(baseline: str, corrections: dict[str, Any], rows: list[dict[str, Any]]) -> Table:
    """A comparison of cells (stats.to_wire rows), titled with its corrections."""
    return statistics_table(f"Comparison against {baseline}{corrected(corrections)}", "task", rows)


def statistics_table(title: str, subject: str, rows: list[dict[str, Any]], contender: str = "cell") -> Table:
    """Rows in stats.to_wire form, one line per contender (a cell, or a task of a contrast), as
    Rally lays out a comparison: the baseline's and the contender's estimates, the change with its
    interval at the adjusted level, the raw and adjusted p-values and the verdict. Each task heads
    its metrics (with their units); primary questions (marked *) first. The
    contender's column (a cell, or a contrast's task) is left out when a sweep has only one. The
    numbers never wrap; the question and the verdict's notes do, so that it fits 100 columns."""
    contender_ids = {c["cell"] for row in rows for c in row["cells"] if c["verdict"] != "Baseline"}
    named = len(contender_ids) > 1 or contender != "cell"
    columns = (f"{subject}: metric", *([contender] if named else []), "baseline", "contender",
               "change [interval]", "p raw/adj.", "verdict")
    table = Table(title=escape(title), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0),
                  caption=escape("baseline, contender: geometric means of the runs (medians where a run has 0). "
                                 "change: their ratio (Hodges-Lehmann's with MannWhitneyU); where a run has 0, the "
                                 "difference of means in % of the baseline's. [interval] at the corrected level; p "
                                 "raw/adjusted. ~N runs: a rough guide to the runs a verdict would take. Significant "
                                 "uncorrected: an Inconclusive change whose uncorrected interval excludes no change; "
                                 "declared primary, it would be tested alone. † the largest of a run's requests: it "
                                 "moves with their number."),
                  caption_justify="left")
    rows = sorted(rows, key=lambda r: r.get("family") != "primary")
    metrics = [_metric_label(row) for row in rows]
    numbers = ("baseline", "contender", "change [interval]", "p raw/adj.")
    # Fixed, so that only the verdict's notes wrap: the metric's name whole, its unit may go below.
    first_width = min(max((len(r["metric"]) + 2 for r in rows), default=0), 19)
    for column in columns:
        table.add_column(column, justify="right" if column in numbers else "left", overflow="fold",
                         no_wrap=column in numbers or column == contender,
                         width=first_width if column == columns[0] else None)
    for index, (row, metric) in enumerate(zip(rows, metrics, strict=True)):
        if index == 0 or rows[index - 1]["subject"] != row["subject"]:
            table.add_row(Text(row["subject"], style="bold"))
        following = rows[index + 1]["subject"] if index + 1 < len(rows) else None
        contenders = stats.contenders(row)
        for position, (baseline, found) in enumerate(contenders):
            verdict = Text(found["verdict"], style=VERDICT_STYLES.get(found["verdict"], "dim"))
            notes = [*([f"~{found['runsNeeded']} runs"] if found.get("runsNeeded") else []),
                     *(["noisy"] if found.get("noisy") else []),
                     *(["significant uncorrected"] if stats.uncorrected_hint(found) else [])]
            if notes:
                verdict.append(" " + ", ".join(notes), style="yellow" if len(notes) > 1 or found.get("noisy") else "dim")
            cell = [stats.contender_label(found)] if named else []
            last = position == len(contenders) - 1
            table.add_row(metric if position == 0 else "", *cell, _estimate(baseline), _estimate(found),
                          stats.change_text(found), stats.p_values_text(found), verdict,
                          end_section=last and (following != row["subject"] or len(contenders) > 1))
    return table


def _metric_label(row: dict[str, Any]) -> str:
    unit = unit_label(row.get("unit"))
    return (row["metric"] + (f" ({unit})" if unit else "") + (" *" if row.get("family") == "primary" else "")
            + (" †" if row.get("followsRequestCount") else ""))


def _estimate(found: dict[str, Any] | None) -> str:
    return "–" if found is None else format_value(stats.estimate(found), None)


def frame_changes_table(rows: list[profiles.FrameChange]) -> Table:
    table = Table(title="Frames whose share of the samples moved most (self)", title_justify="left",
                  caption="percentage points of each profile's own samples", caption_justify="left")
    table.add_column("frame", overflow="fold")
    for header in ("baseline", "this", "change"):
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(row.frame, f"{row.baseline_percent:.1f} %", f"{row.percent:.1f} %", f"{row.change:+.1f} pp")
    return table
