"""The user-facing commands: `esbench run`, `show`, `compare`, `report`, `sweep` and `profile`.

Thin: parse options, call local / validation / sources / compare / html_report, draw with rendering.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.markup import escape

from esbench.analysis import compare, contrasts, profiles
from esbench.analysis.verdicts import Verdicts
from esbench.api import models, validation
from esbench.cli import credentials, history, local, localsweep, rendering, sources
from esbench.history.localstore import LocalStore, default_path
from esbench.localnode import cpus, localcluster, profiler
from esbench.planning import grid

# --- esbench run ---------------------------------------------------------------------------


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


def _read_document(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise click.UsageError(f'the path "{path}" does not exist')
    documents = [d for d in yaml.safe_load_all(file.read_text()) if d is not None]
    if len(documents) != 1:
        raise validation.Rejected(400, f"{path} holds {len(documents)} documents; esbench run takes one Experiment "
                                       "or ExperimentSweep")
    return documents[0]


def _is_sweep(document: Any) -> bool:
    return isinstance(document, dict) and document.get("kind") == models.SWEEP_KIND


@click.command("run")
@click.argument("file", metavar="FILE.yaml")
@click.option("--es-url", help="Race an existing cluster at this URL (credentials from ES_USERNAME and "
                                "ES_PASSWORD or ES_PASSWORD_FILE).")
@click.option("--ca-file", type=click.Path(exists=True, dir_okay=False), help="CA certificate for --es-url.")
@click.option("--es-home", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Start Elasticsearch from this unpacked distribution instead of downloading one.")
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="Write the Experiment with its status (as the operator writes it) to this JSON file; for a sweep, "
                   "the folder of its runs and its status (default ./NAME), where a sweep run again goes on.")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep Rally's home, the prepared track and the logs here (default: a temporary folder, "
                   "removed after a success).")
@click.option("--esrally", default=None, help="esrally executable (default: $ESBENCH_ESRALLY, esrally on PATH, "
                                              "or the repository's .venv-rally).")
@click.option("--target-timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for --es-url to answer.")
@click.option("--share-cpus", is_flag=True,
              help="Let the local node and Rally share every CPU. By default, with two CPUs or more, Rally and "
                   "esbench get the first quarter of them (at least one) and the node the rest.")
@click.option("--no-history", is_flag=True,
              help="Do not record the results in the history (esbench history; default: $ESBENCH_HISTORY, else "
                   "$XDG_DATA_HOME/esbench/history.sqlite).")
@click.option("--verbose", "-v", is_flag=True, help="Show the runner's and Rally's output as it comes.")
@click.pass_context
def run_command(ctx: click.Context, file: str, es_url: str | None, ca_file: str | None, es_home: Path | None,
                output: Path | None, work_dir: Path | None, esrally: str | None, target_timeout: float,
                share_cpus: bool, no_history: bool, verbose: bool) -> None:
    """Run the Experiment or ExperimentSweep in FILE.yaml on this machine, with the runner the Rally Job uses.

    Elasticsearch: --es-url (an existing cluster), --es-home (an unpacked distribution), or by
    default Maven Central's integ-test-zip for spec.elasticsearch.version (downloaded once, sha1
    verified, cached in $ESBENCH_CACHE; a minimal distribution, see the note it prints), started
    on 127.0.0.1 with the spec's heap (default 1g) and stopped afterwards. With two CPUs or more,
    the node and Rally run on different CPUs (see --share-cpus).

    The file is checked as the API server checks it (the CRD's schema and CEL rules) before
    anything starts. Exit status: 0 success, 2 usage, 10 InvalidSpec, 11 TargetUnreachable,
    12 TrackError, 13 RaceFailed, 14 RaceErrors, 15 ClusterNotReady, 16 RaceTimeout, 17 ShardsUnassigned,
    130 interrupted.

    A sweep makes its runs one at a time in the operator's plan, on one local node per group of
    runs that share a cluster, and writes each run as it ends; run again on the same --output it
    goes on where it stopped. Exit status: 0 every run succeeded and every gate holds, 20 a gate
    failed, 21 runs failed after their retries, 10 InvalidSpec, 2 usage, 130 interrupted.
    """
    console = rendering.console()
    errors = Console(stderr=True, highlight=False)
    if es_url and es_home:
        raise click.UsageError("use either --es-url or --es-home")
    if ca_file and not es_url:
        raise click.UsageError("--ca-file applies to --es-url only")
    try:
        document = _read_document(file)
        if _is_sweep(document):
            stored = validation.admit(document, kind=models.SWEEP_KIND)
            spec = models.SweepSpec.model_validate(stored["spec"])
        else:
            stored = validation.admit(document)
            spec = validation.parse_spec(stored)
    except (validation.Rejected, yaml.YAMLError) as error:
        message = error.message if isinstance(error, validation.Rejected) else f"{file}: not valid YAML: {error}"
        errors.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
        ctx.exit(local.EXIT_INVALID_SPEC)
    template = models.ExperimentSpec.model_validate(spec.template) if isinstance(spec, models.SweepSpec) else spec
    if template.target and not es_url:
        # Its cluster lives in Kubernetes, with credentials in Secrets this machine cannot read.
        raise click.UsageError("the Experiment's spec.target names an existing cluster: give its URL with --es-url "
                               "(credentials in ES_USERNAME and ES_PASSWORD or ES_PASSWORD_FILE)")
    username, password = credentials.from_env() if es_url else (None, None)
    cpu_split = None if es_url or share_cpus else cpus.split(os.sched_getaffinity(0))
    if cpu_split:  # before any thread starts: they, esrally and its actors inherit it
        os.sched_setaffinity(0, cpu_split.rally)
    options = local.Options(
        es_url=es_url, ca_file=ca_file, es_home=es_home, username=username, password=password,
        esrally=esrally or local.find_esrally(), work_dir=work_dir, target_timeout=target_timeout,
        cpu_split=cpu_split, history=None if no_history else LocalStore(default_path()),
    )
    name = stored["metadata"]["name"]
    if isinstance(spec, models.SweepSpec):
        _run_sweep(ctx, stored, spec, options, output or Path(name), verbose)
    cluster = f"Elasticsearch {spec.elasticsearch.version}" if spec.elasticsearch else local.describe_url(es_url)
    console.print(f"[bold]esbench run[/] {escape(name)}: {escape(cluster)}, track {escape(spec.workload.track)}",
                  highlight=False)
    started = time.monotonic()
    try:
        with rendering.RichProgress(console, verbose) as progress, _interruptible():
            outcome = local.run(stored, spec, options, progress, profiles_to=output.with_suffix(".profiles") if output else None)
    except KeyboardInterrupt:
        errors.print("[red]interrupted[/]: race abandoned, Elasticsearch stopped")
        ctx.exit(local.EXIT_INTERRUPTED)
    rendering.print_document_summary(console, outcome.document)
    if output:
        output.write_text(json.dumps(outcome.document, indent=2) + "\n")
        console.print(f"results: {escape(str(output))}", highlight=False)
    if options.history and (recorded := options.history.remember(
            outcome.document, outcome.report.race_json if outcome.report else None)):
        console.print(escape(recorded), highlight=False)
    if outcome.work_dir_kept:
        console.print(f"work dir (Rally's logs and race.json): {escape(str(outcome.work_dir))}", highlight=False)
    console.print(f"done in {rendering.elapsed(time.monotonic() - started)}", highlight=False)
    ctx.exit(outcome.exit_code)


def _run_sweep(ctx: click.Context, stored: dict[str, Any], spec: models.SweepSpec, options: local.Options,
               folder: Path, verbose: bool) -> None:
    console, errors = rendering.console(), Console(stderr=True, highlight=False)
    name = stored["metadata"]["name"]
    console.print(f"[bold]esbench run[/] sweep {escape(name)} into {escape(str(folder))}", highlight=False)
    started = time.monotonic()
    try:
        with rendering.RichProgress(console, verbose) as progress, _interruptible():
            outcome = localsweep.run(stored, spec, options, progress, folder)
    except grid.InvalidSweep as error:
        errors.print(f"[red]error:[/] {escape(str(error))}", highlight=False, soft_wrap=True)
        ctx.exit(local.EXIT_INVALID_SPEC)
    except localsweep.FolderInUse as error:
        raise click.UsageError(str(error)) from error
    except KeyboardInterrupt:
        errors.print(f"[red]interrupted[/]: the runs that ended are in {folder}; run the same command again to go on")
        ctx.exit(local.EXIT_INTERRUPTED)
    rendering.print_sweep(console, outcome.document)
    console.print(f"{outcome.made} run(s) made now; results in {escape(str(folder))}", highlight=False)
    console.print(f"done in {rendering.elapsed(time.monotonic() - started)}", highlight=False)
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
_paired = click.option(
    "--paired", is_flag=True,
    help="For a sweep's repeated runs: compare each run with the baseline's run of the same round (a paired t "
         "interval), as a sweep with statistics.paired does.")
_within = click.option(
    "--within", "within", multiple=True, metavar="FIELD",
    help="For repeated runs: each value of this spec field (e.g. elasticsearch.resources) has a baseline of its own, "
         "the first group with it, as a sweep's compareWithin does (repeatable).")


@click.command("compare")
@_inputs
@_namespace
@_context
@click.option("--format", "format_", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
@click.option("--repeated", is_flag=True,
              help="The Experiments are repetitions: those with the same spec form a group, the first group is the "
                   "baseline, and each other group is compared with it as a sweep compares its cells.")
@click.option("--primary", "primary", multiple=True, metavar="TASK:METRIC",
              help="With --repeated: a primary question (corrected by Holm; the rest by Benjamini-Hochberg).")
@_paired
@_within
def compare_command(inputs: tuple[str, ...], namespace: str | None, context: str | None, format_: str,
                    output: Path | None, repeated: bool, primary: tuple[str, ...], paired: bool,
                    within: tuple[str, ...]) -> None:
    """Compare Experiments: the first is the baseline, every other one a contender.

    EXPERIMENT is a result file (`esbench run --output`, `kubectl get esx NAME -o json|yaml`, a
    `kubectl get esx -o json` list, or Rally's race.json), the folder `esbench run SWEEP.yaml`
    writes, or the name of an Experiment in the current kube context. Per task and metric: the
    values and the difference to the baseline (absolute and %): run against run, a difference,
    never a verdict. With --repeated, runs of one spec are repetitions, and each group gets the
    sweep's statistics: the change with its interval, raw and adjusted p-values, a verdict.
    """
    entries = _load(inputs, namespace, context)
    if len(entries) < 2:
        raise click.UsageError("compare needs at least two Experiments (a baseline and a contender)")
    if (paired or within) and not repeated:
        raise click.UsageError("--paired and --within compare repetitions: give --repeated too")
    if repeated:
        sweep = _sweep_verdicts(inputs, primary, paired, within)
        _compare_repeated(entries, primary, format_, output, paired, within, sweep)
        return
    comparison = compare.compare(entries)
    if format_ == "table":
        with open(output, "w") if output else contextlib.nullcontext(None) as file:
            console = Console(file=file, width=200) if file else rendering.console()
            console.print(rendering.comparison_table(comparison))
            rendering.print_warnings(console, comparison.warnings)
        return
    text = {"markdown": compare.to_markdown, "csv": compare.to_csv, "json": compare.to_json}[format_](comparison)
    if output:
        output.write_text(text)
    else:
        sys.stdout.write(text)


def _questions(primary: tuple[str, ...]) -> list[tuple[str, str]]:
    """--primary TASK:METRIC options as (task, metric) pairs."""
    questions = []
    for question in primary:
        task, _, metric = question.rpartition(":")
        if not task or metric not in models.METRIC_NAMES:
            raise click.UsageError(f"--primary {question}: give TASK:METRIC, METRIC one of {', '.join(models.METRIC_NAMES)}")
        questions.append((task, metric))
    return questions


def _sweep_verdicts(inputs: tuple[str, ...], primary: tuple[str, ...], paired: bool,
                    within: tuple[str, ...]) -> Verdicts | None:
    """What the sweep said, when the one input is a sweep's folder: compared as the sweep compared
    (its baseline and its spec's statistics), not the first group against the rest."""
    try:
        document = sources.sweep_of_folder(inputs[0]) if len(inputs) == 1 else None
    except sources.SourceError as error:
        raise click.ClickException(str(error)) from error
    sweep = Verdicts.of_sweep(document) if document else None
    if sweep and (primary or paired or within):
        raise click.UsageError(f"{inputs[0]} is sweep {sweep.sweep}'s folder: it is compared as the sweep did, "
                               "with its spec's statistics; --primary, --paired and --within are for other runs")
    return sweep


def _compare_repeated(entries: list[compare.Entry], primary: tuple[str, ...], format_: str,
                      output: Path | None, paired: bool, within: tuple[str, ...], sweep: Verdicts | None) -> None:
    if format_ not in ("table", "json"):
        raise click.UsageError("--repeated prints a table or JSON")
    try:
        groups = compare.repetition_groups(entries)
    except compare.NotComparable as error:
        raise click.UsageError(str(error)) from error
    if len(groups) < 2:
        raise click.UsageError("--repeated needs runs of at least two specs: every run given has the same spec")
    if sweep is None:
        try:
            sweep = Verdicts.of_groups(groups, _questions(primary), paired, within)
        except compare.NotComparable as error:
            raise click.UsageError(str(error)) from error
    warnings = compare.measurement_warnings(entries)
    if format_ == "json":
        text = json.dumps({"groups": {g.name: [e.label for e in g.entries] for g in groups},
                           "corrections": sweep.corrections, "comparison": sweep.rows, "warnings": warnings}, indent=2)
        output.write_text(text + "\n") if output else sys.stdout.write(text + "\n")
        return
    with open(output, "w") if output else contextlib.nullcontext(None) as file:
        console = Console(file=file, width=200) if file else rendering.console()
        for group in groups:
            console.print(f"{group.name}: {', '.join(escape(e.label) for e in group.entries)}", highlight=False,
                          soft_wrap=True)
        console.print(rendering.comparison_statistics(", ".join(sweep.baselines), sweep.corrections, sweep.rows))
        rendering.print_warnings(console, warnings)


# --- esbench show --------------------------------------------------------------------------


@click.command("show")
@_inputs
@_namespace
@_context
def show_command(inputs: tuple[str, ...], namespace: str | None, context: str | None) -> None:
    """Print the results of each EXPERIMENT (a result file or an Experiment's name) as tables."""
    console = rendering.console()
    for entry in _load(inputs, namespace, context):
        version = f", Elasticsearch {entry.cluster_version}" if entry.cluster_version else ""
        console.print(f"[bold]{escape(entry.label)}[/] ({entry.phase or 'unknown phase'}{version})", highlight=False)
        for table in rendering.results_tables(entry.results):
            console.print(table)
        for found in contrasts.to_wire([entry.results], entry.spec.workload) if entry.spec else []:
            title = (f"Contrast {found['name']} against task {found['baseline']} (one race: differences, no interval "
                     "and no verdict)")
            console.print(rendering.statistics_table(title, "contrast", found["rows"], contender="task"))
        if entry.results.environment:
            console.print(f"environment: {escape(rendering.describe_environment(entry.results.environment))}", highlight=False)
        rendering.print_warnings(console, compare.measurement_warnings([entry]))


# --- esbench sweep -------------------------------------------------------------------------


@click.command("sweep")
@click.argument("sweep", metavar="SWEEP")
@_namespace
@_context
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--all", "every_row", is_flag=True,
              help="Every comparison, also the exploratory ones without a Better or Worse.")
def sweep_command(sweep: str, namespace: str | None, context: str | None, format_: str, every_row: bool) -> None:
    """Show an ExperimentSweep: the comparison against the baseline, gates, order effect, cells.

    SWEEP is the name of an ExperimentSweep in the current kube context, a file written by
    `kubectl get esxs NAME -o yaml`, or the folder `esbench run SWEEP.yaml` writes. The table
    shows the primary questions and the exploratory comparisons with a Better or Worse (--all:
    every one). --format json prints status.comparison as it is.
    """
    try:
        document = sources.sweep(sweep, namespace, context)
    except sources.SourceError as error:
        raise click.ClickException(str(error)) from error
    state = document.get("status") or {}
    if format_ == "json":
        sys.stdout.write(json.dumps(state.get("comparison", []), indent=2) + "\n")
        return
    rendering.print_sweep(rendering.console(), document, every_row)


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
@click.option("--primary", "primary", multiple=True, metavar="TASK:METRIC",
              help="For repeated runs: a primary question (corrected by Holm; the rest by Benjamini-Hochberg).")
@_paired
@_within
def report_command(inputs: tuple[str, ...], namespace: str | None, context: str | None, html_path: Path | None,
                   markdown_path: Path | None, title: str | None, primary: tuple[str, ...], paired: bool,
                   within: tuple[str, ...]) -> None:
    """A report on one or more Experiments: configurations, results, charts.

    EXPERIMENT as for `esbench compare`; the first is the baseline of the results table. When
    some Experiments share a spec (repetitions: a sweep's output folder, or `esbench run` made
    again), the report opens with the verdicts of those groups, as `esbench compare --repeated`
    gives them, and charts every run with each group's interval. A report of one sweep's folder
    says what the sweep said (its status.comparison: its baseline, statistics and primary
    questions), titled with its name. The HTML report links the history page of each
    configuration the local history holds several races of (esbench history).
    """
    if not html_path and not markdown_path:
        raise click.UsageError("say where to write the report: --html FILE and/or --markdown FILE")
    from esbench.analysis import html_report  # matplotlib: loaded only when a report is drawn

    entries = _load(inputs, namespace, context)
    sweep = _sweep_verdicts(inputs, primary, paired, within)
    if not entries:
        raise click.ClickException(f"{', '.join(inputs)}: no run with results to report on")
    try:
        report = html_report.build(entries, title=title, primary=_questions(primary), paired=paired, within=within,
                                   sweep=sweep)
    except compare.NotComparable as error:
        raise click.UsageError(str(error)) from error
    for path in (html_path, markdown_path):
        if path:
            path.parent.mkdir(parents=True, exist_ok=True)  # a folder of its own, as the studies keep theirs
    if html_path:
        report.history = history.pages_for(entries, html_path)
        html_path.write_text(html_report.to_html(report, html_path.parent))
        click.echo(f"HTML report: {html_path}" + (f" (+ {len(report.history)} history page(s))" if report.history else ""))
    if markdown_path:
        written = html_report.write_markdown(report, markdown_path)
        click.echo(f"Markdown report: {markdown_path} (+ {len(written)} chart files)")


# --- esbench profile -----------------------------------------------------------------------


def _task_stacks(path: Path, task: str) -> tuple[compare.Entry, Path]:
    """The Experiment in the result file at path, and the file of task's collapsed stacks."""
    try:
        (entry,) = sources.from_file(path)
    except ValueError as error:
        raise click.UsageError(f"{path}: holds more than one Experiment") from error
    except sources.SourceError as error:
        raise click.ClickException(str(error)) from error
    recording = entry.results.profile
    found = next((t for t in entry.results.tasks if t.task == task), None)
    if recording is None:
        raise click.ClickException(f"{path}: the run was not profiled (spec.profile)")
    if recording.folder is None:  # a run on Kubernetes
        raise click.ClickException(f"{path}: the stacks are in ConfigMap {recording.config_map} of the Experiment's "
                                   "namespace, not beside the file (docs/profiles.md)")
    if found is None or found.profile is None or found.profile.stacks is None:
        profiled = ", ".join(t.task for t in entry.results.tasks if t.profile)
        raise click.ClickException(f"{path}: no profile of task {task} (profiled: {profiled or 'none'})")
    return entry, path.parent / recording.folder / found.profile.stacks  # an absolute folder stays as it is


@click.command("profile")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
                metavar="[BASELINE] RUN")
@click.option("--task", required=True, help="The task whose profiles are compared.")
@click.option("--baseline-task", default=None, help="The baseline's task, if another (default: --task).")
@click.option("--top", default=15, show_default=True, help="How many frames to list.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write async-profiler's differential flame graph here.")
def profile_command(runs: tuple[Path, ...], task: str, baseline_task: str | None, top: int,
                    html_path: Path | None) -> None:
    """How a task's profile differs between two profiled runs (result files of `esbench run` with
    spec.profile), or between two tasks of one run (--baseline-task): the frames whose share of
    the samples moved most. Shares are of each profile's own samples, so windows of different
    lengths compare."""
    if len(runs) > 2:
        raise click.UsageError("give one run (and --baseline-task) or two runs")
    baseline_task = baseline_task or task
    if len(runs) == 1 and baseline_task == task:
        raise click.UsageError("one run: say which of its tasks is the baseline with --baseline-task")
    _, baseline_file = _task_stacks(runs[0], baseline_task)
    entry, current_file = _task_stacks(runs[-1], task)
    baseline, current = (profiles.parse(gzip.decompress(f.read_bytes()).decode()) for f in (baseline_file, current_file))
    console = rendering.console()
    console.print(f"{escape(task)} in {escape(str(runs[-1]))}: {current.samples} samples, against "
                  f"{escape(baseline_task)} in {escape(str(runs[0]))}: {baseline.samples} samples", highlight=False)
    console.print(rendering.frame_changes_table(profiles.changes(baseline, current, top)))
    if html_path:
        java = localcluster.java_home(entry.cluster_version or entry.results.distribution_version or "9.0.0")
        with tempfile.TemporaryDirectory() as folder:
            scaled, plain = Path(folder) / "baseline.collapsed", Path(folder) / "current.collapsed"
            scaled.write_text(profiles.to_text(baseline, current.samples))
            plain.write_text(profiles.to_text(current))
            try:
                profiler.diff_flame_graph(java, scaled, plain, html_path)
            except RuntimeError as error:
                raise click.ClickException(str(error)) from error
        console.print(f"differential flame graph: {escape(str(html_path))} (the baseline scaled to "
                      f"{current.samples} samples)", highlight=False)
