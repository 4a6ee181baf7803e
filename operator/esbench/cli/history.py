"""`esbench history`: the races this machine made or was given, as series per configuration, and
their change points.

`esbench run` and local sweeps record each measured run here as it ends (LocalStore.remember);
`history add` records result files made elsewhere (`esbench run -o`, a sweep's folder,
`kubectl get esx -o yaml`).
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from esbench.analysis import changepoints, compare, history_page
from esbench.api import models
from esbench.cli import localsweep, rendering, sources
from esbench.history import records
from esbench.history.localstore import LocalStore, UnknownConfiguration, default_path

DEFAULT_METRIC = "service_time.p50"


@click.group("history")
@click.option("--store", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The history's SQLite file (default: $ESBENCH_HISTORY, else "
                   "$XDG_DATA_HOME/esbench/history.sqlite).")
@click.pass_context
def history_command(ctx: click.Context, path: Path | None) -> None:
    """The results of every run recorded on this machine, as series, and where they changed."""
    ctx.obj = LocalStore(path or default_path())


@history_command.command("add")
@click.argument("inputs", nargs=-1, required=True, metavar="FILE|FOLDER...")
@click.pass_obj
def add_command(store: LocalStore, inputs: tuple[str, ...]) -> None:
    """Record result files: `esbench run -o` output, a local sweep's folder (its runs and the
    sweep), or Experiments and sweeps as `kubectl get esx|esxs [NAME] -o yaml|json` print them.
    Races recorded before are left as they are; failed runs and warm-up runs are not recorded."""
    console = rendering.console()
    added = known = skipped = sweeps = 0
    for argument in inputs:
        path = Path(argument)
        runs = sources.sweep_runs(path)
        sweep = [path / localsweep.SWEEP_FILE] if (path / localsweep.SWEEP_FILE).is_file() else []
        files = [*runs, *sweep] if runs is not None else [path] if path.is_file() else None
        if files is None:
            raise click.ClickException(f"{argument}: no such file, and not a sweep's folder")
        for file in files:
            try:
                documents = sources.documents(file)
            except sources.SourceError as error:
                raise click.ClickException(str(error)) from error
            for document in documents:
                if document.get("kind") == models.SWEEP_KIND:
                    store.add_sweep(document)
                    sweeps += 1
                    continue
                try:
                    record = records.record(document, str(file))
                except records.NotRecordable as error:
                    console.print(f"[dim]skipped: {escape(str(error))}[/]")
                    skipped += 1
                    continue
                if store.add(record):
                    added += 1
                else:
                    known += 1
    console.print(f"{added} race(s) recorded, {known} recorded before, {skipped} skipped, {sweeps} sweep(s); "
                  f"history: {escape(str(store.path))}")


@history_command.command("list")
@click.pass_obj
def list_command(store: LocalStore) -> None:
    """The configurations with their races, the most recently run first."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("configuration", "track", "races", "first", "last", "last experiment"):
        table.add_column(column, justify="right" if column == "races" else "left")
    for found in store.configurations():
        table.add_row(found.id, escape(found.track), str(found.races), found.first, found.last,
                      escape(found.last_experiment))
    rendering.console().print(table)


def _change_text(point: changepoints.ChangePoint, metric: compare.Metric | None) -> str:
    change = point.change_percent
    shown = f"{change:+.1f} %" if change is not None else "from 0"
    return f"{point.kind(metric)} {shown} (mean {point.mean_before:.4g} -> {point.mean_after:.4g}, p {point.pvalue:.2g})"


@history_command.command("show")
@click.argument("configuration")
@click.option("--task", "tasks", multiple=True, help="A task (or cluster, nodes); default: every one with the metric.")
@click.option("--metric", default=DEFAULT_METRIC, show_default=True,
              help="A metric key as `esbench compare --format csv` names it.")
@click.option("--max-pvalue", type=float, default=changepoints.MAX_PVALUE, show_default=True,
              help="A change point's t-test must reach this.")
@click.option("--min-magnitude", type=float, default=0.0, show_default=True,
              help="A change point must also change the mean by this fraction (0.05: 5 %).")
@click.option("--format", "format_", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the history page here instead: a chart of each series, its change points, every run.")
@click.pass_obj
def show_command(store: LocalStore, configuration: str, tasks: tuple[str, ...], metric: str, max_pvalue: float,
                 min_magnitude: float, format_: str, html_path: Path | None) -> None:
    """One metric of a CONFIGURATION (an id from `history list`, or its first characters) over its
    races, and its change points: Apache Otava's E-divisive means with a t-test (scripts/otava-env.sh)."""
    try:
        configuration = store.resolve(configuration)
        python = changepoints.otava_python()
    except (UnknownConfiguration, changepoints.OtavaMissing) as error:
        raise click.ClickException(str(error)) from error
    known = compare.metric_named(metric)
    found = []
    for subject in tasks or store.subjects(configuration):
        runs = store.series(configuration, subject, metric)
        if runs:
            points = changepoints.find([r.value for r in runs], python, max_pvalue=max_pvalue,
                                       min_magnitude=min_magnitude)
            found.append(history_page.Series(subject, runs[0].unit, runs, points))
    if not found:
        raise click.ClickException(f"no {metric} for {', '.join(tasks) or 'any task'} in configuration {configuration}")
    if html_path:
        html_path.write_text(history_page.to_html(configuration, metric, found, store.latest_spec(configuration),
                                                  max_pvalue))
        click.echo(f"history page: {html_path}")
    elif format_ == "json":
        click.echo(json.dumps({"configuration": configuration, "metric": metric, "series": [
            {"subject": s.subject,
             "points": [{"raceId": r.race_id, "raceTimestamp": r.race_timestamp, "experiment": r.experiment,
                         "value": r.value, "unit": r.unit} for r in s.runs],
             "changePoints": [{"index": c.index, "raceId": s.runs[c.index].race_id, "kind": c.kind(known),
                               "meanBefore": c.mean_before, "meanAfter": c.mean_after,
                               "changePercent": c.change_percent, "pvalue": c.pvalue} for c in s.change_points]}
            for s in found]}, indent=2))
    else:
        _print_series(found, metric, configuration)


def _print_series(found: list[history_page.Series], metric: str, configuration: str) -> None:
    console, known = rendering.console(), compare.metric_named(metric)
    for series in found:
        at = {c.index: c for c in series.change_points}
        table = Table(title=escape(f"{series.subject}: {metric}, configuration {configuration}"), title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("#", "race started", "experiment", "value", "change point"):
            table.add_column(column, justify="right" if column in ("#", "value") else "left")
        for index, run in enumerate(series.runs):
            table.add_row(str(index), run.race_timestamp, escape(run.experiment),
                          compare.format_value(run.value, series.unit),
                          _change_text(at[index], known) if index in at else "",
                          style="bold" if index in at else None)
        console.print(table)
