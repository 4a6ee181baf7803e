"""The user-facing commands: `esbench run`, `esbench compare`, `esbench report`.

Thin: parse options, call local / validation / sources / compare / html_report, draw with rich.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from esbench.analysis import compare, contrasts, stats
from esbench.analysis.compare import Comparison, Section, Verdict, format_value
from esbench.api import models, validation
from esbench.cli import credentials, local, sources

# --- progress ------------------------------------------------------------------------------


def _elapsed(seconds: float) -> str:
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
            self.console.print(f"[red]✗ {shown}[/] after {_elapsed(time.monotonic() - started)}", highlight=False,
                               soft_wrap=True)
            raise
        detail = f" [dim]{escape(last[-1])}[/]" if last else ""
        self.console.print(f"[green]✓[/] {shown} ({_elapsed(time.monotonic() - started)}){detail}", highlight=False,
                           soft_wrap=True)

    def note(self, text: str) -> None:
        self.console.print(f"[cyan]i[/] {escape(text)}", highlight=False, soft_wrap=not self.live)

    def warn(self, text: str) -> None:
        self.console.print(f"[yellow]![/] {escape(text)}", highlight=False, soft_wrap=not self.live)

    def output(self, line: str) -> None:
        if self.verbose:
            self.console.print(escape(line), style="dim", highlight=False, soft_wrap=True)


# --- results tables ------------------------------------------------------------------------


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
    with_resources = [t for t in results.tasks if t.resources]
    if with_resources:
        spent = Table(title="What the nodes spent while each task ran", title_justify="left", caption_justify="left",
                      caption="window: from Rally's log, warm-up included; sums over nodes, CPU % and heap averaged")
        columns = [("window", "seconds", "s"), ("node CPU", "process_cpu_percent", "%"),
                   ("busiest node", "process_cpu_percent_max", "%"), ("CPU time", "process_cpu_ms", "ms"),
                   ("host CPU", "os_cpu_percent", "%"), ("heap", "heap_used_bytes", "bytes"), ("GC", "gc_time_ms", "ms"),
                   ("disk read", "io_read_bytes", "bytes"), ("reads", "io_read_operations", None),
                   ("written", "io_write_bytes", "bytes"), ("write rejections", "write_rejections", None)]
        spent.add_column("task", no_wrap=True)
        for header, _, _ in columns:
            spent.add_column(header, justify="right", no_wrap=True)
        for t in with_resources:
            spent.add_row(t.task, *[format_value(getattr(t.resources, attribute), unit) for _, attribute, unit in columns])
        tables.append(spent)
    measured = [m for m in compare.measurements(results) if m.section != Section.TASK and m.value is not None]
    if measured:
        cluster = Table(title="Cluster and nodes", title_justify="left")
        cluster.add_column("figure", no_wrap=True)
        cluster.add_column("value", justify="right", no_wrap=True)
        for m in measured:
            cluster.add_row(m.metric.label, format_value(m.value, m.unit))
        tables.append(cluster)
    return tables


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
    colour = "green" if state["phase"] == models.Phase.SUCCEEDED.value else "red"
    console.print(f"[{colour}]{state['phase']}[/] ({escape(state['reason'])}): {escape(state['message'])}",
                  highlight=False, soft_wrap=True)
    if state.get("headline"):
        console.print(f"headline: [bold]{escape(state['headline'])}[/]", highlight=False)


def comparison_table(comparison: Comparison) -> Table:
    """One column per Experiment; a contender's cell holds its value and, below it, the
    difference to the baseline (green better, red worse)."""
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
                style = {Verdict.BETTER: "green", Verdict.WORSE: "red"}.get(d.verdict, "dim")
                cell.append("\n")
                cell.append(cells[5 + 2 * position], style=style)
            styled.append(cell)
        following = rows[index + 1][0] if index + 1 < len(rows) else None
        boundary = following is None or (following.section, following.subject) != (row.section, row.subject)
        table.add_row(*styled, end_section=boundary)
    return table


# --- esbench run ---------------------------------------------------------------------------


def _console() -> Console:
    """Standard output; when it is not a terminal (a log, CI), wide enough for the tables."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=160)
    return console


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl-C and SIGTERM unwind the run (so a cluster started here is stopped), even where the
    shell started us with SIGINT ignored (a background job)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _read_experiment(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise click.UsageError(f'the path "{path}" does not exist')
    documents = [d for d in yaml.safe_load_all(file.read_text()) if d is not None]
    if len(documents) != 1:
        raise validation.Rejected(400, f"{path} holds {len(documents)} documents; esbench run takes one Experiment")
    return documents[0]


@click.command("run")
@click.argument("file", metavar="FILE.yaml")
@click.option("--es-url", help="Race an existing cluster at this URL (credentials from ES_USERNAME and "
                                "ES_PASSWORD or ES_PASSWORD_FILE).")
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False), help="CA certificate for --es-url.")
@click.option("--es-home", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Start Elasticsearch from this unpacked distribution instead of downloading one.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the Experiment with its status (as the operator writes it) to this JSON file.")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep Rally's home, the prepared track and the logs here (default: a temporary folder, "
                   "removed after a success).")
@click.option("--esrally", default=None, help="esrally executable (default: $ESBENCH_ESRALLY, esrally on PATH, "
                                              "or the repository's .venv-rally).")
@click.option("--target-timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for --es-url to answer.")
@click.option("--verbose", "-v", is_flag=True, help="Show the runner's and Rally's output as it comes.")
@click.pass_context
def run_command(ctx: click.Context, file: str, es_url: str | None, ca_file: str | None, es_home: Path | None,
                output: Path | None, work_dir: Path | None, esrally: str | None, target_timeout: float,
                verbose: bool) -> None:
    """Run the Experiment in FILE.yaml on this machine, with the runner the Rally Job uses.

    Elasticsearch: --es-url (an existing cluster), --es-home (an unpacked distribution), or by
    default Maven Central's integ-test-zip for spec.elasticsearch.version (downloaded once, sha1
    verified, cached in $ESBENCH_CACHE; a minimal distribution, see the note it prints), started
    on 127.0.0.1 with the spec's heap (default 1g) and stopped afterwards.

    The file is checked as the API server checks it (the CRD's schema and CEL rules) before
    anything starts. Exit status: 0 success, 2 usage, 10 InvalidSpec, 11 TargetUnreachable,
    12 TrackError, 13 RaceFailed, 14 RaceErrors, 15 ClusterNotReady, 16 RaceTimeout, 130 interrupted.
    """
    console = _console()
    errors = Console(stderr=True, highlight=False)
    if es_url and es_home:
        raise click.UsageError("use either --es-url or --es-home")
    if ca_file and not es_url:
        raise click.UsageError("--ca-file applies to --es-url only")
    try:
        stored = validation.admit(_read_experiment(file))
        spec = validation.parse_spec(stored)
    except (validation.Rejected, yaml.YAMLError) as error:
        message = error.message if isinstance(error, validation.Rejected) else f"{file}: not valid YAML: {error}"
        errors.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        ctx.exit(local.EXIT_INVALID_SPEC)
    if spec.target and not es_url:
        # Its cluster lives in Kubernetes, with credentials in Secrets this machine cannot read.
        raise click.UsageError("the Experiment's spec.target names an existing cluster: give its URL with --es-url "
                               "(credentials in ES_USERNAME and ES_PASSWORD or ES_PASSWORD_FILE)")
    username, password = credentials.from_env() if es_url else (None, None)
    options = local.Options(
        es_url=es_url, ca_file=ca_file, es_home=es_home, username=username, password=password,
        esrally=esrally or local.find_esrally(), work_dir=work_dir, target_timeout=target_timeout,
    )
    name = stored["metadata"]["name"]
    cluster = f"Elasticsearch {spec.elasticsearch.version}" if spec.elasticsearch else local.describe_url(es_url)
    console.print(f"[bold]esbench run[/] {escape(name)}: {escape(cluster)}, track {escape(spec.workload.track)}",
                  highlight=False)
    started = time.monotonic()
    try:
        with RichProgress(console, verbose) as progress, _interruptible():
            outcome = local.run(stored, spec, options, progress)
    except KeyboardInterrupt:
        errors.print("[red]interrupted[/]: race abandoned, Elasticsearch stopped")
        ctx.exit(local.EXIT_INTERRUPTED)
    print_document_summary(console, outcome.document)
    if output:
        output.write_text(json.dumps(outcome.document, indent=2) + "\n")
        console.print(f"results: {escape(str(output))}", highlight=False)
    if outcome.work_dir_kept:
        console.print(f"work dir (Rally's logs and race.json): {escape(str(outcome.work_dir))}", highlight=False)
    console.print(f"done in {_elapsed(time.monotonic() - started)}", highlight=False)
    ctx.exit(outcome.exit_code)


# --- esbench compare -----------------------------------------------------------------------


def _load(inputs: tuple[str, ...], namespace: str | None, context: str | None) -> list[compare.Entry]:
    try:
        return sources.load(list(inputs), namespace, context)
    except sources.SourceError as error:
        raise click.ClickException(str(error)) from error


_inputs = click.argument("inputs", nargs=-1, required=True, metavar="EXPERIMENT...")
_namespace = click.option("--namespace", "-n", default=None,
                          help="Namespace of Experiments named by name (default: the kube context's).")
_context = click.option("--context", default=None, help="kube context (default: the current one).")


@click.command("compare")
@_inputs
@_namespace
@_context
@click.option("--format", "format_", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def compare_command(inputs: tuple[str, ...], namespace: str | None, context: str | None, format_: str,
                    output: Path | None) -> None:
    """Compare Experiments: the first is the baseline, every other one a contender.

    EXPERIMENT is a result file (`esbench run --output`, `kubectl get esx NAME -o json|yaml`, a
    `kubectl get esx -o json` list, or Rally's race.json) or the name of an Experiment in the
    current kube context. Per task and metric: the values, the difference to the baseline
    (absolute and %), and whether that is better or worse (throughput: higher is better;
    latency, service time, times, sizes, errors, CPU: lower is better).
    """
    entries = _load(inputs, namespace, context)
    if len(entries) < 2:
        raise click.UsageError("compare needs at least two Experiments (a baseline and a contender)")
    comparison = compare.compare(entries)
    if format_ == "table":
        with open(output, "w") if output else contextlib.nullcontext(None) as file:
            console = Console(file=file, width=200) if file else _console()
            console.print(comparison_table(comparison))
            for warning in comparison.warnings:
                console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        return
    text = {"markdown": compare.to_markdown, "csv": compare.to_csv, "json": compare.to_json}[format_](comparison)
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text)


# --- esbench show --------------------------------------------------------------------------


@click.command("show")
@_inputs
@_namespace
@_context
def show_command(inputs: tuple[str, ...], namespace: str | None, context: str | None) -> None:
    """Print the results of each EXPERIMENT (a result file or an Experiment's name) as tables."""
    console = _console()
    for entry in _load(inputs, namespace, context):
        version = f", Elasticsearch {entry.cluster_version}" if entry.cluster_version else ""
        console.print(f"[bold]{escape(entry.label)}[/] ({entry.phase or 'unknown phase'}{version})", highlight=False)
        for table in results_tables(entry.results):
            console.print(table)
        declared = entry.spec.workload.contrasts if entry.spec else None
        for contrast in declared or []:
            rows = stats.to_wire(contrasts.compare_tasks([entry.results], contrast))
            title = f"Contrast {contrast.name} against task {contrast.baseline} (one race: no significance test)"
            console.print(statistics_table(title, "contrast", [contrast.baseline, *contrast.variants], rows))
        if entry.results.environment:
            console.print(f"environment: {escape(describe_environment(entry.results.environment))}", highlight=False)


# --- esbench sweep -------------------------------------------------------------------------

_VERDICT_STYLES = {"Better": "green", "Worse": "red", "Baseline": "bold"}


def sweep_tables(document: dict[str, Any]) -> list[Table]:
    """A sweep's cells, then its comparison: per task and metric, each cell's median with the
    confidence interval of the mean, and its change against the baseline with the p-value."""
    state = document.get("status") or {}
    cells = Table(title="Cells", title_justify="left")
    for column in ("cell", "values", "succeeded", "failed", "running", "pending", "cluster"):
        cells.add_column(column, justify="right" if column in ("succeeded", "failed", "running", "pending") else "left")
    for cell in state.get("cells", []):
        name = f"{cell['id']} (baseline)" if cell.get("baseline") else cell["id"]
        cells.add_row(name, escape(cell["label"]), *[str(cell.get(k, 0)) for k in ("succeeded", "failed", "running",
                                                                                  "pending")], cell.get("cluster", "–"))
    ids = [cell["id"] for cell in state.get("cells", [])]
    tables = [cells, statistics_table(f"Comparison against {state.get('baseline', '?')} (median [confidence interval "
                                      "of the mean]; change, p-value)", "task / scope", ids, state.get("comparison", []))]
    for contrast in state.get("contrasts", []):
        tasks = [contrast["baseline"], *sorted({c["cell"] for r in contrast["rows"] for c in r["cells"]} - {contrast["baseline"]})]
        title = f"{contrast['cell']}: contrast {contrast['name']}, against task {contrast['baseline']} over the cell's runs"
        tables.append(statistics_table(title, "contrast", tasks, contrast["rows"]))
    return tables


def statistics_table(title: str, subject: str, columns: list[str], rows: list[dict[str, Any]]) -> Table:
    """Rows in stats.to_wire form, one column per cell (or task, for a contrast)."""
    table = Table(title=escape(title), title_justify="left")
    for column in (subject, "metric", "unit", *columns):
        table.add_column(column, justify="right" if column in columns else "left", overflow="fold")
    for row in rows:
        by_cell = {c["cell"]: c for c in row["cells"]}
        texts = []
        for cell_id in columns:
            found = by_cell.get(cell_id)
            if found is None:
                texts.append(Text("–"))
                continue
            text = Text(f"{format_value(found['median'], None)} (n={found['n']})")
            if "ciLow" in found:
                text.append(f"\n[{format_value(found['ciLow'], None)}, {format_value(found['ciHigh'], None)}]", style="dim")
            if found.get("changePercent") is not None:
                p_value = f", p={found['pValue']:.3g}" if "pValue" in found else ""
                text.append(f"\n{found['changePercent']:+.1f}%{p_value}", style=_VERDICT_STYLES.get(found["verdict"], "dim"))
            if found.get("noisy"):
                text.append(" noisy", style="yellow")
            texts.append(text)
        table.add_row(row["subject"], row["metric"], row.get("unit") or "", *texts, end_section=True)
    return table


@click.command("sweep")
@click.argument("sweep", metavar="SWEEP")
@_namespace
@_context
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table", show_default=True)
def sweep_command(sweep: str, namespace: str | None, context: str | None, format_: str) -> None:
    """Show an ExperimentSweep: progress, cells, the comparison against the baseline, gates.

    SWEEP is the name of an ExperimentSweep in the current kube context, or a file written by
    `kubectl get esxs NAME -o yaml`. --format json prints status.comparison as it is.
    """
    try:
        document = sources.sweep(sweep, namespace, context)
    except sources.SourceError as error:
        raise click.ClickException(str(error)) from error
    state = document.get("status") or {}
    if format_ == "json":
        sys.stdout.write(json.dumps(state.get("comparison", []), indent=2) + "\n")
        return
    console = _console()
    progress = state.get("progress") or {}
    console.print(f"[bold]{escape(document['metadata']['name'])}[/]: {state.get('phase', 'not started')} "
                  f"({escape(state.get('reason', ''))}) {progress.get('summary', '')} runs finished; "
                  f"{escape(state.get('message', ''))}", highlight=False, soft_wrap=True)
    for table in sweep_tables(document):
        console.print(table)
    for gate in state.get("gates", []):
        colour = {"Passed": "green", "Failed": "red"}.get(gate["result"], "yellow")
        console.print(f"gate {escape(gate['task'])} {gate['metric']} (at most {gate['maxRegressionPercent']}% worse): "
                      f"[{colour}]{gate['result']}[/] {escape(gate['message'])}", highlight=False, soft_wrap=True)


# --- esbench report ------------------------------------------------------------------------


@click.command("report")
@_inputs
@_namespace
@_context
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a self-contained HTML report (charts inline) here.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a Markdown report here (charts as SVG files next to it).")
@click.option("--title", default=None, help="Report title.")
def report_command(inputs: tuple[str, ...], namespace: str | None, context: str | None, html_path: Path | None,
                   markdown_path: Path | None, title: str | None) -> None:
    """A report on one or more Experiments: configurations, results, charts.

    EXPERIMENT as for `esbench compare`; the first is the baseline of the results table.
    """
    if not html_path and not markdown_path:
        raise click.UsageError("say where to write the report: --html FILE and/or --markdown FILE")
    from esbench.analysis import html_report  # matplotlib: loaded only when a report is drawn

    entries = _load(inputs, namespace, context)
    report = html_report.build(entries, title=title)
    if html_path:
        html_path.write_text(html_report.to_html(report))
        click.echo(f"HTML report: {html_path}")
    if markdown_path:
        written = html_report.write_markdown(report, markdown_path)
        click.echo(f"Markdown report: {markdown_path} (+ {len(written)} chart files)")
